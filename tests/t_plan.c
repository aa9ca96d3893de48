/* t_plan.c: the GPU runtime's decisions for dense layers that need no GPU (runtime/gpu_plan.h
 * over the family registry runtime/gpu_families.h): which kernel runs a layer for M tokens on a
 * device, with what grid, block, shared memory and K split (the stream-K cut itself replayed:
 * t_walk.c); the forced-kernel names and refusals; the M limits; and
 * that GPU error messages carry their prefix once (MoE: t_moe_plan.c). Expected figures are worked out
 * here from the rules as docs/gpu.md states them and from the kernels' own comments on their
 * shared memory (kernels/tile_mma.cu), not taken from the chooser. */
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "streamk_rule.h"
#include "gpu/tile_synth.h"
#include "gpu_plan.h"
#include "jit.h"
#include "plan_fixtures.h"
#include "test.h"


static hc_gpu_choice choose_ok(const hc_gpu_caps *dev, const hc_gpu_shape *l, uint64_t m,
                               int forced) {
    hc_gpu_choice c;
    hc_err err = {0};
    hc_status st = hc__gpu_choose(dev, l, m, forced, &c, &err);
    if (st) CHECK_FAIL_("M=%llu: %s", (unsigned long long)m, err.msg);
    return c;
}

/* M <= 16 on the H200: t1 / t8 / t16, grid (stripes / the variant's stripes a block: t16
 * HC_GEMV_STRIPES) x ksplit (one wave of 132 x 4 resident blocks, at most tiles_k / 8), 128
 * threads, PDL -- on the 28672-row layer too (its 128 items a block are past
 * HC_SKINNY16_MAX_ITEMS); 8192 x 2048 has too few work items for the skinny kernel. */
