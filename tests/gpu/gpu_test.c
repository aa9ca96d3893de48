/* gpu_test.c: the dense GPU path's correctness (make gpu-test; MoE: moe_test.c). Every
 * converted fixture layer runs through the reference GPU kernel and must equal the CPU
 * executor bit for bit (same arithmetic, same order, --fmad=false), for M = 7 and 33 and for
 * every expert of fused tensors; the fast kernels -- the runtime's pick and each kernel
 * forced -- run synthetic layers of every layout against a float64 reference (the sweep,
 * skinny-q past its ring, back-to-back chains that must give the steps' bits); precompiled
 * modules serve the runtime. Without a GPU it says so and exits 0. Ends with "N passed, N
 * failed". */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <time.h>

#include "gpu_cuda.h"
#include "hconvert.h"
#include "tile_layer.h"
#include "npy.h"
#include "tile_synth.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int passed, failed;

static float bf16_round(float f) { /* nearest even, as hc_gpu_linear_host rounds */
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1)) & 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

/* n activations uniform in [-1, 1), rounded to bf16, from the xorshift state *rng */
static void random_bf16(float *x, uint64_t n, uint64_t *rng) {
    for (uint64_t i = 0; i < n; i++) {
        *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
        x[i] = bf16_round((float)((double)(*rng >> 11) / 9007199254740992.0 * 2 - 1));
    }
}

static uint16_t bf16_bits(float f) { /* (of a float that is a bf16 number) */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* The layer's weights of one expert as float64 [N][K] in source column order (the act-order
 * permutation undone), from the tile decoder of the CPU twin. */
static double *dense_weights(hc_container *c, const char *name, uint32_t e, hc_tile_params *p) {
    const hc_tensor_info *t;
    const int32_t *perm;
    hc_err err = {0};
    if (hc__tile_layer(c, name, &t, p, &perm, &err)) return NULL;
    double *w = calloc(p->N * p->K + 1, sizeof *w);
    const uint8_t *wb = hc_container_stored(c, t);
    for (uint64_t r = 0; w && r < p->N; r++)
        for (uint64_t q = 0; q < p->K; q++) {
            const uint8_t *ch = wb + hc__tile_offset(p, e, r / 64, q / 64);
            w[r * p->K + (perm ? (uint64_t)perm[q] : q)] =
                hc__tile_value(p, ch, (unsigned)(r % 64), (unsigned)(q % 64));
        }
    return w;
}

/* |y - ref| within: the bf16 rounding of the output, float32 accumulation (four times the
 * round-to-nearest bound: the tensor cores' adds are not all IEEE), and when rounded (weights
 * rounded to bf16 after scaling: the large-M and skinny kernels) 2^-8 of the sum of |products|. */
static bool within(double y, double ref, double sabs, uint64_t k, bool rounded) {
    double bound = ldexp(fabs(ref), -8) + 4.0 * ((double)k + 3) * ldexp(sabs, -24) +
                   (rounded ? ldexp(sabs, -8) : 0.0) + 1e-30;
    return fabs(y - ref) <= bound;
}

/* Compares y [m][n] with float64 sums over w and xb (bf16-rounded activations): every output
 * when the work is small, else `samples` random ones plus the first and last token's rows.
 * Returns the number of outputs beyond the bound; *checked counts those compared. */
static uint64_t compare_f64(const float *y, const double *w, const float *xb, uint64_t m,
                            uint64_t n, uint64_t k, bool rounded, uint64_t *checked, uint64_t *rng,
                            double *rel) {
    uint64_t bad = 0, cnt = 0;
    double num = 0, den = 0;
    bool all = m * n * k <= 400000000ull;
    uint64_t total = all ? m * n : 4096 + 2 * n;
    for (uint64_t i = 0; i < total; i++) {
        uint64_t t, r;
        if (all) t = i / n, r = i % n;
        else if (i < 2 * n) t = i < n ? 0 : m - 1, r = i % n;
        else {
            *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
            t = *rng % m, r = (*rng >> 20) % n;
        }
        double ref = 0, sabs = 0;
        for (uint64_t q = 0; q < k; q++) {
            double pr = w[r * k + q] * (double)xb[t * k + q];
            ref += pr, sabs += fabs(pr);
        }
        bad += !within((double)y[t * n + r], ref, sabs, k, rounded);
        num += ((double)y[t * n + r] - ref) * ((double)y[t * n + r] - ref), den += ref * ref;
        cnt++;
    }
    *checked = cnt;
    *rel = den > 0 ? sqrt(num / den) : 0; /* ||y - ref|| / ||ref|| over the outputs compared */
    return bad;
}

