/* t_jit.c: every kernel variant compiles with NVRTC for the architectures we target (no GPU
 * needed: CI runs this), the cache returns the same cubin, rebuilds a damaged entry and says
 * when it cannot be written, and without a device the GPU runtime reports that cleanly. */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "gpu_plan.h"
#include "config.h"
#include "jit.h"
#include "test.h"

/* The kinds of layers the converter writes (codec, scale kind, log2 k16 steps per group,
 * zero points), as the runtime specialises its modules. */
#define NKINDS 11
static const char *const kinds[NKINDS][4] = {
    {"1", "1", "2", "0"}, {"1", "2", "1", "1"}, {"2", "0", "2", "0"}, {"3", "0", "0", "1"},
    {"3", "1", "2", "0"}, {"4", "3", "0", "0"}, {"4", "4", "1", "0"}, {"5", "4", "1", "0"},
    {"6", "0", "2", "0"}, {"6", "1", "2", "0"},
    {"6", "5", "2", "0"}}; /* FP8 with F32 divisors (GPTQModel's inverse scales) */

/* The four NVRTC options of kinds[i]: -DHC_CODEC=.. -DHC_SK=.. -DHC_LGS=.. -DHC_ZP=.. */
static void kind_options(int i, char o[4][24]) {
    static const char *const names[] = {"HC_CODEC", "HC_SK", "HC_LGS", "HC_ZP"};
    for (int j = 0; j < 4; j++) snprintf(o[j], sizeof o[j], "-D%s=%s", names[j], kinds[i][j]);
}

static void test_every_kernel_compiles(void) {
    int maj = 0, min = 0;
    hc_err err = {0};
    CHECK_EQ_INT(hc__jit_version(&maj, &min, &err), HC_OK);
    if (err.code) {
        CHECK_FAIL_("%s", err.msg);
        return;
    }
    /* the builds the runtime asks for: tile_gemm.cu, and tile_mma.cu for each kind of layer the
     * synthetic and converted layers have (codec, scale kind, group, zero points: every module
     * takes all four), on sm_90a and sm_80; and the bench-only measurement builds
     * (-DHC_GEMV_DIAG=1, 2, 3) still compile. HC_TEST_JIT_QUICK (the sanitizer run) builds three:
     * tile_gemm.cu, int4 on sm_90a, folded MXFP4 on sm_80. */
    typedef struct {
        const char *file, *arch, *opt[5];
    } build;
    static const char *const diag[] = {"-DHC_GEMV_DIAG=1", "-DHC_GEMV_DIAG=2", "-DHC_GEMV_DIAG=3"};
    enum { NDIAG = sizeof diag / sizeof diag[0], NBUILDS = 2 + 2 * NKINDS + NDIAG + 2 + 2 * NKINDS };
    build list[NBUILDS];
    int nb = 0;
    static const char *const archs[] = {"sm_90a", "sm_80"};
    static char kopt[NKINDS][4][24];
    for (int i = 0; i < NKINDS; i++) kind_options(i, kopt[i]);
    for (int a = 0; a < 2; a++) {
        list[nb++] = (build){"tile_gemm.cu", archs[a], {"--fmad=false"}};
        for (int i = 0; i < NKINDS; i++)
            list[nb++] = (build){"tile_mma.cu", archs[a], {kopt[i][0], kopt[i][1], kopt[i][2], kopt[i][3]}};
    }
    for (int i = 0; i < NDIAG; i++)
        list[nb++] = (build){"tile_mma.cu", "sm_90a", {kopt[0][0], kopt[0][1], kopt[0][2], kopt[0][3], diag[i]}};
    /* the MoE modules: routing once per device, the grouped GEMMs per kind */
    for (int a = 0; a < 2; a++) {
        list[nb++] = (build){"moe_route.cu", archs[a], {NULL}};
        for (int i = 0; i < NKINDS; i++)
            list[nb++] = (build){"moe_gemm.cu", archs[a], {kopt[i][0], kopt[i][1], kopt[i][2], kopt[i][3]}};
    }
    CHECK_EQ_INT(nb, NBUILDS);
    if (getenv("HC_TEST_JIT_QUICK")) {
        list[2] = list[2 + NKINDS + 7]; /* kinds[7] (folded MXFP4) for sm_80 */
        list[3] = list[2 + 2 * NKINDS + NDIAG];     /* moe_route.cu for sm_90a */
        list[4] = list[2 + 2 * NKINDS + NDIAG + 1]; /* moe_gemm.cu, kinds[0], sm_90a */
        nb = 5;
    }
    hc_status st[NBUILDS];
    size_t size[NBUILDS] = {0};
    char msg[NBUILDS][160];
    hc__jit_set_cache(false);
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < nb; i++) {
        int no = 0;
        while (no < 5 && list[i].opt[no]) no++;
        void *cubin = NULL;
        hc_err e = {0};
        st[i] = hc__jit_compile(list[i].file, list[i].arch, list[i].opt, no, &cubin, &size[i], &e);
        snprintf(msg[i], sizeof msg[i], "%s", e.msg);
        if (st[i] == HC_OK && (size[i] < 1000 || memcmp(cubin, "\x7f" "ELF", 4))) st[i] = HC_INTERNAL;
        free(cubin);
    }
    hc__jit_set_cache(true);
    int built = 0;
    for (int i = 0; i < nb; i++) {
        if (st[i]) {
            char opts[160] = "";
            for (int j = 0; j < 5 && list[i].opt[j]; j++)
                snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " %s", list[i].opt[j]);
            CHECK_FAIL_("%s%s for %s: %s", list[i].file, opts, list[i].arch, msg[i]);
        }
        built += st[i] == HC_OK;
    }
    printf("     (NVRTC %d.%d: %d kernel builds)\n", maj, min, built);
    CHECK_EQ_INT(built, nb);
}

