/* t_jit.c: every kernel variant compiles with NVRTC for the architectures we target (no GPU
 * needed: CI runs this), the cache returns the same cubin, and without a device the GPU
 * runtime reports that cleanly. */
#include <dirent.h>
#include <stdlib.h>

#include "jit.h"
#include "test.h"

static void test_every_kernel_compiles(void) {
    int maj = 0, min = 0;
    hc_err err = {0};
    CHECK_EQ_INT(hc_jit_version(&maj, &min, &err), HC_OK);
    if (err.code) {
        CHECK_FAIL_("%s", err.msg);
        return;
    }
    static const char *const archs[] = {"sm_90a", "sm_80"};
    int built = 0, variants = 0;
    for (size_t a = 0; a < 2; a++)
        for (const hc_kernel_source *k = hc_kernel_sources; k->name; k++) {
            size_t n = strlen(k->name);
            if (n < 3 || strcmp(k->name + n - 3, ".cu")) continue; /* headers are not programs */
            /* tile_mma.cu is built once per codec (-DHC_CODEC=1..6), the others as they are */
            bool per_codec = !strcmp(k->name, "tile_mma.cu");
            for (int codec = 1; codec <= (per_codec ? 6 : 1); codec++) {
                char def[32];
                snprintf(def, sizeof def, "-DHC_CODEC=%d", codec);
                const char *opts[2] = {"--fmad=false", NULL};
                if (per_codec) opts[0] = def, opts[1] = "-std=c++17";
                void *cubin = NULL;
                size_t size = 0;
                hc_err e = {0};
                setenv("HC_JIT_NO_CACHE", "1", 1);
                hc_status st = hc_jit_compile(k->name, archs[a], opts, per_codec ? 2 : 1, &cubin,
                                              &size, &e);
                unsetenv("HC_JIT_NO_CACHE");
                if (st) CHECK_FAIL_("%s %s for %s: %s", k->name, def, archs[a], e.msg);
                else CHECK(size > 1000 && memcmp(cubin, "\x7f" "ELF", 4) == 0);
                built += st == HC_OK;
                variants++;
                free(cubin);
            }
        }
    CHECK_EQ_INT(built, variants);
    printf("     (NVRTC %d.%d: %d kernel builds)\n", maj, min, built);
    CHECK(built >= 14); /* 2 architectures x (tile_gemm.cu + 6 codecs of tile_mma.cu) */
}

static void test_cache_returns_the_same_cubin(void) {
    const char *dir = test_tmpdir();
    setenv("HC_CACHE_DIR", dir, 1);
    static const char *const opts[] = {"--fmad=false"};
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    hc_err err = {0};
    CHECK_EQ_INT(hc_jit_compile("tile_gemm.cu", "sm_90a", opts, 1, &a, &na, &err), HC_OK);
    CHECK_EQ_INT(hc_jit_compile("tile_gemm.cu", "sm_90a", opts, 1, &b, &nb, &err), HC_OK);
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

void suite_jit(void) {
    RUN(test_every_kernel_compiles);
    RUN(test_cache_returns_the_same_cubin);
    RUN(test_gpu_absent_is_clean);
}
