/* gpu_test.c: GPU tests (make gpu-test). Every converted fixture layer runs through the
 * reference GPU kernel and must equal the CPU executor bit for bit (same arithmetic, same
 * order, --fmad=false), for M = 7 and 33 and for every expert of fused tensors. Without a GPU
 * it says so and exits 0. Ends with "N passed, N failed". */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <time.h>

#include "hconvert.h"
#include "jit.h"
#include "layout.h"
#include "npy.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Cold compile (cache off) and warm load (cache hit) of the kernels, for the notes. */
static void jit_times(const char *arch) {
    static const char *const opts[] = {"--fmad=false"};
    void *cubin = NULL;
    size_t size = 0;
    hc_err err = {0};
    setenv("HC_JIT_NO_CACHE", "1", 1);
    double t0 = now_s();
    hc_status st = hc_jit_compile("tile_gemm.cu", arch, opts, 1, &cubin, &size, &err);
    double cold = now_s() - t0;
    unsetenv("HC_JIT_NO_CACHE");
    free(cubin);
    hc_jit_compile("tile_gemm.cu", arch, opts, 1, &cubin, &size, &err); /* fill the cache */
    free(cubin);
    t0 = now_s();
    st |= hc_jit_compile("tile_gemm.cu", arch, opts, 1, &cubin, &size, &err);
    double warm = now_s() - t0;
    free(cubin);
    printf("jit: tile_gemm.cu for %s: cold compile %.1f ms, warm cache load %.3f ms (%zu-byte "
           "cubin)%s\n", arch, cold * 1e3, warm * 1e3, size, st ? " FAILED" : "");
}

static int passed, failed;

static void check_layer(hc_gpu *g, hc_container *c, const char *cas, const char *name,
                        const float *x, uint64_t m, uint64_t k) {
    uint64_t n, kk, E;
    char msg[1024];
    if (hc_linear_shape(c, name, &n, &kk, &E, msg, sizeof msg) || kk != k) return;
    const hc_tensor_info *t = hc_container_find(c, name);
    if (!t || !t->layout_params) return; /* source-layout layers run on the CPU only */
    for (uint32_t e = 0; e < E; e++) {
        float *yc = malloc(m * n * 4 + 4), *yg = malloc(m * n * 4 + 4);
        memset(yg, 0xFF, m * n * 4); /* poisoned: NaN wherever the kernel writes nothing */
        int ok = hc_cpu_linear(c, name, e, x, m, k, yc, n, msg, sizeof msg) == HC_OK;
        if (!ok) printf("FAIL %s %s: cpu: %s\n", cas, name, msg);
        if (ok && hc_gpu_linear_ref(g, c, name, e, x, m, k, yg, n, msg, sizeof msg)) {
            printf("FAIL %s %s: gpu: %s\n", cas, name, msg);
            ok = 0;
        }
        if (ok && memcmp(yc, yg, m * n * 4)) {
            uint64_t bad = 0;
            for (uint64_t i = 0; i < m * n; i++) bad += memcmp(&yc[i], &yg[i], 4) != 0;
            printf("FAIL %s %s expert %u M=%llu: %llu of %llu outputs differ from the CPU\n", cas,
                   name, e, (unsigned long long)m, (unsigned long long)bad,
                   (unsigned long long)(m * n));
            ok = 0;
        }
        if (ok) printf("ok   %s %s expert %u M=%llu N=%llu K=%llu (%s)\n", cas, name, e,
                       (unsigned long long)m, (unsigned long long)n, (unsigned long long)k,
                       t->layout);
        passed += ok, failed += !ok;
        /* the fast path where it exists: within twice the float32 summation bound */
        hc_tile_params p;
        cJSON *pj = cJSON_Parse(t->layout_params);
        hc_err perr = {0};
        bool have_p = hc_tile_params_parse(pj, t->layout, &p, name, &perr) == HC_OK;
        cJSON_Delete(pj);
        if (ok && have_p && p.kind == HC_TL_INT && p.code_bits == 4 && m <= 8) {
            float *yf = malloc(m * n * 4 + 4);
            hc_status fst = hc_gpu_linear_fast(g, c, name, e, x, m, k, yf, n, 0, NULL, msg, sizeof msg);
            if (fst == HC_UNSUPPORTED) { /* no fast kernel for this layout yet */
                free(yf);
                continue;
            }
            int fok = fst == HC_OK;
            if (!fok) printf("FAIL %s %s: fast: %s\n", cas, name, msg);
            const uint8_t *wb = hc_container_stored(c, t);
            const int32_t *perm = NULL;
            if (p.perm) {
                char pn[600];
                snprintf(pn, sizeof pn, "%s.perm", name);
                perm = hc_container_stored(c, hc_container_find(c, pn));
            }
            uint64_t bad = 0;
            for (uint64_t i = 0; fok && i < m; i++)
                for (uint64_t r = 0; r < n; r++) {
                    double sum = 0;
                    for (uint64_t q = 0; q < k; q++) {
                        const uint8_t *ch = wb + hc_tile_offset(&p, e, r / 64, q / 64);
                        double wv = hc_tile_value(&p, ch, (unsigned)(r % 64), (unsigned)(q % 64));
                        sum += fabs(wv * x[i * k + (perm ? (uint64_t)perm[q] : q)]);
                    }
                    double bound = 2 * ((double)k + 3) * ldexp(1.0, -24) * sum + 1e-30;
                    if (!(fabs((double)yf[i * n + r] - (double)yc[i * n + r]) <= bound)) bad++;
                }
            if (fok && bad) printf("FAIL %s %s: fast path: %llu outputs beyond the bound\n", cas,
                                   name, (unsigned long long)bad);
            fok = fok && !bad;
            if (fok) printf("ok   %s %s expert %u M=%llu fast path\n", cas, name, e,
                            (unsigned long long)m);
            passed += fok, failed += !fok;
            free(yf);
        }
        free(yc), free(yg);
    }
}

