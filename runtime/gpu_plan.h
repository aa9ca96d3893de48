/* gpu_plan.h: the launch-shape decisions of the GPU runtime that need no GPU, as pure
 * functions, so that tests check them on any machine (tests/t_jit.c). */
#ifndef HC_GPU_PLAN_H
#define HC_GPU_PLAN_H
#include <stdint.h>

/* The K split of the small-M kernels (hc_mma_gemv_t*): grid = tiles_n x ksplit blocks on sms
 * multiprocessors holding occ resident blocks each -- the largest split whose grid is one wave
 * of resident blocks, a warp keeping at least two tiles (ksplit <= tiles_k / 8). Measured
 * against a per-multiprocessor balance model (28672 rows split in 2: slower) and against
 * leaving resident places free for the next kernel under PDL (slower): bench/NOTES.md v24,
 * v28. */
static inline unsigned hc_gemv_ksplit(uint64_t tiles_n, uint64_t tiles_k, uint64_t sms,
                                      uint64_t occ) {
    uint64_t most = tiles_k / 8;
    if (most < 1) most = 1;
    if (tiles_n < 1 || sms < 1 || occ < 1) return 1;
    uint64_t want = sms * occ / tiles_n;
    return (unsigned)(want < 1 ? 1 : want < most ? want : most);
}

#endif
