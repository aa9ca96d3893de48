/* gpu_bench.c (make bench-gpu): the fast kernels on the lent GPU beside their peers, measured in
 * the same run: the device's stream-read bandwidth, and cuBLASLt bf16 GEMM on the same shapes.
 * Layers: int4 g128 (BF16 scales) and MXFP4 (folded) at N=28672 K=8192 and N=K=8192, M from 1
 * to 8192. Weights rotate through several copies (experts of one tensor) of at least 200 MB
 * in all, past the 60 MB L2; cuBLASLt's bf16 weights rotate likewise. Each number is the median
 * of per-launch CUDA-event times after a warm-up; ours is also timed as CUDA-graph replays
 * (the kernels alone, no host launch cost), the number printed first. Small M prints weight
 * bytes per second
 * (tile bytes: codes + scales), large M TFLOP/s (2 M N K / time). The kernels' constants are
 * kernels/config.h: an experiment edits them on a branch and compares this benchmark's figures
 * before and after (there are no environment knobs). */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_diag.h" /* measurement modes, in a bench build (-DHC_BENCH_DIAG=1) only */
#include "hconvert.h"
#include "jit.h"
#define BENCH_NAME "gpu_bench"
#include "gpu_benchutil.h"
#include "tile_synth.h"

#define REPS 30
/* Median per-launch time in microseconds of fn(i) for i = 0..REPS-1 (after 3 warm-ups). */
typedef void (*launch_fn)(void *ctx, int i);
static double time_us(launch_fn fn, void *ctx) {
    cudaEvent_t ev[REPS + 1];
    for (int i = 0; i <= REPS; i++) CK(cudaEventCreate(&ev[i]));
    for (int i = 0; i < 3; i++) fn(ctx, i);
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < REPS; i++) {
        CK(cudaEventRecord(ev[i], 0));
        fn(ctx, i);
    }
    CK(cudaEventRecord(ev[REPS], 0));
    CK(cudaEventSynchronize(ev[REPS]));
    CK(cudaGetLastError());
    float t[REPS];
    for (int i = 0; i < REPS; i++) CK(cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]));
    for (int i = 0; i <= REPS; i++) cudaEventDestroy(ev[i]);
    qsort(t, REPS, sizeof t[0], cmp_f);
    return (double)t[REPS / 2] * 1e3;
}