/* The fast kernels on a fixture layer: against the float64 reference (bf16 activations), and
 * the same results twice (no races in the split-K reduction). */
static void check_fast(hc_gpu *g, hc_container *c, const char *cas, const char *name,
                       uint32_t e, const float *x, uint64_t m, uint64_t k, uint64_t n) {
    char msg[1024];
    hc_gpu_model *md = NULL;
    hc_tile_params p;
    double *w = dense_weights(c, name, e, &p);
    float *xb = malloc(m * k * 4 + 4), *y = malloc(m * n * 4 + 4), *y2 = malloc(m * n * 4 + 4);
    int ok = w && xb && y && y2;
    for (uint64_t i = 0; ok && i < m * k; i++) xb[i] = bf16_round(x[i]);
    if (ok && hc_gpu_model_load(g, c, name, &md, msg, sizeof msg)) {
        printf("FAIL %s %s: model load: %s\n", cas, name, msg);
        ok = 0;
    }
    static const uint64_t ms[] = {1, 0};
    for (int v = 0; ok && v < 2; v++) {
        uint64_t mm = ms[v] ? ms[v] : m;
        uint64_t checked = 0, rng = 1, bad;
        if (hc_gpu_linear_host(md, name, e, xb, mm, k, y, n, msg, sizeof msg) ||
            hc_gpu_linear_host(md, name, e, xb, mm, k, y2, n, msg, sizeof msg)) {
            printf("FAIL %s %s: fast path: %s\n", cas, name, msg);
            ok = 0;
            break;
        }
        double rel = 0;
        bad = compare_f64(y, w, xb, mm, n, k, mm > 16, &checked, &rng, &rel);
        int fok = bad == 0 && memcmp(y, y2, mm * n * 4) == 0;
        if (!fok) printf("FAIL %s %s expert %u M=%llu fast path: %llu of %llu beyond the bound%s\n",
                         cas, name, e, (unsigned long long)mm, (unsigned long long)bad,
                         (unsigned long long)checked,
                         memcmp(y, y2, mm * n * 4) ? ", and two runs differ" : "");
        else printf("ok   %s %s expert %u M=%llu fast path (%s)\n", cas, name, e,
                    (unsigned long long)mm, mm <= 16 ? "small-M" : "tiled");
        passed += fok, failed += !fok;
    }
    if (!ok) failed++;
    hc_gpu_model_free(md);
    free(w), free(xb), free(y), free(y2);
}

/* Writes layer "w" of spec sp [E, N, K] to path, opens it and loads it on g; on failure says
 * so (naming what) and counts it. */
static int synth_gpu_model(hc_gpu *g, const char *path, const char *what, const synth_spec *sp,
                           uint64_t E, uint64_t N, uint64_t K, bool perm, uint64_t seed,
                           hc_container **c, hc_gpu_model **md) {
    char msg[1024];
    *c = NULL, *md = NULL;
    if (synth_container(path, sp, E, N, K, perm, seed, NULL, msg, sizeof msg) ||
        hc_container_open(path, 1, c, msg, sizeof msg) ||
        hc_gpu_model_load(g, *c, NULL, md, msg, sizeof msg)) {
        printf("FAIL %s %s: %s\n", what, sp->label, msg);
        failed++;
        hc_container_free(*c);
        *c = NULL;
        return -1;
    }
    return 0;
}

/* Every layout x M in {1, 7, 16, 64, 333, 4096} x shapes (N=704 K=2880: 11 stripes, an odd
 * count with a K split, so the last t16 block of two stripes has one and splits K; N=136 K=70
 * with two experts and an act-order permutation: 3 stripes, the last partial) on fresh random
 * data: against the float64 reference and, up to M=333, the CPU executor run on the same bf16
 * activations. */