int main(void) {
    hc_gpu *g = NULL;
    char msg[1024];
    hc_status st = hc_gpu_open(&g, msg, sizeof msg);
    if (st == HC_UNSUPPORTED) {
        printf("skipped: no GPU (%s)\n0 passed, 0 failed\n", msg);
        return 0;
    }
    if (st) {
        printf("FAIL gpu open: %s\n0 passed, 1 failed\n", msg);
        return 1;
    }
    printf("GPU %s\n", hc_gpu_arch(g));
    jit_times(hc_gpu_arch(g));
    FILE *f = fopen("tests/fixtures/quant/cases.txt", "r");
    char cas[256];
    while (f && fscanf(f, "%255s", cas) == 1) {
        char path[1024], out[1024];
        snprintf(path, sizeof path, "tests/fixtures/quant/%s/run/index.json", cas);
        char *text = NULL;
        size_t tn = 0;
        hc_err err = {0};
        if (hc_read_file(path, 1 << 24, &text, &tn, &err)) continue;
        cJSON *idx = cJSON_ParseWithLength(text, tn);
        free(text);
        snprintf(out, sizeof out, "/tmp/hc-gpu-test-%d-%s", (int)getpid(), cas);
        snprintf(path, sizeof path, "tests/fixtures/quant/%s", cas);
        hc_converter *cv = hc_converter_create();
        hc_container *c = NULL;
        char cf[1100];
        snprintf(cf, sizeof cf, "%s/model.hconvert", out);
        if (hc_converter_run(cv, path, out) || hc_container_open(cf, 1, &c, msg, sizeof msg)) {
            printf("FAIL %s: convert/open\n", cas);
            failed++;
        } else {
            const char *lists[2] = {"gemm", "moe"};
            for (int l = 0; l < 2; l++) {
                const cJSON *e;
                cJSON_ArrayForEach(e, cJSON_GetObjectItem(idx, lists[l])) {
                    char xp[1200];
                    snprintf(xp, sizeof xp, "tests/fixtures/quant/%s/%s", cas,
                             cJSON_GetObjectItem(e, "x")->valuestring);
                    uint64_t xs[2];
                    float *x = NULL;
                    if (hc_npy_read_2d(xp, HC_NPY_F32, xs, (void **)&x, &err) == HC_OK)
                        check_layer(g, c, cas, cJSON_GetObjectItem(e, "name")->valuestring, x,
                                    xs[0], xs[1]);
                    free(x);
                }
            }
        }
        hc_container_free(c);
        hc_converter_free(cv);
        cJSON_Delete(idx);
        char rm[1200];
        snprintf(rm, sizeof rm, "rm -rf '%s'", out);
        if (system(rm) != 0) printf("warning: cannot remove %s\n", out);
    }
    if (f) fclose(f);
    hc_gpu_free(g);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
