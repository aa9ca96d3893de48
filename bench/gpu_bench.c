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
 * before and after (there are no environment knobs). The measurement modes (kernel sweep,
 * scaling, timeline, fix-up cost) are gpu_bench_modes.c; what both files share, gpu_bench.h. */
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
#include "gpu_bench.h"
#include "tile_synth.h"

/* Median per-launch time in microseconds of fn(i) for i = 0..REPS-1 (after 3 warm-ups). */
double time_us(launch_fn fn, void *ctx) {
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

void ours(void *vc, int i) {
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
double graph_us(ours_ctx *c, double *host_us) {
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
double lt_time(cublasLtHandle_t h, void *w0, void *w1, void *x, void *y, void *ws,
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

void fill_bf16(void *dev, uint64_t count, uint64_t seed) {
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
const uint64_t bench_shapes[2][2] = {{28672, 8192}, {8192, 8192}};
static const synth_spec *bench_spec(int i) { return &synth_specs[i ? 7 : 0]; }
const char *bench_label(int si) { return bench_spec(si)->label; }

/* A container at path holding spec's layer [N, K] as enough copies (experts) to pass 200 MB,
 * the 60 MB L2 several times over; *copies receives their number. */
hc_container *bench_container(const char *path, int si, uint64_t N, uint64_t K,
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
hc_gpu_model *bench_model(hc_gpu *g, const char *path, int si, uint64_t N, uint64_t K,
                          hc_container **c, uint32_t *copies) {
    char msg[1024];
    hc_gpu_model *md = NULL;
    *c = bench_container(path, si, N, K, copies);
    if (hc_gpu_model_load(g, *c, NULL, &md, msg, sizeof msg)) die("load", msg);
    return md;
}

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