static void synthetic_sweep(hc_gpu *g, uint64_t seed) {
    static const struct {
        uint64_t n, k, e;
        bool perm;
    } shapes[] = {{704, 2880, 1, false}, {136, 70, 2, true}};
    static const uint64_t all_ms[] = {1, 7, 16, 64, 100, 333, 4096}, quick_ms[] = {1, 16, 64};
    /* HC_GPU_TEST_QUICK (for the compute-sanitizer runs): the small shape, three M */
    bool quick = getenv("HC_GPU_TEST_QUICK") != NULL;
    const uint64_t *ms = quick ? quick_ms : all_ms;
    size_t nms = quick ? 3 : 7;
    char path[256], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-synth-%d.hconvert", (int)getpid());
    uint64_t rng = seed;
    for (size_t si = 0; si < SYNTH_SPECS; si++)
        for (size_t hi = quick ? 1 : 0; hi < 2; hi++) {
            const synth_spec *sp = &synth_specs[si];
            uint64_t N = shapes[hi].n, K = shapes[hi].k, E = shapes[hi].e;
            hc_container *c;
            hc_gpu_model *md;
            if (synth_gpu_model(g, path, "synthetic", sp, E, N, K, shapes[hi].perm,
                                seed + si * 7 + hi, &c, &md))
                continue;
            uint32_t e = (uint32_t)(E - 1);
            hc_tile_params p;
            double *w = dense_weights(c, "w", e, &p);
            for (size_t mi = 0; w && mi < nms; mi++) {
                uint64_t M = ms[mi], checked = 0;
                float *x = malloc(M * K * 4), *y = malloc(M * N * 4), *yc = malloc(M * N * 4);
                random_bf16(x, M * K, &rng);
            /* the kernel the runtime picks, then each kernel forced that serves M
             * (hc_gpu_model_force_kernel): mma.sync any M (the last resort where no small-M
             * variant fits a device's block), M > 16 the other large-M ones (ws128k, v84:
             * ws128's tiles stream-K), M <= 128 the skinny ones (skinny-q too: K in quads
             * inside the block, v59/v60), M <= 8 and 16 the small-M t8 and t16 */
            static const char *const forced[] = {
                "auto",     "mma",      "wgmma",     "ws64",      "ws128",     "ws256", "ws128k",
                "skinny16", "skinny32", "skinny64",  "skinny16q", "skinny32q", "skinny64q",
                "t8",       "t16"};
            enum { NPASS = sizeof forced / sizeof forced[0] };
            const bool hopper = !strcmp(hc_gpu_arch(g), "sm_90a");
            for (int pass = 0; pass < NPASS; pass++) {
                const bool serves = pass <= 1   ? true
                                    : pass < 7  ? M > 16 && hopper
                                    : pass < 13 ? hopper && M <= 128
                                                : M <= (pass == 13 ? 8u : 16u);
                if (!serves) continue;
                double t0 = now_s();
                int ok = hc_gpu_model_force_kernel(md, forced[pass], msg, sizeof msg) == HC_OK &&
                         hc_gpu_linear_host(md, "w", e, x, M, K, y, N, msg, sizeof msg) == HC_OK;
                double dt = now_s() - t0;
                if (hc_gpu_model_force_kernel(md, NULL, msg, sizeof msg)) ok = 0;
                if (!ok) printf("FAIL synthetic %s N=%llu K=%llu M=%llu: %s\n", sp->label,
                                (unsigned long long)N, (unsigned long long)K,
                                (unsigned long long)M, msg);
                double rel = 0;
                /* (weights scaled and rounded to bf16: the large-M kernels, skinny included) */
                const bool rounded = M > 16 || pass == 1 || (pass >= 7 && pass < 13);
                uint64_t bad = ok ? compare_f64(y, w, x, M, N, K, rounded, &checked, &rng, &rel) : 0;
                uint64_t badc = 0;
                if (ok && M <= 333) { /* the CPU executor on the same activations */
                    if (hc_cpu_linear(c, "w", e, x, M, K, yc, N, msg, sizeof msg)) {
                        printf("FAIL synthetic %s: cpu: %s\n", sp->label, msg);
                        ok = 0;
                    }
                    for (uint64_t i = 0; ok && i < M * N; i++) {
                        double sabs = 0;
                        const float *xr = x + (i / N) * K;
                        const double *wr = w + (i % N) * K;
                        for (uint64_t q = 0; q < K; q++) sabs += fabs(wr[q] * (double)xr[q]);
                        badc += !within((double)y[i], (double)yc[i], 2 * sabs, K, rounded);
                    }
                }
                int fine = ok && !bad && !badc;
                printf("%s synthetic %-28s N=%-4llu K=%-4llu E=%llu%s M=%-4llu %-7s: %llu checked, "
                       "rel err %.1e, %llu beyond the float64 bound, %llu beyond the CPU "
                       "executor's (%.1f ms)\n", fine ? "ok  " : "FAIL", sp->label,
                       (unsigned long long)N, (unsigned long long)K, (unsigned long long)E,
                       shapes[hi].perm ? " perm" : "", (unsigned long long)M,
                       pass ? forced[pass] : M <= 16 ? "small-M" : "picked", (unsigned long long)checked,
                       rel, (unsigned long long)bad, (unsigned long long)badc, dt * 1e3);
                passed += fine, failed += !fine;
            }
                if (si == 0 && M == 64) { /* a forced kernel that does not exist is refused */
                    hc_status rs = hc_gpu_model_force_kernel(md, "ws32", msg, sizeof msg);
                    int fine = rs == HC_USAGE && strstr(msg, "hc_gpu_model_force_kernel") &&
                               strstr(msg, "'ws32'") && !strstr(msg, ": :");
                    printf("%s force kernel ws32 refused: %s\n", fine ? "ok  " : "FAIL",
                           rs ? msg : "(accepted)");
                    passed += fine, failed += !fine;
                    /* off Hopper: the warp-specialised kernel is refused, naming the device */
                    if (strcmp(hc_gpu_arch(g), "sm_90a")) {
                        rs = hc_gpu_model_force_kernel(md, "ws256", msg, sizeof msg);
                        fine = rs == HC_UNSUPPORTED && strstr(msg, "\"ws256\"") &&
                               strstr(msg, hc_gpu_arch(g)) && !strstr(msg, ": :");
                        printf("%s force kernel ws256 refused on %s: %s\n", fine ? "ok  " : "FAIL",
                               hc_gpu_arch(g), rs ? msg : "(accepted)");
                        passed += fine, failed += !fine;
                    }
                    /* a refusal leaves the choice as it was: the runtime's */
                    fine = hc_gpu_linear_host(md, "w", e, x, M, K, y, N, msg, sizeof msg) == HC_OK;
                    printf("%s after a refused force kernel the layer runs: %s\n",
                           fine ? "ok  " : "FAIL", fine ? "yes" : msg);
                    passed += fine, failed += !fine;
                }
                free(x), free(y), free(yc);
            }
            free(w);
            hc_gpu_model_free(md);
            hc_container_free(c);
        }
    unlink(path);
}