/* A tile_mma.cu module is built for one kind of layer: without the four kind options (the
 * generic module of earlier versions) or with a codec layout_core.h does not number, NVRTC
 * refuses it at the preprocessor, and the message says which options are wanted. */
static void test_kind_options_required(void) {
    static const char *const generic[] = {"-DHC_CODEC=1"};
    static const char *const nocodec[] = {"-DHC_CODEC=7", "-DHC_SK=1", "-DHC_LGS=2", "-DHC_ZP=0"};
    static const char *const biggroup[] = {"-DHC_CODEC=1", "-DHC_SK=1", "-DHC_LGS=3", "-DHC_ZP=0"};
    static const struct {
        const char *const *opts;
        int n;
        const char *want;
    } cases[] = {{generic, 1, "-DHC_CODEC, -DHC_SK, -DHC_LGS and -DHC_ZP are all required"},
                 {nocodec, 4, "-DHC_CODEC is not one of layout_core.h's HC_CODEC_* numbers"},
                 {biggroup, 4, "-DHC_LGS (log2 of the k16 steps per scale group) must be 0, 1 or 2"}};
    for (int i = 0; i < 3; i++) {
        void *cubin = NULL;
        size_t size = 0;
        char *log = NULL;
        hc_err e = {0};
        CHECK_EQ_INT(hc__jit_compile_log("tile_mma.cu", "sm_80", cases[i].opts, cases[i].n, &cubin,
                                        &size, &log, &e),
                     HC_INTERNAL);
        CHECK(cubin == NULL);
        CHECK_CONTAINS(e.msg, "does not compile");
        CHECK_CONTAINS(e.msg, cases[i].want);
        free(cubin), free(log);
    }
}

/* Spill stores ptxas reports for entry function fn in an NVRTC log (-1: not in the log). */
static long spill_stores(const char *log, const char *fn) {
    char key[96];
    snprintf(key, sizeof key, "Compiling entry function '%s'", fn);
    const char *at = strstr(log, key), *sp = at ? strstr(at, " bytes spill stores") : NULL;
    if (!sp) return -1;
    while (sp > at && sp[-1] >= '0' && sp[-1] <= '9') sp--;
    return strtol(sp, NULL, 10);
}

/* The registers ptxas gave entry function fn, from its -v log (-1: not found). */
static long used_registers(const char *log, const char *fn) {
    char key[96];
    snprintf(key, sizeof key, "Compiling entry function '%s'", fn);
    const char *at = strstr(log, key), *u = at ? strstr(at, "Used ") : NULL;
    return u ? strtol(u + 5, NULL, 10) : -1;
}

