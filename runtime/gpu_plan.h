/* gpu_plan.h: the launch-shape decisions of the GPU runtime that need no GPU, as pure
 * functions, so that tests check them on any machine (tests/t_jit.c). */
#ifndef HC_GPU_PLAN_H
#define HC_GPU_PLAN_H
#include <stdint.h>

/* The K split of the small-M kernels (hc_mma_gemv_t*): grid = tiles_n x ksplit blocks on sms
 * multiprocessors holding occ resident blocks each; a warp keeps at least two tiles (ksplit <=
 * tiles_k / 8).
 * balance = 0 (the default, measured): the largest split whose grid is one wave of resident
 * blocks.
 * balance = 1 (HC_GEMV_BALANCE, a model, bench/NOTES.md v24): the split that minimises the
 * busiest multiprocessor's time, taking a full multiprocessor as bound by its own issue rate
 * (the small-M kernels are: v15, v19) -- its ceil(tiles_n ks / sms) blocks run occ at a time --
 * and a block's warps as streaming tiles_k / (4 ks) tiles each plus HC_GEMV_FILL_TILES tiles'
 * worth of pipeline fill and drain: time(ks) = max(ceil(tiles_n ks / sms) / occ, 1) x
 * (tiles_k / (4 ks) + fill), the smallest ks on ties. 28672 rows (448 stripes on 132 x 4
 * places) then split in 2: 896 half-stripe blocks, at most 7 per multiprocessor (3.5 stripes)
 * instead of 4 whole ones. */
#define HC_GEMV_FILL_TILES 3.0
static inline unsigned hc_gemv_ksplit(uint64_t tiles_n, uint64_t tiles_k, uint64_t sms,
                                      uint64_t occ, int balance) {
    uint64_t most = tiles_k / 8;
    if (most < 1) most = 1;
    if (tiles_n < 1 || sms < 1 || occ < 1) return 1;
    if (!balance) {
        uint64_t want = sms * occ / tiles_n;
        return (unsigned)(want < 1 ? 1 : want < most ? want : most);
    }
    if (most > 64) most = 64; /* (the model's search) */
    unsigned best = 1;
    double best_t = 0;
    for (uint64_t ks = 1; ks <= most; ks++) {
        double per_sm = (double)((tiles_n * ks + sms - 1) / sms) / (double)occ;
        double t = (per_sm > 1 ? per_sm : 1) * ((double)tiles_k / (4.0 * (double)ks) + HC_GEMV_FILL_TILES);
        if (ks == 1 || t < best_t * (1 - 1e-9)) best = (unsigned)ks, best_t = t;
    }
    return best;
}

#endif