/* Kernels past one lap of their stage rings and across their blocks' ranges, against the
 * float64 reference: 704 x 4096 (64 K tiles a tile) and, in the full run, 8960 x 1792, int4
 * and folded MXFP4, each kernel of `forced` at each M of ms (what: the lines' label).
 * skinny-q at 16, 32, 64 tokens: its ring of at most 12 stages laps inside a tile of 16 quads
 * (skinny64q's of 2-4 on every shape), and on 8960 x 1792 8 blocks take two of the 140
 * one-stripe tiles. (The synthetic sweep's shapes give a block one tile of at most 12 items.)
 * ws128k (v84, stream-K) at M = 17, 128 and 200 (two token tiles, the second short): 704 x
 * 4096's 6 x 64 items in 48 ranges of 8 (every tile cut over 8 blocks), 8960 x 1792's 70 x 28
 * in 132 of 14-15 (tiles cut in two, ranges over two tiles, the ring carried between them). */
static void test_laps(hc_gpu *g, uint64_t seed, const char *what, const char *const *forced,
                      size_t nf, const uint64_t *ms, size_t nm) {
    static const uint64_t shapes[][2] = {{704, 4096}, {8960, 1792}};
    static const size_t specs[] = {0, 7};
    const size_t nshapes = getenv("HC_GPU_TEST_QUICK") ? 1 : 2;
    char path[256], msg[1024];
    if (strcmp(hc_gpu_arch(g), "sm_90a")) return; /* (Hopper only) */
    snprintf(path, sizeof path, "/tmp/hc-gpu-qlaps-%d.hconvert", (int)getpid());
    uint64_t rng = seed ^ 0x51ull;
    for (size_t hi = 0; hi < nshapes; hi++)
        for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
            const synth_spec *sp = &synth_specs[specs[si]];
            const uint64_t N = shapes[hi][0], K = shapes[hi][1];
            hc_container *c;
            hc_gpu_model *md;
            if (synth_gpu_model(g, path, what, sp, 1, N, K, false, seed + hi * 3 + si, &c, &md))
                continue;
            hc_tile_params p;
            double *w = dense_weights(c, "w", 0, &p);
            for (size_t mi = 0; w && mi < nm; mi++)
                for (size_t f = 0; f < nf; f++) {
                    const uint64_t M = ms[mi];
                    float *x = malloc(M * K * 4), *y = malloc(M * N * 4), *y2 = malloc(M * N * 4);
                    int ok = x && y && y2;
                    if (ok) random_bf16(x, M * K, &rng);
                    ok = ok && hc_gpu_model_force_kernel(md, forced[f], msg, sizeof msg) == HC_OK &&
                         hc_gpu_linear_host(md, "w", 0, x, M, K, y, N, msg, sizeof msg) == HC_OK &&
                         hc_gpu_linear_host(md, "w", 0, x, M, K, y2, N, msg, sizeof msg) == HC_OK;
                    if (hc_gpu_model_force_kernel(md, NULL, msg, sizeof msg)) ok = 0;
                    if (ok && memcmp(y, y2, M * N * 4)) { /* (the same bits on a second run) */
                        snprintf(msg, sizeof msg, "a second run gave other bits");
                        ok = 0;
                    }
                    uint64_t checked = 0, bad = 0;
                    double rel = 0;
                    if (ok) bad = compare_f64(y, w, x, M, N, K, true, &checked, &rng, &rel);
                    const int fine = ok && !bad && checked > 0;
                    printf("%s %s %-24s N=%-4llu K=%-4llu M=%-3llu %s: %llu checked, rel "
                           "err %.1e, %llu beyond the float64 bound%s%s\n",
                           fine ? "ok  " : "FAIL", what, sp->label, (unsigned long long)N,
                           (unsigned long long)K, (unsigned long long)M, forced[f],
                           (unsigned long long)checked, rel, (unsigned long long)bad,
                           ok ? "" : ": ", ok ? "" : msg);
                    passed += fine, failed += !fine;
                    free(x), free(y), free(y2);
                }
            free(w);
            hc_gpu_model_free(md);
            hc_container_free(c);
        }
    unlink(path);
}

