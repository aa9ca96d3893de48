/* fuzz_util.h: what the libFuzzer targets share. The readers under test take paths, so each
 * input is written into a private temporary folder, beside copies of fixture files where the
 * parser needs a checkpoint around it (a config needs its safetensors, an index its shards);
 * and the pass that drives a checkpoint through model resolution and every decoder, so each
 * target reaches the code its input steers. Fixtures are read from $HC_FUZZ_FIXTURES, else
 * tests/fixtures under the current folder (tests/fuzz/run.sh runs from the repository root). */
#ifndef HC_FUZZ_UTIL_H
#define HC_FUZZ_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "moe.h"
#include "quant.h"

static char fz_root[4096];

static inline int fz_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static inline void fz_cleanup(void) {
    if (fz_root[0]) nftw(fz_root, fz_rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

static inline void fz_die(const char *what, const char *path) {
    fprintf(stderr, "fuzz: %s '%s'\n", what, path);
    abort();
}

/* The process's private folder under $TMPDIR (removed at exit), created on first use. No
 * single file may grow past 64 MiB: an input that makes a reader write more (an archive bomb)
 * dies of SIGXFSZ and is reported as a crash instead of filling the disk. */
static inline const char *fz_tmpdir(void) {
    if (fz_root[0]) return fz_root;
    const char *t = getenv("TMPDIR");
    snprintf(fz_root, sizeof fz_root, "%s/hc-fuzz-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(fz_root)) fz_die("cannot create a temporary folder like", fz_root);
    atexit(fz_cleanup);
    struct rlimit rl = {64u << 20, 64u << 20};
    setrlimit(RLIMIT_FSIZE, &rl);
    return fz_root;
}

/* Writes n bytes to dir/name (replacing it); false on failure. */
static inline bool fz_write(const char *dir, const char *name, const void *data, size_t n) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) break;
        p += w, n -= (size_t)w;
    }
    close(fd);
    return n == 0;
}

static inline void fz_unlink(const char *dir, const char *name) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

static inline void fz_copy_file(const char *from, const char *dir, const char *name) {
    FILE *f = fopen(from, "rb");
    if (!f) fz_die("cannot read", from);
    char *buf = NULL;
    size_t len = 0, cap = 0, r;
    char chunk[65536];
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + r > cap && !(buf = realloc(buf, cap = 2 * (len + r)))) fz_die("out of memory", from);
        memcpy(buf + len, chunk, r);
        len += r;
    }
    fclose(f);
    if (!fz_write(dir, name, buf ? buf : "", len)) fz_die("cannot write a copy of", from);
    free(buf);
}

static inline bool fz_skipped(const char *name, const char *const *skip) {
    for (; skip && *skip; skip++)
        if (!strcmp(name, *skip)) return true;
    return false;
}

/* Copies the regular files of fixture folder rel (relative to the fixture root) into a new
 * folder of the private folder, except the names in skip (NULL-terminated; the files the
 * input supplies). Returns the new folder (caller frees). */
static inline char *fz_stage(const char *rel, const char *const *skip) {
    static unsigned serial;
    const char *env = getenv("HC_FUZZ_FIXTURES");
    char src[4096], *dst = NULL;
    snprintf(src, sizeof src, "%s/%s", env && *env ? env : "tests/fixtures", rel);
    if (asprintf(&dst, "%s/stage%u", fz_tmpdir(), serial++) < 0 || mkdir(dst, 0700) != 0)
        fz_die("cannot create a staging folder in", fz_tmpdir());
    DIR *d = opendir(src);
    if (!d) fz_die("fixture folder missing (run from the repository root or set HC_FUZZ_FIXTURES):", src);
    struct dirent *de;
    while ((de = readdir(d))) {
        char from[8192];
        struct stat sb;
        snprintf(from, sizeof from, "%s/%s", src, de->d_name);
        if (de->d_name[0] == '.' || fz_skipped(de->d_name, skip) || stat(from, &sb) != 0 ||
            !S_ISREG(sb.st_mode))
            continue;
        fz_copy_file(from, dst, de->d_name);
    }
    closedir(d);
    return dst;
}

/* Decodes one module as `hconvert dequant` does (every code, then every value) and records
 * its shape for the MoE check. */
static inline void fz_decode_module(const hc_model *md, size_t i, hc_moe_shape *shape) {
    hc_qtensor q = {0};
    hc_findings f = {0};
    hc_err err = {0};
    if (hc__module_decode(md, &md->m[i], 0, &q, &f, &err) == HC_OK) {
        uint64_t numel = hc__qtensor_numel(&q);
        float *out = malloc((numel ? numel : 1) * sizeof *out);
        if (out) hc__qtensor_dequant(&q, out);
        free(out);
        *shape = (hc_moe_shape){true, q.kind, q.bits, q.N, q.K, q.gk};
        hc__qtensor_free(&q);
    }
    hc__findings_free(&f);
    hc__module_release(md, &md->m[i]);
}

/* The checkpoint at path through everything validate and convert read: open, map, resolve
 * every module's scheme, decode every module, check MoE layers. True when it opened and
 * resolved; else err says why. */
static inline bool fz_checkpoint_pass(const char *path, hc_err *err) {
    hc_ckpt *ck = NULL;
    hc_model *md = NULL;
    if (hc__ckpt_open(path, &ck, err) != HC_OK) return false;
    bool ok = hc__ckpt_map(ck, err) == HC_OK && hc__model_open(ck, &md, err) == HC_OK;
    if (ok) {
        hc_moe_shape *shapes = calloc(md->n ? md->n : 1, sizeof *shapes);
        for (size_t i = 0; shapes && i < md->n; i++) fz_decode_module(md, i, &shapes[i]);
        hc_findings moe = {0};
        int layers = 0;
        if (shapes) hc__model_check_moe(md, shapes, &moe, &layers);
        hc__findings_free(&moe);
        free(shapes);
        hc__model_free(md);
    }
    hc__ckpt_close(ck);
    return ok;
}

/* Regression inputs that a reader must accept (regress/<target>/accept_*, say an archive
 * packed the usual way): run.sh sets HC_FUZZ_ACCEPT for them, and then a refusal aborts with
 * the reader's message, failing the run. While fuzzing, refusals are the normal outcome. */
static inline void fz_expect(bool ok, const char *msg) {
    const char *want = getenv("HC_FUZZ_ACCEPT");
    if (!ok && want && *want) {
        fprintf(stderr, "fuzz: input refused: %s\n", msg);
        abort();
    }
}

/* The libFuzzer initializer of a target whose inputs are written into copies of fixture
 * folders: staged[i] = fz_stage(fixtures[i], inputs) for each of the NFIX fixtures. */
#define FZ_STAGE_FIXTURES(fixtures, inputs, staged)                                   \
    int LLVMFuzzerInitialize(int *argc, char ***argv);                                 \
    int LLVMFuzzerInitialize(int *argc, char ***argv) {                                \
        (void)argc, (void)argv;                                                         \
        for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)               \
            staged[i] = fz_stage(fixtures[i], inputs);                                  \
        return 0;                                                                       \
    }

#endif