typedef struct {
    hc_gpu_model *md;
    uint32_t copies;
    void *x, *y;
    uint64_t m, n, k;
    cudaStream_t s;
} ours_ctx;
static void ours(void *vc, int i) {
    ours_ctx *c = vc;
    char msg[512];
    if (hc_gpu_linear(c->md, "w", (uint32_t)i % c->copies, c->x, c->m, c->k, c->y, c->n, c->s,
                      msg, sizeof msg))
        die("hc_gpu_linear", msg);
}

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Cold compile (cache off) and warm load (cache hit) of a kernel module, printed first in the
 * default run (what a cold start pays for NVRTC; the kernel cache's gain). */
static void jit_time(const char *arch, const char *file, const char *const *opts, int nopts) {
    void *cubin = NULL;
    size_t size = 0;
    hc_err err = {0};
    hc__jit_set_cache(false);
    double t0 = wall();
    hc_status st = hc__jit_compile(file, arch, opts, nopts, &cubin, &size, &err);
    double cold = wall() - t0;
    hc__jit_set_cache(true);
    free(cubin);
    hc__jit_compile(file, arch, opts, nopts, &cubin, &size, &err); /* fill the cache */
    free(cubin);
    t0 = wall();
    st |= hc__jit_compile(file, arch, opts, nopts, &cubin, &size, &err);
    double warm = wall() - t0;
    free(cubin);
    printf("jit: %s %s for %s: cold compile %.1f ms, warm cache load %.3f ms (%zu-byte cubin)%s\n",
           file, nopts ? opts[0] : "", arch, cold * 1e3, warm * 1e3, size, st ? " FAILED" : "");
}

static void jit_times(const char *arch) {
    /* tile_mma.cu: the module of int4 layers with BF16 scales in groups of 128, no zero points */
    static const char *const ref[] = {"--fmad=false"},
                             *const mma[] = {"-DHC_CODEC=1", "-DHC_SK=1", "-DHC_LGS=2", "-DHC_ZP=0"};
    jit_time(arch, "tile_gemm.cu", ref, 1);
    jit_time(arch, "tile_mma.cu", mma, 4);
}

/* The kernel time without the host: REPS launches captured in a CUDA graph, the median of 7
 * replays, per launch. *host_us receives the host's own cost of one hc_gpu_linear call. */
static double graph_us(ours_ctx *c, double *host_us) {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    c->s = s;
    for (int i = 0; i < 3; i++) ours(c, i); /* warm-up: workspaces grown, nothing to allocate */
    CK(cudaStreamSynchronize(s));
    double t0 = wall();
    for (int i = 0; i < REPS; i++) ours(c, i);
    *host_us = (wall() - t0) / REPS * 1e6;
    CK(cudaStreamSynchronize(s));
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < REPS; i++) ours(c, i);
    CK(cudaStreamEndCapture(s, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    double us = replay_us(ge, s, REPS);
    cudaGraphExecDestroy(ge), cudaGraphDestroy(gr);
    cudaStreamDestroy(s);
    c->s = NULL;
    return us;
}

typedef struct {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    void *w[2], *x, *y, *ws;
    size_t ws_bytes;
} lt_ctx;
static void lt_run(void *vc, int i) {
    lt_ctx *c = vc;
    float one = 1.0f, zero = 0.0f;
    LT(cublasLtMatmul(c->h, c->op, &one, c->w[i % 2], c->a, c->x, c->b, &zero, c->y, c->c, c->y,
                      c->c, &c->algo, c->ws, c->ws_bytes, 0));
}

/* cuBLASLt bf16 (fp32 accumulation): Y[M,N] = X[M,K] W^T, column-major as Y^T = W X^T. */
static double lt_time(cublasLtHandle_t h, void *w0, void *w1, void *x, void *y, void *ws,
                      size_t ws_bytes, uint64_t m, uint64_t n, uint64_t k) {
    lt_ctx c = {.h = h, .w = {w0, w1}, .x = x, .y = y, .ws = ws, .ws_bytes = ws_bytes};
    LT(cublasLtMatmulDescCreate(&c.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT(cublasLtMatrixLayoutCreate(&c.a, CUDA_R_16BF, k, n, k));
    LT(cublasLtMatrixLayoutCreate(&c.b, CUDA_R_16BF, k, m, k));
    LT(cublasLtMatrixLayoutCreate(&c.c, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &ws_bytes, sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(h, c.op, c.a, c.b, c.c, c.c, pref, 1, &res, &found));
    if (!found) die("cuBLASLt", "no algorithm");
    c.algo = res.algo;
    double us = time_us(lt_run, &c);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(c.a), cublasLtMatrixLayoutDestroy(c.b);
    cublasLtMatrixLayoutDestroy(c.c), cublasLtMatmulDescDestroy(c.op);
    return us;
}

static void fill_bf16(void *dev, uint64_t count, uint64_t seed) {
    uint16_t *h = malloc(count * 2);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
    for (uint64_t i = 0; i < count; i++) { /* uniform-ish in (-1, 1), never zero-filled */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = (uint16_t)(0x3C00 + (s >> 40) % 0x380) | (uint16_t)((s >> 63) << 15);
    }
    CK(cudaMemcpy(dev, h, count * 2, cudaMemcpyHostToDevice));
    free(h);
}

/* The benchmarked layers (int4 g128, folded MXFP4) and shapes. */
static const uint64_t bench_shapes[][2] = {{28672, 8192}, {8192, 8192}};
static const synth_spec *bench_spec(int i) { return &synth_specs[i ? 7 : 0]; }

/* A container at path holding spec's layer [N, K] as enough copies (experts) to pass 200 MB,
 * the 60 MB L2 several times over; *copies receives their number. */
static hc_container *bench_container(const char *path, int si, uint64_t N, uint64_t K,
                                     uint32_t *copies) {
    char msg[1024];
    uint64_t one = N * K / 2 + (N / 64) * (K / 64) * 128; /* about a copy's bytes */
    *copies = (uint32_t)((200ull << 20) / one + 1);
    hc_container *c = NULL;
    if (synth_container(path, bench_spec(si), *copies, N, K, false, 3 + (uint64_t)si, NULL, msg,
                        sizeof msg) ||
        hc_container_open(path, 0, &c, msg, sizeof msg))
        die("layer", msg);
    return c;
}

/* bench_container's layer loaded on g (*c: the container, to free after the model). */
static hc_gpu_model *bench_model(hc_gpu *g, const char *path, int si, uint64_t N, uint64_t K,
                                 hc_container **c, uint32_t *copies) {
    char msg[1024];
    hc_gpu_model *md = NULL;
    *c = bench_container(path, si, N, K, copies);
    if (hc_gpu_model_load(g, *c, NULL, &md, msg, sizeof msg)) die("load", msg);
    return md;
}

/* HC_BENCH_SCALING=1: where the M = 1 time goes -- int4 g128 at K = 8192 over N (the time's
 * slope is the streaming rate, its intercept the fixed cost of a launch), each with the full
 * kernel and, in a bench build (-DHC_BENCH_DIAG=1), with the copy pipeline alone
 * (HC_GPU_DIAG_COPY_ONLY), and the stream read at several sizes. */
static void scaling(void) {
    static const uint64_t Ns[] = {4096, 8192, 16384, 28672, 33792, 57344};
    const uint64_t K = 8192;
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-scaling-%d.hconvert", (int)getpid());
    hc_gpu *g[2] = {NULL, NULL};
    int nd = 1; /* the full kernel; and the copies only, in a bench build */
    if (hc_gpu_open(&g[0], msg, sizeof msg)) die("scaling open", msg);
#ifdef HC_BENCH_DIAG
    if (hc_gpu_open(&g[1], msg, sizeof msg) ||
        hc__gpu_diag_set(g[1], HC_GPU_DIAG_COPY_ONLY, msg, sizeof msg))
        die("scaling open", msg);
    nd = 2;
#endif
    static const uint64_t sizes[] = {32ull << 20, 128ull << 20, 512ull << 20, 2048ull << 20};
    for (int i = 0; i < 4; i++) {
        double gbs = 0;
        if (hc_gpu_stream_read(g[0], sizes[i], 20, &gbs, msg, sizeof msg)) die("stream", msg);
        printf("scaling: stream read %5llu MiB x 20: %6.0f GB/s\n",
               (unsigned long long)(sizes[i] >> 20), gbs);
    }
    void *x, *y;
    CK(cudaMalloc(&x, K * 16 * 2));
    CK(cudaMalloc(&y, 57344ull * 16 * 2));
    fill_bf16(x, K * 16, 1);
    printf("scaling: int4 g128 K=8192 M=1 | N | weight MB | full kernel us GB/s | copies only "
           "us GB/s%s\n", nd < 2 ? " (in a bench build: -DHC_BENCH_DIAG=1)" : "");
    for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++) {
        uint64_t N = Ns[ni];
        uint32_t copies;
        hc_container *c = bench_container(path, 0, N, K, &copies);
        double us[2] = {0, 0}, mb = 0;
        for (int d = 0; d < nd; d++) {
            hc_gpu_model *md = NULL;
            if (hc_gpu_model_load(g[d], c, NULL, &md, msg, sizeof msg)) die("scaling load", msg);
            uint64_t layers, bytes;
            double secs;
            hc_gpu_model_stats(md, &layers, &bytes, &secs);
            mb = (double)bytes / copies / 1e6;
            ours_ctx oc = {md, copies, x, y, 1, N, K, NULL};
            double host = 0;
            us[d] = graph_us(&oc, &host);
            hc_gpu_model_free(md);
        }
        if (nd == 2)
            printf("scaling: %6llu %7.1f | %8.1f %6.0f | %8.1f %6.0f\n", (unsigned long long)N,
                   mb, us[0], mb / us[0] * 1e3, us[1], mb / us[1] * 1e3);
        else
            printf("scaling: %6llu %7.1f | %8.1f %6.0f | %8s %6s\n", (unsigned long long)N, mb,
                   us[0], mb / us[0] * 1e3, "-", "-");
        fflush(stdout);
        hc_container_free(c);
        unlink(path);
    }
    cudaFree(x), cudaFree(y);
    hc_gpu_free(g[0]), hc_gpu_free(g[1]);
}

/* HC_BENCH_KERNELS=1: the kernels that can run 1 <= M <= 128 side by side on the bench's four
 * layers (each forced with hc_gpu_model_force_kernel where its family serves M; "auto" is the
 * chooser's pick), to place the skinny family's range. */
static void kernel_sweep(hc_gpu *g) {
    static const uint64_t ms[] = {1, 8, 16, 24, 32, 48, 64, 96, 128};
    static const char *const ks[] = {"auto",  "skinny16", "skinny32", "skinny64",  "ws64",
                                     "ws128", "t8",       "t16",      "skinny16q", "skinny32q",
                                     "skinny64q", "ws128k"};
    /* the largest M each serves (ws64, ws128, ws128k -- v84, forced only --: from 17 up;
     * skinny16q/32q timed to 64, skinny64q to 128) */
    static const uint64_t kmax[] = {~0ull, 128, 128, 128, ~0ull, ~0ull, 8, 16, 64, 64, 128, ~0ull};
    /* Humming's figures on this H200 as issue 15 gives them, [layer][M = 16, 64] in the order
     * of the loops below (int4 28672, int4 8192^2, mxfp4 28672, mxfp4 8192^2) */
    static const double humming[4][2] = {{45.0, 66.0}, {17.6, 24.6}, {58.4, 75.8}, {22.1, 27.6}};
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-sweep-%d.hconvert", (int)getpid());
    double stream = bench_stream(g);
    cublasLtHandle_t lt;
    LT(cublasLtCreate(&lt));
    const size_t ws_bytes = 64ull << 20;
    void *x, *y, *ws;
    CK(cudaMalloc(&x, 128ull * 8192 * 2));
    CK(cudaMalloc(&y, 128ull * 28672 * 2));
    CK(cudaMalloc(&ws, ws_bytes));
    fill_bf16(x, 128ull * 8192, 1);
    printf("kernels: stream read %.0f GB/s\n", stream);
    printf("kernels: layer N x K M | us per kernel:");
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) printf(" %s", ks[ki]);
    printf(" | cuBLASLt bf16 | Humming (issue 15)\n");
    /* HC_BENCH_LAYER=1: the 8192^2 layers only (a short call) */
    const int h0 = getenv("HC_BENCH_LAYER") ? atoi(getenv("HC_BENCH_LAYER")) & 1 : 0;
    for (int si = 0; si < 2; si++)
        for (int hi = h0; hi < 2; hi++) {
            uint64_t N = bench_shapes[hi][0], K = bench_shapes[hi][1];
            uint32_t copies;
            hc_container *c = NULL;
            hc_gpu_model *md = bench_model(g, path, si, N, K, &c, &copies);
            void *wb[2]; /* the peer's bf16 weights, two copies (rotated like ours) */
            CK(cudaMalloc(&wb[0], N * K * 2));
            CK(cudaMalloc(&wb[1], N * K * 2));
            fill_bf16(wb[0], N * K, 11), fill_bf16(wb[1], N * K, 12);
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                printf("kernels: %-14.14s %5llux%-5llu %4llu |", bench_spec(si)->label,
                       (unsigned long long)N, (unsigned long long)K, (unsigned long long)ms[mi]);
                /* each kernel timed twice, the row forward then backward, the better time
                 * kept: the H200 clocks down under sustained load, and the kernel timed first
                 * in a row ran 3-9% faster than the same kernel timed later (session 17);
                 * "auto" a third time between the two (session 22: at the row's ends it read
                 * 3-7% slower than the same launch forced on 28672x8192) */
                enum { NK = sizeof ks / sizeof ks[0] };
                double best[NK];
                for (int pass = 0; pass < 2 * NK + 1; pass++) {
                    const size_t ki = pass < NK    ? (size_t)pass
                                      : pass == NK ? 0
                                                   : (size_t)(2 * NK - pass);
                    const bool wsk = ki == 4 || ki == 5 || ki == 11; /* (from M = 17) */
                    if (pass < NK) best[ki] = -1; /* (not served: "-") */
                    if (ms[mi] > kmax[ki] || (wsk && ms[mi] <= 16)) continue;
                    if (hc_gpu_model_force_kernel(md, ks[ki], msg, sizeof msg)) {
                        best[ki] = -2; /* (refused: "n/a") */
                        continue;
                    }
                    ours_ctx oc = {md, copies, x, y, ms[mi], N, K, NULL};
                    double host = 0, us = graph_us(&oc, &host);
                    if (best[ki] < 0 || us < best[ki]) best[ki] = us;
                }
                for (size_t ki = 0; ki < NK; ki++)
                    if (best[ki] >= 0)
                        printf(" %8.1f", best[ki]);
                    else
                        printf(" %8s", best[ki] == -1 ? "-" : "n/a");
                hc_gpu_model_force_kernel(md, NULL, msg, sizeof msg);
                double pus = lt_time(lt, wb[0], wb[1], x, y, ws, ws_bytes, ms[mi], N, K);
                const double hm = ms[mi] == 16 ? humming[si * 2 + hi][0]
                                  : ms[mi] == 64 ? humming[si * 2 + hi][1]
                                                 : 0;
                printf(" | %8.1f", pus);
                if (hm > 0) printf(" | %6.1f", hm);
                printf("\n");
                fflush(stdout);
            }
            cudaFree(wb[0]), cudaFree(wb[1]);
            hc_gpu_model_free(md);
            hc_container_free(c);
            unlink(path);
        }
    cublasLtDestroy(lt);
    cudaFree(x), cudaFree(y), cudaFree(ws);
}

#ifdef HC_BENCH_DIAG
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* HC_BENCH_TIMELINE=1 (a bench build): where a launch's time goes, per block and per SM (the
 * kernels' HC_GPU_DIAG_TIMELINE records of the last launch of a graph of back-to-back
 * launches), at M = 1 (small-M kernels) and M = 16, 64 (the skinny ones, whose fixed cost this
 * looks for: bench/NOTES.md session 17): the spread of block starts, the first tile's wait
 * (skinny: the first stage decoded, after the PDL wait), the loop (skinny: to the last
 * sums), the outputs (skinny: the last segment's store or fix-up), and the finishing time of
 * SMs by the number of blocks they ran. */
static void timeline(void) {
    static const struct {
        int si;
        uint64_t N, M;
    } cases[] = {{0, 8192, 1},  {0, 28672, 1},  {0, 33792, 1},  {1, 8192, 1},  {1, 28672, 1},
                 {0, 8192, 16}, {0, 28672, 16}, {1, 8192, 16},  {1, 28672, 16}, {0, 8192, 64},
                 {0, 28672, 64}, {1, 8192, 64}, {1, 28672, 64}};
    const uint64_t K = 8192;
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-timeline-%d.hconvert", (int)getpid());
    hc_gpu *g = NULL;
    if (hc_gpu_open(&g, msg, sizeof msg) ||
        hc__gpu_diag_set(g, HC_GPU_DIAG_TIMELINE, msg, sizeof msg))
        die("timeline open", msg);
    void *x, *y;
    CK(cudaMalloc(&x, K * 64 * 2));
    CK(cudaMalloc(&y, 33792ull * 64 * 2));
    fill_bf16(x, K * 64, 1);
    enum { MAXB = 8192, MAXSM = 1024 };
    static uint64_t rec[MAXB * 5], endt[MAXB], first[MAXB], smend[MAXSM];
    static unsigned smn[MAXSM];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        uint64_t N = cases[ci].N, M = cases[ci].M;
        uint32_t copies;
        hc_container *c = bench_container(path, cases[ci].si, N, K, &copies);
        hc_gpu_model *md = NULL;
        if (hc_gpu_model_load(g, c, NULL, &md, msg, sizeof msg)) die("timeline load", msg);
        ours_ctx oc = {md, copies, x, y, M, N, K, NULL};
        double host = 0, us = graph_us(&oc, &host);
        size_t nb = 0;
        if (hc__gpu_diag_timeline(md, rec, MAXB * 5, &nb, msg, sizeof msg)) die("timeline", msg);
        uint64_t t0 = UINT64_MAX, tmax0 = 0, tend = 0;
        for (size_t b = 0; b < nb; b++) {
            const uint64_t *r = rec + b * 5;
            t0 = r[1] < t0 ? r[1] : t0, tmax0 = r[1] > tmax0 ? r[1] : tmax0;
            tend = r[4] > tend ? r[4] : tend;
        }
        memset(smend, 0, sizeof smend), memset(smn, 0, sizeof smn);
        uint64_t loop = 0, tail = 0;
        for (size_t b = 0; b < nb; b++) {
            const uint64_t *r = rec + b * 5;
            unsigned sm = (unsigned)r[0] % MAXSM;
            smn[sm]++;
            smend[sm] = r[4] - t0 > smend[sm] ? r[4] - t0 : smend[sm];
            endt[b] = r[4] - t0, first[b] = r[2] - r[1];
            loop += r[3] - r[2], tail += r[4] - r[3];
        }
        qsort(endt, nb, sizeof endt[0], cmp_u64), qsort(first, nb, sizeof first[0], cmp_u64);
        printf("timeline: %s N=%llu K=%llu M=%llu: %.1f us per launch (graph); last launch: %zu "
               "blocks over %.2f us, starts spread %.2f us, first tile after %.2f (median) / "
               "%.2f (max) us, loop %.2f us and outputs %.2f us per block (mean); block ends at "
               "10/50/90/100%%: %.2f %.2f %.2f %.2f us\n",
               bench_spec(cases[ci].si)->label, (unsigned long long)N, (unsigned long long)K,
               (unsigned long long)M, us,
               nb, (double)(tend - t0) / 1e3, (double)(tmax0 - t0) / 1e3,
               (double)first[nb / 2] / 1e3, (double)first[nb - 1] / 1e3,
               (double)loop / (double)nb / 1e3, (double)tail / (double)nb / 1e3,
               (double)endt[nb / 10] / 1e3, (double)endt[nb / 2] / 1e3,
               (double)endt[nb * 9 / 10] / 1e3, (double)endt[nb - 1] / 1e3);
        for (unsigned k = 1; k <= 16; k++) { /* SMs by blocks run: how many, when they finish */
            unsigned cnt = 0;
            uint64_t sum = 0, mx = 0, mn = UINT64_MAX;
            for (unsigned sm = 0; sm < MAXSM; sm++)
                if (smn[sm] == k) {
                    cnt++, sum += smend[sm];
                    mx = smend[sm] > mx ? smend[sm] : mx, mn = smend[sm] < mn ? smend[sm] : mn;
                }
            if (cnt)
                printf("timeline:   %3u SMs ran %2u blocks: done at %.2f (min) %.2f (mean) "
                       "%.2f (max) us\n", cnt, k, (double)mn / 1e3, (double)sum / cnt / 1e3,
                       (double)mx / 1e3);
        }
        fflush(stdout);
        hc_gpu_model_free(md);
        hc_container_free(c);
        unlink(path);
    }
    cudaFree(x), cudaFree(y);
    hc_gpu_free(g);
}

/* HC_BENCH_FIXUP=1 (a bench build): what the skinny kernels' stream-K fix-up costs a launch --
 * each bench layer at M = 16, 32, 64 on the skinny kernel of that tile, timed as the sweep
 * times it and with the fix-up skipped (HC_GPU_DIAG_NO_FIXUP: a cut tile's segments are stored,
 * then no fence, arrival or sums; those tiles' outputs are wrong), side by side. Session 18's
 * timeline put a quarter of 8192^2's blocks 4.6 us after the rest at M = 16; this says how much
 * of that a back-to-back launch (under PDL) actually pays. */
static void fixup_cost(void) {
    static const uint64_t ms[] = {16, 32, 64};
    static const char *const ks[] = {"skinny16", "skinny32", "skinny64"};
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-fixup-%d.hconvert", (int)getpid());
    hc_gpu *g[2] = {NULL, NULL};
    if (hc_gpu_open(&g[0], msg, sizeof msg) || hc_gpu_open(&g[1], msg, sizeof msg) ||
        hc__gpu_diag_set(g[1], HC_GPU_DIAG_NO_FIXUP, msg, sizeof msg))
        die("fixup open", msg);
    void *x, *y;
    CK(cudaMalloc(&x, 64ull * 8192 * 2));
    CK(cudaMalloc(&y, 64ull * 28672 * 2));
    fill_bf16(x, 64ull * 8192, 1);
    printf("fixup: layer N x K M kernel | us: full, fix-up skipped | the fix-up's share\n");
    for (int si = 0; si < 2; si++)
        for (int hi = 0; hi < 2; hi++) {
            const uint64_t N = bench_shapes[hi][0], K = bench_shapes[hi][1];
            uint32_t copies;
            hc_container *c = bench_container(path, si, N, K, &copies);
            hc_gpu_model *md[2] = {NULL, NULL};
            for (int d = 0; d < 2; d++)
                if (hc_gpu_model_load(g[d], c, NULL, &md[d], msg, sizeof msg)) die("fixup load", msg);
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                double best[2] = {-1, -1};
                /* full, skipped, skipped, full: the better of two each (the clocks drift) */
                for (int pass = 0; pass < 4; pass++) {
                    const int d = pass == 1 || pass == 2;
                    if (hc_gpu_model_force_kernel(md[d], ks[mi], msg, sizeof msg)) die("fixup force", msg);
                    ours_ctx oc = {md[d], copies, x, y, ms[mi], N, K, NULL};
                    double host = 0, us = graph_us(&oc, &host);
                    if (best[d] < 0 || us < best[d]) best[d] = us;
                }
                printf("fixup: %-14.14s %5llux%-5llu %3llu %-8s | %7.1f %7.1f | %5.1f us (%4.1f%%)\n",
                       bench_spec(si)->label, (unsigned long long)N, (unsigned long long)K,
                       (unsigned long long)ms[mi], ks[mi], best[0], best[1], best[0] - best[1],
                       100.0 * (best[0] - best[1]) / best[0]);
                fflush(stdout);
            }
            hc_gpu_model_free(md[0]), hc_gpu_model_free(md[1]);
            hc_container_free(c);
            unlink(path);
        }
    cudaFree(x), cudaFree(y);
    hc_gpu_free(g[0]), hc_gpu_free(g[1]);
}
#endif

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* (a device call cut short keeps the lines printed) */
    if (getenv("HC_BENCH_TIMELINE")) {
#ifdef HC_BENCH_DIAG
        timeline();
        return 0;
#else
        fprintf(stderr, "gpu_bench: HC_BENCH_TIMELINE needs a bench build: make BUILD=build-diag "
                        "CFLAGS='-O2 -DHC_BENCH_DIAG=1' build-diag/bench/gpu_bench (docs/gpu.md)\n");
        return 2;
#endif
    }
    if (getenv("HC_BENCH_FIXUP")) {
#ifdef HC_BENCH_DIAG
        fixup_cost();
        return 0;
#else
        fprintf(stderr, "gpu_bench: HC_BENCH_FIXUP needs a bench build (as HC_BENCH_TIMELINE)\n");
        return 2;
#endif
    }
    if (getenv("HC_BENCH_SCALING")) {
        scaling();
        return 0;
    }
    hc_gpu *g = bench_open();
    if (!g) return 0;
    if (getenv("HC_BENCH_KERNELS")) {
        kernel_sweep(g);
        hc_gpu_free(g);
        return 0;
    }
    char msg[1024];
    jit_times(hc_gpu_arch(g));
    double stream = bench_stream(g);
    cublasLtHandle_t lt;
    LT(cublasLtCreate(&lt));
    static const uint64_t all_ms[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096, 8192};
    static uint64_t quick_ms[] = {1, 16, 4096};
    bool quick = getenv("HC_BENCH_QUICK") != NULL; /* for profiling runs */
    const uint64_t *ms = quick ? quick_ms : all_ms;
    size_t nms = quick ? 3 : sizeof all_ms / sizeof all_ms[0];
    const char *one_m = getenv("HC_BENCH_M"); /* profiling one M: HC_BENCH_QUICK=1 HC_BENCH_M=64 */
    if (quick && one_m && strtoull(one_m, NULL, 10) > 0)
        quick_ms[0] = strtoull(one_m, NULL, 10), nms = 1;
    size_t ws_bytes = 64ull << 20;
    void *ws, *x, *y;
    CK(cudaMalloc(&ws, ws_bytes));
    CK(cudaMalloc(&x, 8192ull * 8192 * 2));
    CK(cudaMalloc(&y, 8192ull * 28672 * 2));
    fill_bf16(x, 8192ull * 8192, 1);
    char path[128];
    snprintf(path, sizeof path, "/tmp/hc-gpu-bench-%d.hconvert", (int)getpid());
    printf("%-14s %-12s %5s | %9s %8s %6s | %9s %8s %6s | %s\n", "layer", "N x K", "M", "ours us",
           "GB/s", "TFLOPs", "cuBLAS us", "GB/s", "TFLOPs", "ours/peer");
    for (int si = 0; si < (quick ? 1 : 2); si++)
        for (int hi = 0; hi < 2; hi++) {
            uint64_t N = bench_shapes[hi][0], K = bench_shapes[hi][1];
            uint32_t copies;
            hc_container *c = NULL;
            hc_gpu_model *md = bench_model(g, path, si, N, K, &c, &copies);
            const char *force = getenv("HC_BENCH_FORCE"); /* profiling one kernel: ncu_profile.sh */
            if (force && hc_gpu_model_force_kernel(md, force, msg, sizeof msg)) die("force", msg);
            uint64_t layers, bytes;
            double secs;
            hc_gpu_model_stats(md, &layers, &bytes, &secs);
            double wbytes = (double)bytes / copies;
            printf("%s N=%llu K=%llu: %u copies, upload %.2f GB in %.2f s = %.2f GB/s\n",
                   bench_spec(si)->label, (unsigned long long)N, (unsigned long long)K, copies,
                   (double)bytes / 1e9, secs, (double)bytes / secs / 1e9);
            void *wb[2];
            CK(cudaMalloc(&wb[0], N * K * 2));
            CK(cudaMalloc(&wb[1], N * K * 2));
            fill_bf16(wb[0], N * K, 11), fill_bf16(wb[1], N * K, 12);
            for (size_t mi = 0; mi < nms; mi++) {
                uint64_t M = ms[mi];
                ours_ctx oc = {md, copies, x, y, M, N, K, NULL};
                double eager = time_us(ours, &oc), host = 0;
                double us = graph_us(&oc, &host);
                double pus = lt_time(lt, wb[0], wb[1], x, y, ws, ws_bytes, M, N, K);
                double fl = 2.0 * (double)M * (double)N * (double)K;
                printf("%-14.14s %5llux%-6llu %5llu | %9.1f %8.0f %6.1f | %9.1f %8.0f %6.1f | "
                       "%.2fx%s\n", bench_spec(si)->label, (unsigned long long)N,
                       (unsigned long long)K, (unsigned long long)M, us, wbytes / us * 1e-3,
                       fl / us * 1e-6, pus, (double)N * K * 2 / pus * 1e-3, fl / pus * 1e-6,
                       pus / us, "");
                printf("    (ours eager, one launch after another: %.1f us; host cost of a call "
                       "%.1f us)\n", eager, host);
                if (M == 1)
                    printf("    M=1: %.0f GB/s of weights = %.0f%% of the stream read\n",
                           wbytes / us * 1e-3, 100.0 * wbytes / us * 1e-3 / stream);
            }
            cudaFree(wb[0]), cudaFree(wb[1]);
            hc_gpu_model_free(md);
            hc_container_free(c);
            unlink(path);
        }
    cublasLtDestroy(lt);
    cudaFree(ws), cudaFree(x), cudaFree(y);
    hc_gpu_free(g);
    return 0;
}