/* Layers run back to back on one stream, each reading the output of the one before and the
 * third writing over the first one's input, with no synchronisation between them: the kernels
 * under programmatic dependent launch (small-M, skinny) start while the one before still runs,
 * and must read their activations and write Y and the workspace only after it is done. The
 * chain must give the bits of the same steps run one at a time (hc_gpu_linear_host, a sync
 * after each): the kernels are deterministic. Square layers, int4 and folded MXFP4, M = 1-100,
 * the runtime's pick and each skinny kernel forced. */
static void test_chain(hc_gpu *g, uint64_t seed) {
    enum { STEPS = 6 };
    static const size_t specs[] = {0, 7};
    static const uint64_t ms[] = {1, 16, 32, 64, 100};
    static const char *const forced[] = {"auto",      "skinny16",  "skinny32", "skinny64",
                                         "skinny16q", "skinny32q", "skinny64q", "ws128k"};
    enum { NF = sizeof forced / sizeof forced[0] };
    const uint64_t K = 2048;
    char path[256], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-chain-%d.hconvert", (int)getpid());
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
        const synth_spec *sp = &synth_specs[specs[si]];
        hc_container *c;
        hc_gpu_model *md;
        if (synth_gpu_model(g, path, "chain", sp, 1, K, K, false, seed + si, &c, &md)) continue;
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (int f = 0; f < NF; f++) {
                const uint64_t M = ms[mi], n = M * K;
                if (f > 0 && (strcmp(hc_gpu_arch(g), "sm_90a") ||
                              (M <= 16 && f != 1 && f != 4)))
                    continue; /* (skinny: Hopper only; at M <= 16 one forced tile is enough) */
                float *x = malloc(n * 4), *y = malloc(n * 4);
                uint16_t *hb = malloc(n * 2), *db = malloc(n * 2);
                void *d[2] = {NULL, NULL};
                uint64_t rng = seed ^ (M * 977 + (uint64_t)f), diff = 0;
                int ok = x && y && hb && db &&
                         hc_gpu_model_force_kernel(md, forced[f], msg, sizeof msg) == HC_OK;
                if (ok) random_bf16(x, n, &rng);
                for (uint64_t i = 0; ok && i < n; i++) hb[i] = bf16_bits(x[i]);
                ok = ok && hc__cuda.malloc_(&d[0], n * 2) == cudaSuccess &&
                     hc__cuda.malloc_(&d[1], n * 2) == cudaSuccess &&
                     hc__cuda.memcpy_(d[0], hb, n * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
                     hc__cuda.memset_(d[1], 0xFF, n * 2) == cudaSuccess &&
                     hc__cuda.sync() == cudaSuccess;
                for (int i = 0; ok && i < STEPS; i++) /* d0 -> d1 -> d0 -> ... */
                    ok = hc_gpu_linear(md, "w", 0, d[i & 1], M, K, d[!(i & 1)], K, NULL, msg,
                                       sizeof msg) == HC_OK;
                ok = ok && hc__cuda.sync() == cudaSuccess &&
                     hc__cuda.memcpy_(db, d[STEPS & 1], n * 2, cudaMemcpyDeviceToHost) ==
                         cudaSuccess;
                for (int i = 0; ok && i < STEPS; i++) { /* the same steps one at a time */
                    ok = hc_gpu_linear_host(md, "w", 0, x, M, K, y, K, msg, sizeof msg) == HC_OK;
                    memcpy(x, y, n * 4);
                }
                for (uint64_t i = 0; ok && i < n; i++)
                    diff += db[i] != bf16_bits(x[i]);
                int fine = ok && diff == 0;
                printf("%s chain of %d %s layers %llux%llu M=%llu %s back to back: %s\n",
                       fine ? "ok  " : "FAIL", STEPS, sp->label, (unsigned long long)K,
                       (unsigned long long)K, (unsigned long long)M, forced[f],
                       !ok ? msg : diff ? "outputs differ from the steps run one at a time"
                                         : "the bits of the steps run one at a time");
                if (!ok || diff) printf("     (%llu of %llu outputs differ)\n",
                                        (unsigned long long)diff, (unsigned long long)n);
                passed += fine, failed += !fine;
                hc_gpu_model_force_kernel(md, NULL, msg, sizeof msg);
                hc__cuda.free_(d[0]), hc__cuda.free_(d[1]);
                free(x), free(y), free(hb), free(db);
            }
        hc_gpu_model_free(md);
        hc_container_free(c);
    }
    unlink(path);
}

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
        if (ok) check_fast(g, c, cas, name, e, x, m, k, n);
        free(yc), free(yg);
    }
}