/* The skinny kernels move registers with setmaxnreg (kernels/gemm/skinny_gemm.cuh: the
 * producer warpgroup down to 24, the four consumer warpgroups up to 112): the block must start
 * with at least what they end with, 128 x 24 + 512 x 112 registers over 640 threads, or the
 * increase waits for ever. A message for the first kernel of names[] that starts with fewer. */
static bool skinny_registers_ok(const char *log, const char *const *names, int n, char *why,
                                size_t cap) {
    for (int i = 0; i < n; i++) {
        long r = used_registers(log, names[i]);
        if (r * HC_SKINNY_THREADS < 128 * 24 + 512 * 112) {
            snprintf(why, cap, "%s: %ld registers a thread, under the %d its setmaxnreg moves need",
                     names[i], r, (128 * 24 + 512 * 112 + HC_SKINNY_THREADS - 1) / HC_SKINNY_THREADS);
            return false;
        }
    }
    return true;
}

/* The grouped MoE kernels of the same kind (moe_gemm.cu, opts as tile_mma.cu's): no wgmma
 * serialised, no spill in the warp-specialised, skinny and 8-row kernels; the skinny ones'
 * registers enough for their setmaxnreg moves (else a hang). (v70's eight stripes a block at
 * 24 tokens spilled with 8-bit codes; v72's six do not.) */
static bool moe_hot_ok(const char *const *opts, const char *tile_log, char *why, size_t cap) {
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    hc_err e = {0};
    bool ok = true;
    if (!tile_log) return true; /* (the caller reports a missing log) */
    if (hc__jit_compile_log("moe_gemm.cu", "sm_90a", opts, 5, &cubin, &size, &log, &e)) {
        snprintf(why, cap, "moe_gemm.cu does not compile: %s", e.msg);
        ok = false;
    } else if (!log || strstr(log, "C7514") || strstr(log, "Potential Performance Loss")) {
        snprintf(why, cap, "moe_gemm.cu: %s",
                 log ? "ptxas serialises wgmma (C7514/C7520)" : "no NVRTC log");
        ok = false;
    } else {
        static const char *const hot[] = {"hc_moe_ws256",    "hc_moe_ws128",   "hc_moe_ws64",
                                          "hc_moe_gemv_t8",  "hc_moe_skinny32",
                                          "hc_moe_skinny64", "hc_moe_gemv_w8",
                                          "hc_moe_gemv_t16", "hc_moe_ws96",
                                          "hc_moe_ws256r",   "hc_moe_ws288",
                                          "hc_moe_ws96w",    "hc_moe_ws24x6",
                                          "hc_moe_ws80r",    "hc_moe_ws80d",
                                          "hc_moe_ws160"};
        for (int h = 0; h < (int)(sizeof hot / sizeof hot[0]) && ok; h++) {
            long sp = spill_stores(log, hot[h]);
            if (sp != 0) {
                snprintf(why, cap, "%s: %ld bytes spill stores", hot[h], sp);
                ok = false;
            }
        }
        if (ok) ok = skinny_registers_ok(log, hot + 4, 2, why, cap);
        if (ok) ok = skinny_registers_ok(log, hot + 10, 1, why, cap);
    }
    free(log), free(cubin);
    return ok;
}

/* The performance-critical kernels keep what the measurements in bench/NOTES.md rely on, for
 * every kind of layer on sm_90a: ptxas serialises no wgmma (its note C7514: an accumulator read
 * between a wgmma and its wait) and the M <= 16, skinny and warp-specialised large-M kernels
 * do not spill. A change that loses either fails here, without a GPU. */
