/* gpu_benchutil.h: what the GPU benchmarks (gpu_bench.c, moe_bench.c) share: failing with a
 * message, the CUDA and cuBLASLt call checks, opening the device (or saying why the run is
 * skipped) and the stream-read rate every run prints first, the float comparison for medians,
 * the median replay time of a CUDA graph. */
#ifndef HC_GPU_BENCHUTIL_H
#define HC_GPU_BENCHUTIL_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "hconvert.h"

static inline void die(const char *what, const char *msg) {
    fprintf(stderr, "%s: %s: %s\n", BENCH_NAME, what, msg);
    exit(1);
}
#define CK(call)                                                                           \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) die(#call, cudaGetErrorString(e_));                         \
    } while (0)
#define LT(call)                                                                           \
    do {                                                                                   \
        cublasStatus_t s_ = (call);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            char b_[32];                                                                   \
            snprintf(b_, sizeof b_, "status %d", (int)s_);                                 \
            die(#call, b_);                                                                \
        }                                                                                  \
    } while (0)

/* The device, or NULL after printing why the benchmark is skipped (no GPU: not a failure). */
static inline hc_gpu *bench_open(void) {
    hc_gpu *g = NULL;
    char msg[1024];
    if (hc_gpu_open(&g, msg, sizeof msg)) {
        printf("%s: skipped: %s\n", BENCH_NAME, msg);
        return NULL;
    }
    return g;
}

/* The stream-read rate (2 GiB, 20 passes), printed as the run's first line: the peer's rate
 * beside our figures. */
static inline double bench_stream(hc_gpu *g) {
    double stream = 0;
    char msg[1024];
    if (hc_gpu_stream_read(g, 2ull << 30, 20, &stream, msg, sizeof msg)) die("stream", msg);
    printf("%s on %s: stream read (2 GiB, 20 passes): %.0f GB/s (the memory's stated peak %llu "
           "GB/s)\n", BENCH_NAME, hc_gpu_arch(g), stream, (unsigned long long)hc_gpu_mem_gbps(g));
    return stream;
}

static inline int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median of 7 replays of graph ge on s, per call (calls in the graph). */
static inline double replay_us(cudaGraphExec_t ge, cudaStream_t s, int calls) {
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    float t[7];
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int r = 0; r < 7; r++) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&t[r], a, b));
    }
    CK(cudaGetLastError());
    qsort(t, 7, sizeof t[0], cmp_f);
    cudaEventDestroy(a), cudaEventDestroy(b);
    return (double)t[3] * 1e3 / calls;
}

#endif