/* Entries of dir other than dot files (-1: cannot read it). */
static long count_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* `convert --target` precompiles the modules of a container's layers (hc_gpu_precompile) into
 * the cache: a later hc_gpu_model_load with the same cache finds them all (adds no cubin),
 * where without the precompile it adds some (so the count can tell). */
static void test_precompile_serves_the_runtime(const char *arch) {
    const char *old = getenv("HC_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL, msg[1024], path[256];
    snprintf(path, sizeof path, "/tmp/hc-gpu-pc-%d.hconvert", (int)getpid());
    hc_container *c = NULL;
    if (synth_container(path, &synth_specs[0], 1, 640, 2880, false, 5, NULL, msg, sizeof msg) ||
        hc_container_open(path, 1, &c, msg, sizeof msg)) {
        printf("FAIL precompile: container: %s\n", msg);
        failed++;
        free(saved);
        return;
    }
    long added[2] = {-1, -1}; /* cubins hc_gpu_model_load added: with, without the precompile */
    unsigned built = 0;
    for (int pre = 1; pre >= 0; pre--) {
        char dir[64];
        snprintf(dir, sizeof dir, "/tmp/hc-gpu-pc-XXXXXX");
        if (!mkdtemp(dir)) break;
        setenv("HC_CACHE_DIR", dir, 1);
        hc_gpu *g2 = NULL;
        hc_gpu_model *md = NULL;
        hc_status st = pre ? hc_gpu_precompile(c, arch, &built, msg, sizeof msg) : HC_OK;
        if (!st) st = hc_gpu_open(&g2, msg, sizeof msg);
        long before = count_files(dir);
        if (!st) st = hc_gpu_model_load(g2, c, NULL, &md, msg, sizeof msg);
        if (!st) added[pre] = count_files(dir) - before;
        else printf("precompile (%s): %s\n", pre ? "with" : "without", msg);
        hc_gpu_model_free(md);
        hc_gpu_free(g2);
        char rm[128];
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        if (system(rm) != 0) printf("warning: cannot remove %s\n", dir);
    }
    if (saved) setenv("HC_CACHE_DIR", saved, 1);
    else unsetenv("HC_CACHE_DIR");
    free(saved);
    hc_container_free(c);
    unlink(path);
    bool ok = built == 1 && added[1] == 0 && added[0] > 0;
    printf("%s precompile serves the runtime: %u module(s) precompiled for %s; the model load "
           "added %ld cubin(s) after it, %ld without it\n", ok ? "ok  " : "FAIL", built, arch,
           added[1], added[0]);
    passed += ok, failed += !ok;
}

int main(void) {
    /* a line a check, flushed as it is printed: a run cut short by a time limit (a hang) shows
     * the check it was in */
    setvbuf(stdout, NULL, _IOLBF, 0);
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
    /* HC_GPU_TEST_CHAIN_ONLY (bench/device_run.sh's pdlrace step): the back-to-back chains
     * alone, for racecheck on the kernels under programmatic dependent launch */
    if (getenv("HC_GPU_TEST_CHAIN_ONLY")) {
        test_chain(g, (uint64_t)time(NULL));
        hc_gpu_free(g);
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    test_precompile_serves_the_runtime(hc_gpu_arch(g));
    FILE *f = getenv("HC_GPU_TEST_QUICK") ? NULL : fopen("tests/fixtures/quant/cases.txt", "r");
    char cas[256];
    while (f && fscanf(f, "%255s", cas) == 1) {
        char path[1024], out[1024];
        snprintf(path, sizeof path, "tests/fixtures/quant/%s/run/index.json", cas);
        char *text = NULL;
        size_t tn = 0;
        hc_err err = {0};
        if (hc__read_file(path, 1 << 24, &text, &tn, &err)) continue;
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
                    if (hc__npy_read_2d(xp, HC_NPY_F32, xs, (void **)&x, &err) == HC_OK)
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
    uint64_t seed = (uint64_t)time(NULL);
    printf("synthetic layers, seed %llu\n", (unsigned long long)seed);
    synthetic_sweep(g, seed);
    static const char *const skq[] = {"skinny16q", "skinny32q", "skinny64q"}, *wsk[] = {"ws128k"};
    static const uint64_t skq_m[] = {16, 32, 64}, wsk_m[] = {17, 128, 200};
    test_laps(g, seed, "skinny-q laps", skq, 3, skq_m, 3);
    test_laps(g, seed, "ws stream-K", wsk, 1, wsk_m, 3);
    test_chain(g, seed);
    hc_gpu_free(g);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