static void test_small_m(void) {
    hc_gpu_shape big = layer(28672, 8192, 2176), sq = layer(8192, 2048, 2176);
    static const struct {
        uint64_t m;
        hc_gpu_kernel k;
        unsigned toks;
    } ms[] = {{1, HC_GK_GEMV_T1, 8}, {2, HC_GK_GEMV_T8, 8}, {8, HC_GK_GEMV_T8, 8},
              {9, HC_GK_GEMV_T16, 16}, {16, HC_GK_GEMV_T16, 16}};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        hc_gpu_choice c = choose_ok(&h200, &big, ms[i].m, HC_GPU_KERNEL_AUTO);
        if (ms[i].m <= 8) {
            CHECK_EQ_INT(c.kernel, ms[i].k);
            CHECK_EQ_INT(c.grid[0], 448); /* 28672 / 64 stripes, 528 / 448 = 1: no split */
            CHECK_EQ_INT(c.grid[1], 1);
            CHECK_EQ_INT(c.ksplit, 1);
            CHECK_EQ_INT(c.block, 128);
            CHECK_EQ_U64(c.cnt_bytes, 0);
            CHECK_EQ_INT(c.tmap_toks, 0);
        } else { /* two stripes a block: 224 blocks, 264 / 224 = 1 */
            CHECK_EQ_INT(c.kernel, HC_GK_GEMV_T16);
            CHECK_EQ_INT(c.grid[0], 224);
            CHECK_EQ_INT(c.ksplit, 2); /* (the fixture's 4 resident: 528 / 224) */
        }
        c = choose_ok(&h200, &sq, ms[i].m, HC_GPU_KERNEL_AUTO);
        CHECK_EQ_INT(c.kernel, ms[i].k);
        /* 128 stripes; t16 (chunks <= 2560 bytes): 64 blocks of 2, 528 / 64 = 8 cut to 32 / 8 */
        CHECK_EQ_INT(c.grid[0], ms[i].toks == 16 ? 64 : 128);
        CHECK_EQ_INT(c.ksplit, 4); /* 528 / 128 = 4 <= 32 / 8 */
        CHECK_EQ_INT(c.grid[1], 4);
        CHECK_EQ_U64(c.part_bytes, 4ull * 128 * 64 * ms[i].toks * 4); /* float partial sums */
        CHECK_EQ_U64(c.cnt_bytes, 128 * 4);
    }
    hc_gpu_choice c = choose_ok(&h200, &sq, 1, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_U64(c.smem, 4 * (HC_GEMV1_STAGES * (2176 + 128) + 128));
    /* t16: each stage a chunk for each of the block's stripes and 16 activation rows */
    c = choose_ok(&h200, &sq, 16, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_U64(c.smem, 4 * HC_GEMV_STAGES * (2 * 2176 + 16 * 128));
    /* one stripe a block where chunks are larger (int8: 5376 bytes) */
    hc_gpu_shape wide8 = layer(8192, 2048, 5376);
    c = choose_ok(&h200, &wide8, 16, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(c.kernel, HC_GK_GEMV_T16);
    CHECK_EQ_INT(c.grid[0], 128);
    CHECK_EQ_U64(c.smem, 4 * HC_GEMV_STAGES * (5376 + 16 * 128));
    /* the resident blocks are the layer's: 2 per SM halve the split; unknown: none */
    sq.gemv_occ[0] = 2;
    CHECK_EQ_INT(choose_ok(&h200, &sq, 1, HC_GPU_KERNEL_AUTO).ksplit, 2);
    sq.gemv_occ[0] = 0;
    CHECK_EQ_INT(choose_ok(&h200, &sq, 1, HC_GPU_KERNEL_AUTO).ksplit, 1);
    /* 640 x 2880 (10 x 45 tiles): 528 / 10 = 52, cut to 45 / 8 = 5 (two tiles a warp) */
    hc_gpu_shape small = layer(640, 2880, 2176);
    CHECK_EQ_INT(choose_ok(&h200, &small, 16, HC_GPU_KERNEL_AUTO).ksplit, 5);
    /* the same small-M kernels off Hopper */
    hc_gpu_caps a100 = {"sm_80", 108, true, 167936, 166912};
    c = choose_ok(&a100, &small, 7, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(c.kernel, HC_GK_GEMV_T8);
    CHECK_EQ_INT(c.ksplit, 5); /* 432 / 10 = 43, cut to 5 */
}

/* M > 16 on the H200: the warp-specialised kernel, 128 weight rows (two stripes) x the token
 * tile per block of 384 threads; the largest tile at most half empty, halved while the grid
 * (stripe pairs x token tiles) x 4 stays under 3 x 132 = 396 (a quarter of the SMs idle).
 * (8192 x 8192 at M = 100, which would shrink to ws64, is skinny64's: test_skinny.) */
static void test_warp_specialised_tiles(void) {
    static const struct {
        uint64_t n, m;
        hc_gpu_kernel k;
        unsigned gx, gy;
    } cases[] = {
        {28672, 65, HC_GK_WS128, 224, 1},  /* 224 pairs: never shrunk */
        {28672, 256, HC_GK_WS256, 224, 1},
        {28672, 1024, HC_GK_WS256, 224, 4},
        {28672, 8192, HC_GK_WS256, 224, 32},
        {8192, 129, HC_GK_WS128, 64, 2},   /* 256: 256 < 396 -> 128: 512 */
        {8192, 256, HC_GK_WS128, 64, 2},
        {8192, 1024, HC_GK_WS256, 64, 4},  /* 64 x 4 x 4 = 1024 */
        {640, 4096, HC_GK_WS128, 5, 32},   /* 5 pairs: 5 x 16 x 4 = 320 < 396 -> 128 */
        {64, 4096, HC_GK_WS64, 1, 64},     /* 1 pair: 64 x 4 = 256 < 396 -> 64 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_gpu_shape l = layer(cases[i].n, 8192, 2176);
        hc_gpu_choice c = choose_ok(&h200, &l, cases[i].m, HC_GPU_KERNEL_AUTO);
        if (c.kernel != cases[i].k || c.grid[0] != cases[i].gx || c.grid[1] != cases[i].gy)
            CHECK_FAIL_("N=%llu M=%llu: kernel %d grid %u x %u, want %d %u x %u",
                        (unsigned long long)cases[i].n, (unsigned long long)cases[i].m, c.kernel,
                        c.grid[0], c.grid[1], cases[i].k, cases[i].gx, cases[i].gy);
        unsigned toks = cases[i].k == HC_GK_WS64 ? 64 : cases[i].k == HC_GK_WS128 ? 128 : 256;
        CHECK_EQ_INT(c.block, 384);
        CHECK_EQ_INT(c.tmap_toks, toks);
        CHECK_EQ_U64(c.smem, 1024 + HC_WIDE_STAGES * round1024(toks * 128 + 2 * 2176));
    }
}

/* 16 < M <= 64 on the H200: the skinny kernel with the smallest token tile holding M, a
 * persistent grid of one block per SM (fewer where a block would get under 8 work items:
 * items = ceil(tiles_n / 4) x token tiles x tiles_k), 640 threads, two segments of 256 rows x
 * toks float32 sums a block, a counter per output tile; 64 < M <= 128 skinny64 over two token
 * tiles where ws64's grid would be under two waves. Forced, it runs any M <= 128. */
static void test_skinny(void) {
    static const struct {
        uint64_t n, k, m;
        int forced;
        hc_gpu_kernel want;
        unsigned blocks;
        uint64_t units;
    } cases[] = {
        {28672, 8192, 17, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY32, 132, 112}, /* 112 x 128 items */
        {28672, 8192, 32, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY32, 132, 112},
        {28672, 8192, 33, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY64, 132, 112},
        {8192, 8192, 64, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY64Q, 128, 1}, /* 128 stripes */
        {8192, 8192, 33, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY64Q, 128, 1},
        {8192, 8192, 16, HC_GK_SKINNY16, HC_GK_SKINNY16, 132, 32},
        {8192, 8192, 64, HC_GK_SKINNY16, HC_GK_SKINNY16, 132, 128},     /* 4 token tiles */
        {640, 2880, 64, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY64, 16, 3},    /* 3 x 45 = 135 items */
        {200, 70, 20, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY32, 1, 1},       /* 2 items: one block */
        /* 8 < M <= 16 on a layer with 16 to 64 items a block: 32 x 128 = 4096 >= 16 x 132 --
         * and there 128 stripes, 99 <= 128 <= 132 output tiles of one stripe: skinny-q, a
         * tile a block (units 1: skinny-q has no counters, 4 bytes) */
        {8192, 8192, 16, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY16Q, 128, 1},
        {8192, 8192, 9, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY16Q, 128, 1},
        {8192, 12288, 12, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY16Q, 128, 1}, /* 32 x 192 = 6144 */
        {8192, 8192, 17, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY32Q, 128, 1},
        {8192, 8192, 32, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY32Q, 128, 1},
        /* 96 stripes (6144 rows): 96 < 99 -- a quarter of the SMs idle: stream-K */
        {6144, 8192, 32, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY32, 132, 24},
        /* 8192 x 1792: 28 K tiles, 7 quads < HC_SKINNY_MIN_TILES: stream-K (896 items, 8 a
         * block) */
        {8192, 1792, 32, HC_GPU_KERNEL_AUTO, HC_GK_SKINNY32, 112, 32},
        /* forced: any shape, a block per tile up to the SMs (11 stripes x 4 token tiles;
         * 448 stripes on 132 blocks, 3 or 4 tiles each) */
        {704, 2880, 64, HC_GK_SKINNY16Q, HC_GK_SKINNY16Q, 44, 1},
        {28672, 8192, 16, HC_GK_SKINNY16Q, HC_GK_SKINNY16Q, 132, 1},
        {8192, 8192, 64, HC_GK_SKINNY32Q, HC_GK_SKINNY32Q, 132, 1},
        /* skinny64q (v60) forced: past one token tile too */
        {8192, 8192, 64, HC_GK_SKINNY64Q, HC_GK_SKINNY64Q, 128, 1},
        {8192, 8192, 128, HC_GK_SKINNY64Q, HC_GK_SKINNY64Q, 132, 1}, /* 256 tiles */
        {704, 4096, 40, HC_GK_SKINNY64Q, HC_GK_SKINNY64Q, 11, 1},
        /* (64 < M <= 128 where ws64's grid is under 2 x 132 blocks -- 8192^2 -- the skinny
         * family's place goes to ws128k: test_ws_streamk) */
        {28672, 8192, 128, HC_GK_SKINNY64, HC_GK_SKINNY64, 132, 224}, /* forced: 112 x 2 */
        {8192, 8192, 128, HC_GK_SKINNY32, HC_GK_SKINNY32, 132, 128},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t chunk = cases[i].n == 200 ? 2304 : 2176;
        hc_gpu_shape l = layer(cases[i].n, cases[i].k, chunk);
        hc_gpu_choice c = choose_ok(&h200, &l, cases[i].m, cases[i].forced);
        if (c.kernel != cases[i].want || c.grid[0] != cases[i].blocks || c.grid[1] != 1)
            CHECK_FAIL_("N=%llu M=%llu: kernel %d grid %u x %u, want %d %u x 1",
                        (unsigned long long)cases[i].n, (unsigned long long)cases[i].m, c.kernel,
                        c.grid[0], c.grid[1], cases[i].want, cases[i].blocks);
        const hc_gpu_kernel w = cases[i].want;
        const bool q = w == HC_GK_SKINNY16Q || w == HC_GK_SKINNY32Q || w == HC_GK_SKINNY64Q;
        unsigned toks = w == HC_GK_SKINNY16 || w == HC_GK_SKINNY16Q   ? 16
                        : w == HC_GK_SKINNY32 || w == HC_GK_SKINNY32Q ? 32
                                                                      : 64;
        CHECK_EQ_INT(c.block, 640);
        CHECK_EQ_INT(c.tmap_toks, toks);
        CHECK_EQ_U64(c.part_bytes, (uint64_t)cases[i].blocks * 2 * 256 * toks * 4);
        CHECK_EQ_U64(c.cnt_bytes, cases[i].units * 4);
        CHECK_EQ_U64(c.smem, q ? 1024 + skinny_q_stages(toks, chunk) *
                                            round1024(4 * toks * 128 + 4 * chunk) +
                                     3 * 128 * toks / 2 * 4
                               : 1024 + skinny_stages(toks, chunk) *
                                            round1024(toks * 128 + 4 * chunk));
    }
    /* M <= 8 stays small-M, and M <= 16 where a block would get under 16 items (8192 x 2048:
     * 32 x 32 = 1024 < 16 x 132; 4096^2: 16 x 64 = 1024) unless forced, but not 8192^2 (32 x
     * 128 = 4096 >= 2112); M = 65-128 goes to the warp-specialised kernel where its grid is
     * two waves or more (28672 x 8192: 224 pairs x 2 = 448; 8192 x 16384 at M = 129-192: 64 x 3
     * = 192 < 264, but skinny stops at 128) -- and where the skinny family would run it
     * there, ws128k (test_ws_streamk); off Hopper or without tensor maps there is no skinny
     * kernel */
    hc_gpu_shape sq = layer(8192, 8192, 2176), big = layer(28672, 8192, 2176);
    hc_gpu_shape wide = layer(8192, 2048, 2176), small = layer(4096, 4096, 2176);
    CHECK_EQ_INT(choose_ok(&h200, &sq, 16, HC_GPU_KERNEL_AUTO).kernel, HC_GK_SKINNY16Q);
    CHECK_EQ_INT(choose_ok(&h200, &sq, 9, HC_GPU_KERNEL_AUTO).kernel, HC_GK_SKINNY16Q);
    /* a forced kernel that does not serve M leaves the whole pick to the runtime, skinny-q
     * included; a forced skinny16 stays skinny16 */
    CHECK_EQ_INT(choose_ok(&h200, &sq, 16, HC_GK_GEMV_T8).kernel, HC_GK_SKINNY16Q);
    CHECK_EQ_INT(choose_ok(&h200, &sq, 32, HC_GK_GEMV_T16).kernel, HC_GK_SKINNY32Q);
    CHECK_EQ_INT(choose_ok(&h200, &sq, 16, HC_GK_SKINNY16).kernel, HC_GK_SKINNY16);
    /* from 64 items a block the two-stripe t16 again (4-bit chunks): 28672 x 8192 (112 x 128
     * = 14336 >= 64 x 132), 8192 x 33792 (32 x 528 = 16896); a chunk over 2560 bytes (t16 of
     * one stripe) keeps skinny16 */
    hc_gpu_shape tall = layer(8192, 33792, 2176), big8 = layer(28672, 8192, 4224);
    CHECK_EQ_INT(choose_ok(&h200, &big, 16, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T16);
    CHECK_EQ_INT(choose_ok(&h200, &big, 9, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T16);
    CHECK_EQ_INT(choose_ok(&h200, &tall, 12, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T16);
    CHECK_EQ_INT(choose_ok(&h200, &big8, 16, HC_GPU_KERNEL_AUTO).kernel, HC_GK_SKINNY16);
    CHECK_EQ_INT(choose_ok(&h200, &wide, 16, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T16);
    CHECK_EQ_INT(choose_ok(&h200, &small, 16, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T16);
    CHECK_EQ_INT(choose_ok(&h200, &big, 8, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T8);
    CHECK_EQ_INT(choose_ok(&h200, &big, 1, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T1);
    CHECK_EQ_INT(choose_ok(&h200, &big, 65, HC_GPU_KERNEL_AUTO).kernel, HC_GK_WS128);
    CHECK_EQ_INT(choose_ok(&h200, &big, 128, HC_GPU_KERNEL_AUTO).kernel, HC_GK_WS128);
    CHECK_EQ_INT(choose_ok(&h200, &sq, 129, HC_GPU_KERNEL_AUTO).kernel, HC_GK_WS128);
    CHECK_EQ_INT(choose_ok(&h200, &small, 100, HC_GPU_KERNEL_AUTO).kernel, HC_GK_WS128K);
    hc_gpu_caps notmap = {"sm_90a", 132, false, 233472, 232448}, a100 = {"sm_80", 108, true, 167936, 166912};
    CHECK_EQ_INT(choose_ok(&notmap, &sq, 64, HC_GPU_KERNEL_AUTO).kernel, HC_GK_WGMMA);
    CHECK_EQ_INT(choose_ok(&a100, &sq, 64, HC_GPU_KERNEL_AUTO).kernel, HC_GK_MMA);
    hc_gpu_choice c;
    hc_err err = {0};
    CHECK_EQ_INT(hc__gpu_choose(&a100, &sq, 64, HC_GK_SKINNY64, &c, &err), HC_UNSUPPORTED);
    CHECK(strstr(err.msg, "skinny64") != NULL);
    /* a forced skinny kernel past M = 128 is not its family's call: the runtime picks */
    CHECK_EQ_INT(choose_ok(&h200, &sq, 129, HC_GK_SKINNY64).kernel, HC_GK_WS128);
}

/* ws128k (v84, forced only): ws128's output tiles of a pair x 128 tokens, K tiles fastest, cut
 * stream-K over a block per SM (streamk_rule.h; HC_SKINNY_MIN_TILES items a block at least):
 * 28672 x 8192 at M = 128 -- 224 tiles x 128 K tiles = 28672 items on 132 blocks; 8192^2 -- 64
 * tiles, 8192 items; a small layer -- 6 tiles x 4 K tiles = 24 items, 3 blocks of 8. Segments
 * sized as the skinny kernels' (two slots of 256 rows x 128 tokens a block: twice what its 128
 * rows need), a counter a tile; the chooser's past 64 tokens where the skinny family would run
 * two token tiles (gpu_plan.c streamk_tiles_instead). */
static void test_ws_streamk(void) {
    static const struct {
        uint64_t n, k;
        unsigned blocks, units;
    } cases[] = {{28672, 8192, 132, 224}, {8192, 8192, 132, 64}, {704, 256, 3, 6}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_gpu_shape l = layer(cases[i].n, cases[i].k, 2176);
        hc_gpu_choice c = choose_ok(&h200, &l, 128, HC_GK_WS128K);
        CHECK_EQ_INT(c.kernel, HC_GK_WS128K);
        CHECK_EQ_INT(c.grid[0], cases[i].blocks);
        CHECK_EQ_INT(c.grid[1], 1);
        CHECK_EQ_INT(c.block, 384);
        CHECK_EQ_INT(c.tmap_toks, 128);
        CHECK_EQ_U64(c.part_bytes, (uint64_t)cases[i].blocks * 2 * 256 * 128 * 4);
        CHECK_EQ_U64(c.cnt_bytes, cases[i].units * 4);
        CHECK_EQ_U64(c.smem, 1024 + HC_WIDE_STAGES * round1024(128 * 128 + 2 * 2176) +
                                 round1024(128 * 136 * 2));
        /* unforced: where the skinny family would take M = 65-128 over two token tiles
         * (ws64's grid of pairs x 2 under two waves: 8192^2's 128, the small layer's 12), not
         * 28672 x 8192 (448: ws128) */
        CHECK_EQ_INT(choose_ok(&h200, &l, 128, HC_GPU_KERNEL_AUTO).kernel,
                     cases[i].n == 28672 ? HC_GK_WS128 : HC_GK_WS128K);
        CHECK_EQ_INT(choose_ok(&h200, &l, 65, HC_GPU_KERNEL_AUTO).kernel,
                     cases[i].n == 28672 ? HC_GK_WS128 : HC_GK_WS128K);
        /* and never past 128 or at 64 and under */
        CHECK(choose_ok(&h200, &l, 129, HC_GPU_KERNEL_AUTO).kernel != HC_GK_WS128K);
        CHECK(choose_ok(&h200, &l, 64, HC_GPU_KERNEL_AUTO).kernel != HC_GK_WS128K);
    }
    /* off Hopper, no ws128k: the skinny family's absence leaves M = 100 to the others */
    hc_gpu_caps a100 = {"sm_80", 108, true, 167936, 166912};
    hc_gpu_shape sq = layer(8192, 8192, 2176);
    CHECK_EQ_INT(choose_ok(&a100, &sq, 100, HC_GPU_KERNEL_AUTO).kernel, HC_GK_MMA);
    /* M = 333: three token tiles (the last short), 224 x 3 tiles */
    hc_gpu_shape big = layer(28672, 8192, 2176);
    CHECK_EQ_U64(choose_ok(&h200, &big, 333, HC_GK_WS128K).cnt_bytes, 224 * 3 * 4);
}

/* Without the tensor-map encoder Hopper runs the 128-token wgmma kernel; other architectures
 * the mma.sync one; both 256 threads over (stripe pairs) x ceil(M / 128). */
static void test_fallbacks(void) {
    hc_gpu_caps notmap = {"sm_90a", 132, false, 233472, 232448}, a100 = {"sm_80", 108, true, 167936, 166912};
    hc_gpu_shape l = layer(8192, 8192, 2304);
    hc_gpu_choice c = choose_ok(&notmap, &l, 17, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(c.kernel, HC_GK_WGMMA);
    CHECK_EQ_INT(c.grid[0], 64);
    CHECK_EQ_INT(c.grid[1], 1);
    CHECK_EQ_INT(c.block, 256);
    CHECK_EQ_INT(c.tmap_toks, 0);
    CHECK_EQ_U64(c.smem, 1024 + HC_WGMMA_STAGES * round1024(16384 + 2 * 2304));
    c = choose_ok(&a100, &l, 4096, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(c.kernel, HC_GK_MMA);
    CHECK_EQ_INT(c.grid[1], 32);
    CHECK_EQ_INT(c.block, 256);
    CHECK_EQ_U64(c.smem, HC_GEMM_STAGES * (2 * 2304 + 16384));
    /* an odd number of stripes: the last pair is half a block */
    hc_gpu_shape odd = layer(150, 70, 2304); /* 3 stripes */
    CHECK_EQ_INT(choose_ok(&a100, &odd, 333, HC_GPU_KERNEL_AUTO).grid[0], 2);
}

/* Forced kernels: the names, where they apply (M > 16), and their refusals. */
static void test_forced_kernels(void) {
    hc_err err = {0};
    int f = 0;
    static const char *const names[] = {"mma", "wgmma", "ws64", "ws128", "ws256"};
    static const hc_gpu_kernel ids[] = {HC_GK_MMA, HC_GK_WGMMA, HC_GK_WS64, HC_GK_WS128,
                                        HC_GK_WS256};
    hc_gpu_shape l = layer(8192, 8192, 2176);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(hc__gpu_force_parse(names[i], &f, &err), HC_OK);
        CHECK_EQ_INT(f, ids[i]);
        CHECK_EQ_INT(hc__gpu_force_check(&h200, f, &err), HC_OK);
        hc_gpu_choice c = choose_ok(&h200, &l, 4096, f);
        CHECK_EQ_INT(c.kernel, ids[i]);
        unsigned toks = i < 2 ? 128 : 64u << (i - 2);
        CHECK_EQ_INT(c.grid[1], 4096 / toks);
        /* small M: not theirs (the runtime's pick) -- but mma.sync's, the last resort of any M */
        CHECK_EQ_INT(choose_ok(&h200, &l, 16, f).kernel, i == 0 ? HC_GK_MMA : HC_GK_SKINNY16Q);
        CHECK_EQ_INT(choose_ok(&h200, &l, 8, f).kernel, i == 0 ? HC_GK_MMA : HC_GK_GEMV_T8);
    }
    static const char *const autos[] = {"auto", ""};
    for (int i = 0; i < 2; i++) {
        f = 0;
        CHECK_EQ_INT(hc__gpu_force_parse(autos[i], &f, &err), HC_OK);
        CHECK_EQ_INT(f, HC_GPU_KERNEL_AUTO);
    }
    CHECK_EQ_INT(hc__gpu_force_parse(NULL, &f, &err), HC_OK);
    CHECK_EQ_INT(f, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(hc__gpu_force_parse("ws32", &f, &err), HC_USAGE);
    CHECK_STR_EQ(err.msg, "hc_gpu_model_force_kernel: 'ws32' is none of auto, t8, t16, ws64, "
                          "ws128, ws256, wgmma, mma, skinny16, skinny32, skinny64, skinny16q, "
                          "skinny32q, skinny64q, ws128k, moe-t8, moe-t16, moe-ws64, moe-ws128, "
                          "moe-ws256, "
                          "moe-skinny16, moe-skinny32, moe-skinny64, moe-w8, moe-ws96, "
                          "moe-ws256r, moe-ws288, moe-ws96w, moe-ws24x6, moe-ws80r, "
                          "moe-ws80d, moe-skinny24, moe-ws160, moe-act-apart, moe-w8-lap");
    CHECK_EQ_INT(f, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(hc__gpu_force_parse("moe-act-apart", &f, &err), HC_OK);
    CHECK_EQ_INT(f, HC_GPU_MOE_ACT_APART);
    CHECK_EQ_INT(hc__gpu_force_parse("moe-w8-lap", &f, &err), HC_OK);
    CHECK_EQ_INT(f, HC_GPU_MOE_W8_LAP);
    CHECK_EQ_INT(hc__gpu_force_check(&h200, f, &err), HC_OK);
    /* not on this device: the kernel and the device named */
    hc_gpu_caps a100 = {"sm_80", 108, false, 167936, 166912}, notmap = {"sm_90a", 132, false, 233472, 232448};
    hc_err e2 = {0};
    CHECK_EQ_INT(hc__gpu_force_check(&a100, HC_GK_WS256, &e2), HC_UNSUPPORTED);
    CHECK_STR_EQ(e2.msg, "hc_gpu_model_force_kernel(\"ws256\"): that kernel is not available "
                         "here (sm_80, no cuTensorMapEncodeTiled)");
    hc_err e3 = {0};
    CHECK_EQ_INT(hc__gpu_force_check(&notmap, HC_GK_WS64, &e3), HC_UNSUPPORTED);
    CHECK_CONTAINS(e3.msg, "(sm_90a, no cuTensorMapEncodeTiled)");
    hc_err e4 = {0};
    a100.tmap = true;
    CHECK_EQ_INT(hc__gpu_force_check(&a100, HC_GK_WGMMA, &e4), HC_UNSUPPORTED);
    CHECK_CONTAINS(e4.msg, "\"wgmma\"): that kernel is not available here (sm_80)");
    CHECK_EQ_INT(hc__gpu_force_check(&a100, HC_GK_MMA, &e4), HC_OK);
    CHECK_EQ_INT(hc__gpu_force_check(&notmap, HC_GK_WGMMA, &e4), HC_OK);
    hc_gpu_choice c;
    hc_err e5 = {0};
    CHECK_EQ_INT(hc__gpu_choose(&a100, &l, 64, HC_GK_WS128, &c, &e5), HC_UNSUPPORTED);
    CHECK_CONTAINS(e5.msg, "\"ws128\"");
    hc_err e6 = {0}; /* the M = 1 kernel is not forcible */
    CHECK_EQ_INT(hc__gpu_force_check(&h200, HC_GK_GEMV_T1, &e6), HC_INVALID);
    /* t8 and t16 (the bench's kernel sweep): forced where their token tile holds M, on any
     * architecture; past it the chooser's pick (t8 at M = 12: skinny16q on 8192 x 8192) */
    hc_gpu_shape big = layer(28672, 8192, 2304), sq = layer(8192, 8192, 2304);
    static const struct {
        bool h200;
        uint64_t m;
        hc_gpu_kernel forced, runs;
        bool square;
    } small[] = {{true, 4, HC_GK_GEMV_T8, HC_GK_GEMV_T8, false},
                 {true, 12, HC_GK_GEMV_T16, HC_GK_GEMV_T16, true},
                 {true, 3, HC_GK_GEMV_T16, HC_GK_GEMV_T16, false},
                 {true, 12, HC_GK_GEMV_T8, HC_GK_SKINNY16Q, true},
                 {true, 12, HC_GK_GEMV_T8, HC_GK_GEMV_T16, false},
                 {true, 17, HC_GK_GEMV_T16, HC_GK_SKINNY32, false},
                 {false, 12, HC_GK_GEMV_T16, HC_GK_GEMV_T16, false}};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        CHECK_EQ_INT(choose_ok(small[i].h200 ? &h200 : &a100, small[i].square ? &sq : &big,
                               small[i].m, small[i].forced).kernel,
                     small[i].runs);
}

/* The M limits: 65535 blocks of 128 tokens per call; a forced 64-token tile 65535 of 64. */
static void test_m_limits(void) {
    hc_gpu_shape l = layer(8192, 8192, 2176);
    hc_gpu_choice c = choose_ok(&h200, &l, 65535ull * 128, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(c.kernel, HC_GK_WS256);
    CHECK_EQ_INT(c.grid[1], 32768); /* 8388480 / 256 */
    hc_err err = {0};
    CHECK_EQ_INT(hc__gpu_choose(&h200, &l, 65535ull * 128 + 1, HC_GPU_KERNEL_AUTO, &c, &err),
                 HC_INVALID);
    CHECK_STR_EQ(err.msg, "M=8388481 exceeds 8388480 tokens per call");
    hc_gpu_caps a100 = {"sm_80", 108, false, 167936, 166912};
    CHECK_EQ_INT(choose_ok(&a100, &l, 65535ull * 128, HC_GPU_KERNEL_AUTO).grid[1], 65535);
    CHECK_EQ_INT(choose_ok(&h200, &l, 65535ull * 64, HC_GK_WS64).grid[1], 65535);
    hc_err e2 = {0};
    CHECK_EQ_INT(hc__gpu_choose(&h200, &l, 65535ull * 64 + 1, HC_GK_WS64, &c, &e2),
                 HC_UNSUPPORTED);
    CHECK_STR_EQ(e2.msg, "M=4194241 needs more than 65535 blocks of 64 tokens (grid.y)");
    hc_err e3 = {0};
    CHECK(hc__gpu_choose(&h200, &l, 0, HC_GPU_KERNEL_AUTO, &c, &e3) != HC_OK); /* no kernel */
}

/* A device whose block may have less shared memory than a variant needs (sm_89: 99 KiB): the
 * chooser takes the next variant or family that fits, a forced one is refused by name with
 * the bytes -- never a launch the device rejects. int4 g128 (2304-byte chunks): t1 58880 and
 * t8 53248 fit, the two-stripe t16 (106496) does not, so 9 <= M <= 16 runs mma.sync; int8
 * (4224): t1's six stages (104960) do not, t8 runs M = 1 (83968). */
static void test_device_smem_limit(void) {
    const hc_gpu_caps ada = {"sm_89", 142, true, 102400, 101376};
    hc_gpu_shape big = layer(28672, 8192, 2304), big8 = layer(28672, 8192, 4224);
    CHECK_EQ_INT(choose_ok(&ada, &big, 1, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T1);
    CHECK_EQ_INT(choose_ok(&ada, &big, 8, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T8);
    hc_gpu_choice c = choose_ok(&ada, &big, 16, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(c.kernel, HC_GK_MMA);
    CHECK(c.smem + HC_SMEM_STATIC_MARGIN <= ada.smem_block);
    CHECK_EQ_INT(choose_ok(&ada, &big, 64, HC_GPU_KERNEL_AUTO).kernel, HC_GK_MMA);
    c = choose_ok(&ada, &big8, 1, HC_GPU_KERNEL_AUTO);
    CHECK_EQ_INT(c.kernel, HC_GK_GEMV_T8);
    CHECK_EQ_U64(c.smem, 83968);
    hc_err e = {0};
    CHECK_EQ_INT(hc__gpu_choose(&ada, &big, 16, HC_GK_GEMV_T16, &c, &e), HC_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "hc_gpu_model_force_kernel(\"t16\"): its 106496 bytes");
    CHECK_CONTAINS(e.msg, "2304-byte tiles");
    CHECK_CONTAINS(e.msg, "(101376, sm_89)");
    /* the H200 holds it; a device of unknown limit (0) is not limited */
    CHECK_EQ_INT(choose_ok(&h200, &big, 16, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T16);
    hc_gpu_caps unknown = ada;
    unknown.smem_block = 0;
    CHECK_EQ_INT(choose_ok(&unknown, &big, 16, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T16);
}

/* A family runs only the layouts whose row carries its bit (contract/layouts.h). */
static void test_layout_families(void) {
    hc_gpu_shape l = layer(8192, 8192, 2176);
    l.families = HC_KF_GEMV | HC_KF_MMA;
    CHECK_EQ_INT(choose_ok(&h200, &l, 64, HC_GPU_KERNEL_AUTO).kernel, HC_GK_MMA);
    CHECK_EQ_INT(choose_ok(&h200, &l, 1, HC_GPU_KERNEL_AUTO).kernel, HC_GK_GEMV_T1);
    hc_gpu_choice c;
    hc_err err = {0};
    CHECK_EQ_INT(hc__gpu_choose(&h200, &l, 64, HC_GK_WS64, &c, &err), HC_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "warp-specialised kernels do not read this layer's layout");
    l.families = HC_KF_WS | HC_KF_WGMMA | HC_KF_MMA; /* M = 1 without small-M: skinny(-q) */
    CHECK_EQ_INT(choose_ok(&h200, &l, 1, HC_GPU_KERNEL_AUTO).kernel, HC_GK_SKINNY16Q);
    l.families = HC_KF_WGMMA | HC_KF_MMA; /* M = 1 without small-M or skinny: mma.sync */
    CHECK_EQ_INT(choose_ok(&h200, &l, 1, HC_GPU_KERNEL_AUTO).kernel, HC_GK_MMA);
    l.families = HC_KF_WGMMA;
    hc_err e2 = {0};
    CHECK_EQ_INT(hc__gpu_choose(&h200, &l, 1, HC_GPU_KERNEL_AUTO, &c, &e2), HC_UNSUPPORTED);
    CHECK_CONTAINS(e2.msg, "no GPU kernel runs M=1");
    /* every layout of the table is read by every family today */
    for (unsigned codec = 1; codec < HC_CODEC_COUNT; codec++) {
        const hc_layout_row *row = hc__layout_by_codec(codec);
        CHECK(row && row->families == HC_KF_ALL);
    }
}

/* A GPU error message carries each prefix once: hc_gpu_precompile's for a module that does not
 * build (an architecture NVRTC does not know; without NVRTC the load fails, prefixed alike). */
static void test_message_prefix_once(void) {
    char path[600], msg[1024] = "";
    snprintf(path, sizeof path, "%s/one.hconvert", test_tmpdir());
    hc_container *c = NULL;
    CHECK_EQ_INT(synth_container(path, &synth_specs[0], 1, 64, 64, false, 1, NULL, msg,
                                 sizeof msg), 0);
    CHECK_EQ_INT(hc_container_open(path, 1, &c, msg, sizeof msg), HC_OK);
    if (!c) return;
    unsigned built = 7;
    hc__jit_set_cache(false);
    hc_status st = hc_gpu_precompile(c, "sm_nonesuch", &built, msg, sizeof msg);
    hc__jit_set_cache(true);
    CHECK(st == HC_INTERNAL || st == HC_UNSUPPORTED);
    CHECK_EQ_INT(built, 0);
    CHECK(strncmp(msg, "kernels for 'w' (int4): ", 24) == 0);
    CHECK(strstr(msg, ": :") == NULL);
    CHECK(strstr(msg, "NVRTC") != NULL);
    hc_container_free(c);
    unlink(path);
}

void suite_plan(void) {
    RUN(test_small_m);
    RUN(test_warp_specialised_tiles);
    RUN(test_skinny);
    RUN(test_ws_streamk);
    RUN(test_fallbacks);
    RUN(test_forced_kernels);
    RUN(test_m_limits);
    RUN(test_layout_families);
    RUN(test_device_smem_limit);
    RUN(test_message_prefix_once);
}