static void test_hot_kernels_do_not_regress(void) {
    int n = getenv("HC_TEST_JIT_QUICK") ? 1 : NKINDS, bad[NKINDS] = {0};
    char why[NKINDS][200];
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < n; i++) {
        char o[4][24];
        const char *opts[5];
        kind_options(i, o);
        for (int j = 0; j < 4; j++) opts[j] = o[j];
        opts[4] = "--ptxas-options=-v";
        void *cubin = NULL;
        size_t size = 0;
        char *log = NULL;
        hc_err e = {0};
        why[i][0] = 0;
        if (hc__jit_compile_log("tile_mma.cu", "sm_90a", opts, 5, &cubin, &size, &log, &e)) {
            snprintf(why[i], sizeof why[i], "does not compile: %s", e.msg);
        } else if (!moe_hot_ok(opts, log, why[i], sizeof why[i])) {
            /* (why says it) */
        } else if (!log) {
            snprintf(why[i], sizeof why[i], "no NVRTC log");
        } else if (strstr(log, "C7514") || strstr(log, "Potential Performance Loss")) {
            snprintf(why[i], sizeof why[i], "ptxas serialises wgmma (C7514)");
        } else {
            static const char *const hot[] = {
                "hc_wgmma_gemm256",  "hc_wgmma_gemm128",  "hc_wgmma_gemm64",  "hc_mma_gemv_t8",
                "hc_mma_gemv_t1",    "hc_skinny_gemm16",  "hc_skinny_gemm32", "hc_skinny_gemm64",
                "hc_skinny_gemm16q", "hc_skinny_gemm32q", "hc_skinny_gemm64q", "hc_mma_gemv_t16",
                "hc_wgmma_gemm128k"};
            enum { NHOT = sizeof hot / sizeof hot[0] };
            for (int h = 0; h < NHOT && !why[i][0]; h++) {
                long sp = spill_stores(log, hot[h]);
                if (sp != 0) snprintf(why[i], sizeof why[i], "%s: %ld bytes spill stores", hot[h], sp);
            }
            if (!why[i][0]) skinny_registers_ok(log, hot + 5, 6, why[i], sizeof why[i]);
        }
        bad[i] = why[i][0] != 0;
        free(log), free(cubin);
    }
    for (int i = 0; i < n; i++)
        if (bad[i])
            CHECK_FAIL_("tile_mma.cu -DHC_CODEC=%s -DHC_SK=%s -DHC_LGS=%s -DHC_ZP=%s for sm_90a: %s",
                        kinds[i][0], kinds[i][1], kinds[i][2], kinds[i][3], why[i]);
        else
            CHECK(!bad[i]);
}

static void test_cache_returns_the_same_cubin(void) {
    const char *dir = test_tmpdir();
    setenv("HC_CACHE_DIR", dir, 1);
    static const char *const opts[] = {"--fmad=false"};
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    hc_err err = {0};
    CHECK_EQ_INT(hc__jit_compile("tile_gemm.cu", "sm_90a", opts, 1, &a, &na, &err), HC_OK);
    CHECK_EQ_INT(hc__jit_compile("tile_gemm.cu", "sm_90a", opts, 1, &b, &nb, &err), HC_OK);
    CHECK(a && b && na == nb && memcmp(a, b, na) == 0);
    char path[700];
    int files = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) files += strstr(de->d_name, ".cubin") != NULL;
    if (d) closedir(d);
    CHECK_EQ_INT(files, 1);
    (void)path;
    free(a), free(b);
    unsetenv("HC_CACHE_DIR");
}

/* The only "*.cubin" entry of dir, into path (cap bytes); false when there is not exactly one. */
static bool only_entry(const char *dir, char *path, size_t cap) {
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, ".cubin")) n++, snprintf(path, cap, "%s/%s", dir, de->d_name);
    if (d) closedir(d);
    return n == 1;
}

static uint64_t le64_at(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Replaces the file at path with n bytes. */
static void put_file(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (fp) fwrite(data, 1, n, fp), fclose(fp);
}

/* An entry is its 32-byte header (magic, key, length, XXH3-64 of the cubin) and the cubin, as
 * docs/gpu.md specifies; a truncated, overwritten, bit-flipped or headerless entry is a miss
 * that rebuilds the cubin and rewrites the entry, which is then a hit again. */
/* The small tile_gemm.cu module built with HC_CACHE_DIR = dir: its note (the cubin in *c). */
static hc_jit_cache_note build_small(const char *dir, void **c, size_t *nc) {
    setenv("HC_CACHE_DIR", dir, 1);
    static const char *const opts[] = {"--fmad=false"};
    hc_jit_cache_note note;
    hc_err err = {0};
    memset(&note, 0, sizeof note);
    *c = NULL, *nc = 0;
    CHECK_EQ_INT(hc__jit_compile_note("tile_gemm.cu", "sm_90a", opts, 1, c, nc, &note, &err),
                 HC_OK);
    return note;
}

/* A cache folder other users may write is neither read nor written (a planted cubin would
 * run as this user's code): the kernel is built and the note says why it was not kept. */
static void test_cache_folder_must_be_private(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/shared", test_tmpdir());
    CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0777) == 0);
    void *c;
    size_t nc;
    hc_jit_cache_note note = build_small(dir, &c, &nc);
    CHECK(c && nc > 0);
    CHECK_EQ_INT(note.state, HC_JIT_CACHE_UNSTORED);
    CHECK_CONTAINS(note.why, "writable by other users");
    char path[1024];
    CHECK(!only_entry(dir, path, sizeof path)); /* nothing written there */
    free(c);
    unsetenv("HC_CACHE_DIR");
}

