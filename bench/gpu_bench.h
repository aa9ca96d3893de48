/* gpu_bench.h: what gpu_bench.c (the main table) and gpu_bench_modes.c (its measurement modes)
 * share: the timing of our launches (per-launch events, CUDA-graph replays) and of cuBLASLt,
 * the bench layers and the containers that hold them, and the modes' entry points. */
#ifndef HC_GPU_BENCH_H
#define HC_GPU_BENCH_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "hconvert.h"

#define REPS 30
/* Median per-launch time in microseconds of fn(i) for i = 0..REPS-1 (after 3 warm-ups). */
typedef void (*launch_fn)(void *ctx, int i);
double time_us(launch_fn fn, void *ctx);

/* One hc_gpu_linear of layer "w", copy i % copies (the rotation past L2). */
typedef struct {
    hc_gpu_model *md;
    uint32_t copies;
    void *x, *y;
    uint64_t m, n, k;
    cudaStream_t s;
} ours_ctx;
void ours(void *vc, int i);
double graph_us(ours_ctx *c, double *host_us);
/* cuBLASLt bf16 on [m, k] x [n, k]^T, two weight copies rotated */
double lt_time(cublasLtHandle_t h, void *w0, void *w1, void *x, void *y, void *ws,
               size_t ws_bytes, uint64_t m, uint64_t n, uint64_t k);
void fill_bf16(void *dev, uint64_t count, uint64_t seed);

/* The bench layers: si 0 int4 g128, 1 folded MXFP4; shapes [hi] = {N, K}. */
extern const uint64_t bench_shapes[2][2];
const char *bench_label(int si);
hc_container *bench_container(const char *path, int si, uint64_t N, uint64_t K,
                              uint32_t *copies);
hc_gpu_model *bench_model(hc_gpu *g, const char *path, int si, uint64_t N, uint64_t K,
                          hc_container **c, uint32_t *copies);

/* gpu_bench_modes.c */
void scaling(void);
void kernel_sweep(hc_gpu *g);
#ifdef HC_BENCH_DIAG
void timeline(void);
void fixup_cost(void);
#endif

#endif