static void test_cache_entry_damage_rebuilds(void) {
    const char *dir = test_tmpdir();
    setenv("HC_CACHE_DIR", dir, 1);
    static const char *const opts[] = {"--fmad=false"};
    void *ref = NULL;
    size_t nref = 0;
    hc_jit_cache_note note;
    hc_err err = {0};
    CHECK_EQ_INT(hc__jit_compile_note("tile_gemm.cu", "sm_90a", opts, 1, &ref, &nref, &note, &err),
                 HC_OK);
    CHECK_EQ_INT(note.state, HC_JIT_CACHE_STORED);
    char path[1024];
    CHECK(only_entry(dir, path, sizeof path));
    char *ent = NULL;
    size_t n = 0;
    CHECK_EQ_INT(hc__read_file(path, 1 << 30, &ent, &n, &err), HC_OK);
    if (!ref || !ent || n != 32 + nref) {
        CHECK_FAIL_("entry of %zu bytes for a %zu-byte cubin: %s", n, nref, err.msg);
        goto out;
    }
    CHECK(memcmp(ent, "HCCUBIN1", 8) == 0);
    CHECK_EQ_U64(le64_at((unsigned char *)ent + 16), nref);
    CHECK_EQ_U64(le64_at((unsigned char *)ent + 24), XXH3_64bits(ref, nref));
    CHECK(memcmp(ent + 32, ref, nref) == 0);
    unsigned char *junk = malloc(n);
    for (size_t i = 0; junk && i < n; i++) junk[i] = (unsigned char)(i * 2654435761u >> 13);
    for (int damage = 0; damage < 5 && junk; damage++) {
        static const char *const want[] = {"the file holds 68", "not a cache entry",
                                           "hash mismatch", "not a cache entry",
                                           "writable by other users"};
        if (damage == 0) put_file(path, ent, 100);       /* truncated to 100 bytes */
        if (damage == 1) put_file(path, junk, n);        /* random bytes, same length */
        if (damage == 2) {                               /* one flipped bit in the cubin */
            ent[32 + nref / 2] ^= 4;
            put_file(path, ent, n);
            ent[32 + nref / 2] ^= 4;
        }
        if (damage == 3) put_file(path, ref, nref);      /* a bare cubin (older versions) */
        if (damage == 4) {                               /* a valid entry others may replace */
            put_file(path, ent, n);
            chmod(path, 0666);
        }
        for (int pass = 0; pass < 2; pass++) {
            void *c = NULL;
            size_t nc = 0;
            hc_err e = {0};
            CHECK_EQ_INT(hc__jit_compile_note("tile_gemm.cu", "sm_90a", opts, 1, &c, &nc, &note, &e),
                         HC_OK);
            CHECK(c && nc == nref && memcmp(c, ref, nref) == 0);
            CHECK_EQ_INT(note.state, pass ? HC_JIT_CACHE_HIT : HC_JIT_CACHE_STORED);
            CHECK_EQ_INT(note.rebuilt, !pass);
            if (!pass) CHECK_CONTAINS(note.bad, want[damage]);
            free(c);
        }
        char *again = NULL;
        size_t na = 0;
        CHECK_EQ_INT(hc__read_file(path, 1 << 30, &again, &na, &err), HC_OK);
        CHECK(again && na == n && memcmp(again, ent, n) == 0); /* rewritten whole */
        free(again);
    }
    free(junk);
out:
    free(ent), free(ref);
    unsetenv("HC_CACHE_DIR");
}

/* A cache that cannot be written (its folder cannot be made; a full disk, as a file size limit
 * makes it) still yields the cubin, and says so, naming the folder; nothing is left behind. */
static void test_cache_unwritable_reported(void) {
    char dir[700], why[700] = "";
    snprintf(dir, sizeof dir, "%s/file", test_tmpdir());
    put_file(dir, "x", 1);
    strcat(dir, "/kc"); /* below a regular file: no folder can be made */
    void *c;
    size_t nc;
    hc_jit_cache_note note = build_small(dir, &c, &nc);
    CHECK(c && nc > 1000);
    free(c);
    CHECK_EQ_INT(note.state, HC_JIT_CACHE_UNSTORED);
    CHECK_CONTAINS(note.why, "cannot write the kernel cache");
    CHECK_CONTAINS(note.why, dir);
    CHECK(hc_gpu_cache_unstored(why, sizeof why));
    CHECK_CONTAINS(why, dir);
    const char *full = test_tmpdir();
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1000; /* writes past 1000 bytes fail (EFBIG), as on a full disk */
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    note = build_small(full, &c, &nc); /* (checks that the build itself succeeds) */
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    free(c);
    CHECK_EQ_INT(note.state, HC_JIT_CACHE_UNSTORED);
    CHECK_CONTAINS(note.why, full);
    CHECK_CONTAINS(note.why, "File too large");
    int files = 0;
    DIR *d = opendir(full);
    struct dirent *de;
    while (d && (de = readdir(d))) files += de->d_name[0] != '.';
    if (d) closedir(d);
    CHECK_EQ_INT(files, 0); /* neither an entry nor a temporary file */
    unsetenv("HC_CACHE_DIR");
}

static void test_gpu_absent_is_clean(void) {
    hc_gpu *g = NULL;
    char msg[512] = "";
    hc_status st = hc_gpu_open(&g, msg, sizeof msg);
    if (st == HC_OK) { /* a machine with a GPU: the GPU tests (make gpu-test) cover it */
        printf("     (a GPU is present: %s)\n", hc_gpu_arch(g));
        hc_gpu_free(g);
        return;
    }
    CHECK_EQ_INT(st, HC_UNSUPPORTED);
    CHECK(msg[0] != 0);
    CHECK(g == NULL);
    printf("     (no GPU here: %s)\n", msg);
}

/* The small-M K split (runtime/gpu_plan.h) on the H200's 132 SMs x 4 resident blocks: one wave
 * (values worked out by hand from the rule), always within [1, tiles_k / 8]. */
static void test_gemv_ksplit_plan(void) {
    CHECK_EQ_INT(hc__gemv_ksplit(448, 128, 132, 4), 1);  /* 28672 x 8192 */
    CHECK_EQ_INT(hc__gemv_ksplit(128, 128, 132, 4), 4);  /* 8192 x 8192 */
    CHECK_EQ_INT(hc__gemv_ksplit(64, 128, 132, 4), 8);   /* 4096 x 8192 */
    CHECK_EQ_INT(hc__gemv_ksplit(10, 45, 132, 4), 5);    /* 640 x 2880: two tiles a warp */
    CHECK_EQ_INT(hc__gemv_ksplit(896, 128, 132, 4), 1);  /* 57344 x 8192 */
    CHECK_EQ_INT(hc__gemv_ksplit(4, 2, 132, 4), 1);      /* 200 x 70 */
    CHECK_EQ_INT(hc__gemv_ksplit(128, 128, 132, 2), 2);  /* 2 resident blocks: half the split */
    CHECK_EQ_INT(hc__gemv_ksplit(128, 128, 0, 4), 1);    /* no SMs reported */
    for (uint64_t tn = 1; tn < 3000; tn += 37)
        for (uint64_t tk = 1; tk < 400; tk += 29) {
            unsigned ks = hc__gemv_ksplit(tn, tk, 132, 4);
            uint64_t most = tk / 8 ? tk / 8 : 1;
            CHECK(ks >= 1 && ks <= most);
            CHECK(ks == 1 || tn * ks <= 132 * 4); /* one wave */
        }
}

void suite_jit(void) {
    RUN(test_gemv_ksplit_plan);
    RUN(test_every_kernel_compiles);
    RUN(test_kind_options_required);
    RUN(test_hot_kernels_do_not_regress);
    RUN(test_cache_returns_the_same_cubin);
    RUN(test_cache_entry_damage_rebuilds);
    RUN(test_cache_unwritable_reported); /* (first: it reads the first unkept build's note) */
    RUN(test_cache_folder_must_be_private);
    RUN(test_gpu_absent_is_clean);
}
