/* t_moe_plan.c: the GPU runtime's MoE decisions that need no GPU: the grouped kernel, tile and
 * launch for a call's routing (runtime/gpu_plan.h hc__gpu_moe_route_plan and
 * hc__gpu_moe_gemm_plan), the MoE forced-kernel names, and which tensors hc_gpu_model_load
 * uploads for one MoE layer (runtime/gpu_moe_load.c). Expected figures are worked out here
 * from the rules as docs/gpu.md states them, not taken from the chooser. */
#include <stdio.h>
#include <unistd.h>

#include "gpu/moe_synth.h"
#include "gpu_int.h"
#include "plan_fixtures.h"
#include "test.h"

/* MoE: the grouped kernel and tile for a call (r = ceil(slots / min(E, slots)) rows per
 * touched expert; the tile T the smallest of 8, 16, 32, 64 with r + 2 sqrt(r) <= T: T = 8
 * the small-M tiles of 8 (r <= 4), else on sm_90a the skinny kernel of T rows (16: r <= 9, 32:
 * r <= 22 -- but a tile of 24 on moe-skinny24 where it holds r, r <= 16 -- 64: r <= 49, a tile
 * of 64 on moe-ws80r where the warp-specialised kernels run), past
 * it the warp-specialised tile of least expected cost (ws_tiles); without those tiles of 16), the
 * tile bound (slots + touched (T - 1)) / T worked by hand, the launches' grids and K split, the
 * forced names and their refusals. */
static void test_moe_plan(void) {
    hc_err err = {0};
    hc_gpu_moe_route r;
    const unsigned ws = HC_KF_ALL;
    /* Qwen3-like: E = 128, top-8 */
    static const struct {
        uint64_t slots;
        hc_gpu_moe_kernel k;
        unsigned tile;
        uint64_t tiles;
    } cases[] = {
        {8, HC_GMK_T8, 8, 8},              /* M = 1: 8 experts of 1 row: (8 + 8 x 7) / 8 */
        {128, HC_GMK_T8, 8, 128},          /* M = 16: (128 + 128 x 7) / 8 */
        {512, HC_GMK_T8, 8, 176},          /* r = 4: 4 + 2 x 2 <= 8: (512 + 896) / 8 */
        {640, HC_GMK_SKINNY16, 16, 160},   /* r = 5: 5 + 2 x 2.2 > 8: (640 + 128 x 15) / 16 */
        {1024, HC_GMK_SKINNY16, 16, 184},  /* M = 128: r = 8: (1024 + 1920) / 16 */
        {1152, HC_GMK_SKINNY16, 16, 192},  /* r = 9: (16 - 9)^2 = 49 >= 36 */
        /* r = 10-16: past 16, within a tile of 24 ((24 - r)^2 >= 4 r): moe-skinny24 */
        {1280, HC_GMK_SKINNY24, 24, 176},  /* r = 10: 36 < 40: (1280 + 128 x 23) / 24 */
        {2048, HC_GMK_SKINNY24, 24, 208},  /* M = 256: r = 16: 64 >= 64: (2048 + 2944) / 24 */
        {2176, HC_GMK_SKINNY32, 32, 192},  /* r = 17: 49 < 68: (2176 + 3968) / 32 */
        {2816, HC_GMK_SKINNY32, 32, 212},  /* r = 22: 100 >= 88 */
        /* r = 23-49: 64 holds r: moe-ws80r, tiles of 80 and of 64 -- at most slots / 80 of 80
         * and one more a touched expert */
        {2944, HC_GMK_WS80R, 80, 164},     /* r = 23: 81 < 92: 2944 / 80 + 128 */
        {4096, HC_GMK_WS80R, 80, 179},     /* r = 32: 4096 / 80 + 128 */
        {6272, HC_GMK_WS80R, 80, 206},     /* r = 49: 15^2 = 225 >= 196: 6272 / 80 + 128 */
        /* past what 64 holds (r >= 50) the warp-specialised tile of least expected cost
         * (gpu_plan.c ws_tiles: its average tiles an expert x its cost a tile): r = 50-68 one
         * tile of 80 on moe-ws80d (1.02 x 130 at r = 64 against ws96w's 140); r = 70-90 one
         * tile of 96 on moe-ws96w (at r = 78 1.4 x 130 = 183 for tiles of 80, 1.02 x 140 for
         * 96, 181 for ws128); r = 92 ws128 (1.34 x 140 = 187 > 181); r = 128 (4-bit codes, as
         * these) one tile of 160 on moe-ws160 (1.002 x 213 against two of 80, 2 x 130, and 1.5
         * x 181); r = 256 (M = 4096) one tile
         * of 288 (1.02 x 378 against 1.5 x 309 and 3.02 x 140); r = 300 two of 160 (426
         * against four of 96, 526, and three of 128, 542); r = 512 two of 288 (757 against 2.5
         * x 309); r = 1024 4.5 of 256 (1390 against 4 x 378); 8-bit codes below */
        {6400, HC_GMK_WS80D, 80, 206},     /* r = 50: (6400 + 128 x 79) / 80 */
        {8192, HC_GMK_WS80D, 80, 228},     /* M = 1024: r = 64: (8192 + 10112) / 80 */
        {8320, HC_GMK_WS80D, 80, 230},     /* r = 65: (8320 + 10112) / 80 */
        {9984, HC_GMK_WS96W, 96, 230},     /* r = 78 */
        {10112, HC_GMK_WS96W, 96, 232},    /* r = 79 */
        {11520, HC_GMK_WS96W, 96, 246},    /* r = 90 */
        {11776, HC_GMK_WS128, 128, 219},   /* r = 92: (11776 + 128 x 127) / 128 */
        {16384, HC_GMK_WS160, 160, 229},   /* r = 128: (16384 + 128 x 159) / 160 */
        {32768, HC_GMK_WS288, 288, 241},   /* (32768 + 128 x 287) / 288 */
        {38400, HC_GMK_WS160, 160, 367},   /* r = 300: (38400 + 20352) / 160 */
        {65536, HC_GMK_WS288, 288, 355},   /* (65536 + 36736) / 288 */
        {131072, HC_GMK_WS256, 256, 639},  /* (131072 + 32640) / 256 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, cases[i].slots, 128, HC_GPU_KERNEL_AUTO,
                                            &r, &err), HC_OK);
        CHECK_EQ_INT(r.kernel, cases[i].k);
        CHECK_EQ_INT(r.tile, cases[i].tile);
        CHECK_EQ_U64(r.tiles_max, cases[i].tiles);
        CHECK_EQ_U64(r.touched, cases[i].slots < 128 ? cases[i].slots : 128);
    }
    /* 8-bit codes (v108: moe-ws160 is for 4-bit codes; the DeepSeek-like FP8 block ran slower
     * on it than on two tiles of 80): r = 128 two of 80, r = 300 four of 96, the rest as above */
    static const struct {
        uint64_t slots;
        hc_gpu_moe_kernel k;
        uint64_t tiles;
    } wide[] = {{16384, HC_GMK_WS80D, 331}, {38400, HC_GMK_WS96W, 526},
                {8192, HC_GMK_WS80D, 228},  {32768, HC_GMK_WS288, 241}};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        for (unsigned bits = 0; bits <= 8; bits += 8) { /* (0: not known, as 8) */
            CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, bits, wide[i].slots, 128,
                                                HC_GPU_KERNEL_AUTO, &r, &err), HC_OK);
            CHECK_EQ_INT(r.kernel, wide[i].k);
            CHECK_EQ_U64(r.tiles_max, wide[i].tiles);
        }
    /* E = 8 at a full chunk of 65536 slots (gpu_moe_test's forced wide tiles): r = 8192, the
     * pick tiles of 256 (8192 / 256 = 32 whole tiles an expert, 8 x 255 pad rows at most);
     * moe-ws288 forced pads more (8 x 287), so it needs more rows than the workspace sized for
     * the pick holds (hc__gpu_moe_ws_fit grows it) */
    {
        hc_gpu_moe_route r288;
        CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 65536, 8, HC_GPU_KERNEL_AUTO, &r, &err),
                     HC_OK);
        CHECK_EQ_INT(r.kernel, HC_GMK_WS256);
        CHECK_EQ_U64(r.rows_max, (65536 + 8 * 255) / 256 * 256); /* (tiles_max x T) */
        CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 65536, 8, HC_GMK_WS288, &r288, &err),
                     HC_OK);
        CHECK_EQ_U64(r288.rows_max, (65536 + 8 * 287) / 288 * 288);
        CHECK(r288.rows_max > r.rows_max);
    }
    /* the routing sort: one block up to 2048 slots, then a block per 1024, at most 32 */
    static const struct {
        uint64_t slots;
        unsigned blocks;
    } sorts[] = {{8, 1}, {2048, 1}, {2049, 3}, {2664, 3}, {8192, 8}, {32768, 32}, {131072, 32}};
    for (size_t i = 0; i < sizeof sorts / sizeof sorts[0]; i++) {
        CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, sorts[i].slots, 128, HC_GPU_KERNEL_AUTO, &r,
                                            &err), HC_OK);
        CHECK_EQ_INT(r.sort_blocks, sorts[i].blocks);
    }
    /* no warp-specialised kernels (sm_80, or a layout without them): tiles of 16 */
    hc_gpu_caps a100 = {"sm_80", 108, false, 167936, 166912};
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&a100, ws, 4, 65536, 128, HC_GPU_KERNEL_AUTO, &r, &err), HC_OK);
    CHECK_EQ_INT(r.kernel, HC_GMK_T16);
    CHECK_EQ_U64(r.tiles_max, (65536 + 128 * 15) / 16);
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, HC_KF_GEMV, 4, 2048, 128, HC_GPU_KERNEL_AUTO, &r,
                                        &err), HC_OK);
    CHECK_EQ_INT(r.kernel, HC_GMK_T16);
    /* its launch: a stripe a block (the dense t16 takes two of 4-bit layouts), so its stages
     * hold one chunk and 16 activation rows */
    {
        hc_gpu_moe_launch l;
        hc_gpu_shape down = layer(2048, 768, 2304);
        CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &l, &err), HC_OK);
        CHECK_EQ_INT(l.kernel, HC_GMK_T16);
        CHECK_EQ_INT(l.grid[0], 32);
        CHECK_EQ_U64(l.smem, 4 * HC_GEMV_STAGES * (2304 + 16 * 128));
        /* its K split reads moe-t16's occupancy (gemv_occ[2], set at load from the grouped
         * kernel, not the dense t16's): gate and up at M = 1 forced to tiles of 16 -- 24
         * stripes x 8 tiles = 192 blocks; 3 resident: 396 / 192 = 2, 2 resident: 264 / 192 = 1 */
        hc_gpu_shape gu = layer(768, 2048, 2304);
        CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 8, 128, HC_GMK_T16, &r, &err), HC_OK);
        gu.gemv_occ[1] = 4, gu.gemv_occ[2] = 3;
        CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gu, 2, &r, &l, &err), HC_OK);
        CHECK_EQ_INT(l.kernel, HC_GMK_T16);
        CHECK_EQ_INT(l.ksplit, 2);
        CHECK_EQ_U64(l.part_bytes, 192ull * 2 * 64 * 16 * 4);
        gu.gemv_occ[2] = 2;
        CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gu, 2, &r, &l, &err), HC_OK);
        CHECK_EQ_INT(l.ksplit, 1);
        CHECK_EQ_U64(l.part_bytes, 0);
    }
    /* refusals: no slot; more than 65535 tiles; a forced kernel the device lacks */
    hc_err e1 = {0}, e2 = {0}, e3 = {0};
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 0, 128, HC_GPU_KERNEL_AUTO, &r, &e1), HC_INVALID);
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&a100, ws, 4, 1100000, 128, HC_GPU_KERNEL_AUTO, &r, &e2),
                 HC_UNSUPPORTED);
    CHECK_CONTAINS(e2.msg, "at most 65535 a launch");
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&a100, ws, 4, 64, 8, HC_GMK_WS64, &r, &e3), HC_UNSUPPORTED);
    CHECK_CONTAINS(e3.msg, "moe-ws64");
    /* launches: gate and up of Qwen3 (I = 768: 12 stripes each, K = 2048: 32 k-tiles) at M = 1:
     * 24 stripes x 8 tiles = 192 blocks on 132 SMs x 4: split 528 / 192 = 2; partial sums
     * 192 x 2 x 64 rows x 8 tokens x 4 bytes, a counter per (tile, stripe) */
    hc_gpu_shape gate = layer(768, 2048, 2304);
    hc_gpu_moe_launch lu;
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 8, 128, HC_GPU_KERNEL_AUTO, &r, &err), HC_OK);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gate, 2, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 24);
    CHECK_EQ_INT(lu.grid[1], 2);
    CHECK_EQ_INT(lu.grid[2], 8);
    CHECK_EQ_INT(lu.block, 128);
    CHECK_EQ_U64(lu.part_bytes, 192ull * 2 * 64 * 8 * 4);
    CHECK_EQ_U64(lu.cnt_bytes, 192ull * 4);
    CHECK_EQ_U64(lu.smem, 4 * (HC_GEMV_STAGES * (2304 + 8 * 128)));
    /* down (H = 2048 rows: 32 stripes, K = 768) on the warp-specialised grouped kernels, two
     * stripes a block: (pairs x parts, tiles), no split; a stage one activation tile of the
     * tile's rows and two chunks. At r = 128 with 8-bit codes' rule two tiles of 80 an expert
     * on moe-ws80d, (16384 + 128 x 79) / 80; with 4-bit codes one of 160 (v108), (16384 + 128
     * x 159) / 160, ws128's block; moe-ws96 forced (only since v69: moe-ws96w took its band),
     * (8192 + 128 x 95) / 96 */
    hc_gpu_shape down = layer(2048, 768, 2304);
    static const struct {
        unsigned bits;
        uint64_t slots;
        int forced;
        hc_gpu_moe_kernel k;
        unsigned toks, tiles;
    } wsd[] = {{8, 16384, HC_GPU_KERNEL_AUTO, HC_GMK_WS80D, 80, 331},
               {4, 16384, HC_GPU_KERNEL_AUTO, HC_GMK_WS160, 160, 229},
               {4, 8192, HC_GMK_WS96, HC_GMK_WS96, 96, 212}};
    for (size_t i = 0; i < sizeof wsd / sizeof wsd[0]; i++) {
        CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, wsd[i].bits, wsd[i].slots, 128,
                                            wsd[i].forced, &r, &err), HC_OK);
        CHECK_EQ_INT(r.forced, wsd[i].forced != HC_GPU_KERNEL_AUTO);
        CHECK_EQ_INT(r.tile, wsd[i].toks);
        CHECK_EQ_U64(r.tiles_max, wsd[i].tiles);
        CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
        CHECK_EQ_INT(lu.kernel, wsd[i].k);
        CHECK_EQ_INT(lu.grid[0], 16);
        CHECK_EQ_INT(lu.grid[1], wsd[i].tiles);
        CHECK_EQ_INT(lu.block, 384);
        CHECK_EQ_U64(lu.part_bytes, 0);
        CHECK_EQ_U64(lu.smem, 1024 + HC_WIDE_STAGES * round1024(wsd[i].toks * 128 + 2 * 2304));
    }
    /* unforced, r = 64 takes moe-ws80d (sm_80 has tiles of 16 there: the a100 case above) */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 8192, 128, HC_GPU_KERNEL_AUTO, &r, &err), HC_OK);
    CHECK_EQ_INT(r.kernel, HC_GMK_WS80D);
    CHECK(!r.forced);
    hc_err e5 = {0};
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&a100, ws, 4, 64, 8, HC_GMK_WS96, &r, &e5), HC_UNSUPPORTED);
    CHECK_CONTAINS(e5.msg, "moe-ws96");
    /* moe-ws256r (forced only, v63): tiles of 256 and an expert's remainder in a tile of 64 --
     * at r = 256 (32768 slots over 128 experts): an expert's whole tiles and one more of either
     * size, at most 32768 / 256 + 128 = 256; its pads at most 191 (a remainder of 65 in a
     * tile of 256), rows 32768 + 128 x 191; a grid plane for each size; the unforced pick
     * there is moe-ws288 (one size: (32768 + 128 x 287) / 288 = 241) */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 32768, 128, HC_GMK_WS256R, &r, &err), HC_OK);
    CHECK_EQ_INT(r.tile, 256);
    CHECK_EQ_INT(r.tile_small, 64);
    CHECK_EQ_U64(r.tiles_max, 256);
    CHECK_EQ_U64(r.rows_max, 32768 + 128 * 191);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.kernel, HC_GMK_WS256R);
    CHECK_EQ_INT(lu.grid[0], 16);
    CHECK_EQ_INT(lu.grid[1], 256);
    CHECK_EQ_INT(lu.grid[2], 2);
    CHECK_EQ_U64(lu.smem, 1024 + HC_WIDE_STAGES * round1024(256 * 128 + 2 * 2304));
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 32768, 128, HC_GPU_KERNEL_AUTO, &r, &err), HC_OK);
    CHECK_EQ_INT(r.kernel, HC_GMK_WS288);
    CHECK_EQ_INT(r.tile_small, 0);
    CHECK_EQ_U64(r.tiles_max, 241);
    CHECK_EQ_U64(r.rows_max, 241 * 288);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[2], 1);
    /* moe-ws288 (v68): tiles of 288 rows at r = 256, (32768 + 128 x 287) / 288 = 241 tiles;
     * four stages (config.h HC_WS_STAGES: five of 288 rows pass 227 KiB with 8-bit chunks) */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 32768, 128, HC_GMK_WS288, &r, &err), HC_OK);
    CHECK_EQ_INT(r.tile, 288);
    CHECK_EQ_INT(r.tile_small, 0);
    CHECK_EQ_U64(r.tiles_max, 241);
    CHECK_EQ_U64(r.rows_max, 241 * 288);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.kernel, HC_GMK_WS288);
    CHECK_EQ_INT(lu.grid[0], 16);
    CHECK_EQ_INT(lu.grid[1], 241);
    CHECK_EQ_INT(lu.block, 384);
    CHECK_EQ_U64(lu.smem, 1024 + 4 * round1024(288 * 128 + 2 * 2304));
    CHECK_EQ_INT(HC_WS_BOX(288), 144);
    CHECK_EQ_INT(HC_WS_BOX(256), 256);
    /* with 8-bit chunks (64 x 64 codes + scales) it still fits a block */
    hc_gpu_shape down8 = layer(2048, 768, 4352);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down8, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_U64(lu.smem, 1024 + 4 * round1024(288 * 128 + 2 * 4352));
    /* moe-ws96w (v69): the route of moe-ws96, four stripes a block -- down's 32 stripes in 8
     * groups -- and four chunks a stage */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 8192, 128, HC_GMK_WS96W, &r, &err), HC_OK);
    CHECK_EQ_INT(r.tile, 96);
    CHECK_EQ_U64(r.tiles_max, 212);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.kernel, HC_GMK_WS96W);
    CHECK_EQ_INT(lu.grid[0], 8);
    CHECK_EQ_INT(lu.grid[1], 212);
    CHECK_EQ_U64(lu.smem, 1024 + HC_WIDE_STAGES * round1024(96 * 128 + 4 * 2304));
    /* gate and up (12 stripes each: 3 groups a part) */
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gate, 2, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 6);
    /* moe-ws24x6 (v72, forced only): tiles of 24 at r = 16, (2048 + 128 x 23) / 24 = 208;
     * six stripes a block -- down's 32 in 6 groups (the last two stripes), gate and up's 12 in
     * 2 a part -- and six chunks a stage */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 2048, 128, HC_GMK_WS24X6, &r, &err), HC_OK);
    CHECK_EQ_INT(r.tile, 24);
    CHECK_EQ_U64(r.tiles_max, 208);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 6);
    CHECK_EQ_INT(lu.grid[1], 208);
    CHECK_EQ_U64(lu.smem, 1024 + HC_WIDE_STAGES * round1024(24 * 128 + 6 * 2304));
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gate, 2, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 4);
    /* moe-ws80r (v78; the pick at r = 23-49): tiles of 80 and an expert's remainder in one of
     * 64 where it fits, at r = 64: at most 8192 / 80 + 128 = 230 tiles; rows 8192 + 128 x 63
     * (the larger pad: a tile of 64 holding one row, against 80 - 64 - 1 in a tile of 80);
     * four stripes a block (down's 32 in 8 groups), four chunks a stage, a grid plane a tile
     * size */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 8192, 128, HC_GMK_WS80R, &r, &err), HC_OK);
    CHECK_EQ_INT(r.tile, 80);
    CHECK_EQ_INT(r.tile_small, 64);
    CHECK_EQ_U64(r.tiles_max, 230);
    CHECK_EQ_U64(r.rows_max, 8192 + 128 * 63);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 8);
    CHECK_EQ_INT(lu.grid[1], 230);
    CHECK_EQ_INT(lu.grid[2], 2);
    CHECK_EQ_U64(lu.smem, 1024 + HC_WIDE_STAGES * round1024(80 * 128 + 4 * 2304));
    /* moe-ws80d (v79; the pick at r = 50-68): tiles of 80 at r = 64, (8192 + 128 x 79) / 80
     * = 228; two stripes a block (down's 32 in 16 pairs, gate and up's 12 in 6 a part), two
     * chunks a stage: two blocks fit an SM */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 8192, 128, HC_GMK_WS80D, &r, &err), HC_OK);
    CHECK_EQ_INT(r.tile, 80);
    CHECK_EQ_U64(r.tiles_max, 228);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 16);
    CHECK_EQ_U64(lu.smem, 1024 + HC_WIDE_STAGES * round1024(80 * 128 + 2 * 2304));
    CHECK(2 * (lu.smem + 1024) <= h200.smem_sm);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gate, 2, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 12);
    /* few slots: 8 over 128 experts (8 touched), remainders only: at most 0 + 8 tiles, rows
     * 8 + 8 x 191; one slot: a tile of 256's rows at least (1 + 191 < 256) */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 8, 128, HC_GMK_WS256R, &r, &err), HC_OK);
    CHECK_EQ_U64(r.tiles_max, 8);
    CHECK_EQ_U64(r.rows_max, 8 + 8 * 191);
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 1, 128, HC_GMK_WS256R, &r, &err), HC_OK);
    CHECK_EQ_U64(r.rows_max, 256);
    /* the skinny kernel (forced) at r = 64: one block per SM, 2 x 132 segments of 256 x 64
     * float32, a counter per (tile, quad): 254 x 8 quads of 32 stripes */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 8192, 128, HC_GMK_SKINNY64, &r, &err), HC_OK);
    CHECK_EQ_U64(r.tiles_max, 254);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 132);
    CHECK_EQ_INT(lu.grid[1], 1);
    CHECK_EQ_INT(lu.block, 640);
    CHECK_EQ_U64(lu.part_bytes, 132ull * 2 * 256 * 64 * 4);
    CHECK_EQ_U64(lu.cnt_bytes, 254ull * 8 * 4);
    CHECK_EQ_U64(lu.smem, 1024 + skinny_stages(64, 2304) * round1024(64 * 128 + 4 * 2304));
    /* gate and up (12 stripes each: 3 quads a part), forced tiles of 32 at r = 32: 252 tiles
     * x 2 parts x 3 */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 4096, 128, HC_GMK_SKINNY32, &r, &err), HC_OK);
    CHECK_EQ_U64(r.tiles_max, 252);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gate, 2, &r, &lu, &err), HC_OK);
    CHECK_EQ_U64(lu.cnt_bytes, 252ull * 2 * 3 * 4);
    CHECK_EQ_U64(lu.part_bytes, 132ull * 2 * 256 * 32 * 4);
    /* forced names: parsed into their own range, checked against the device */
    int f = 0;
    static const char *const names[] = {"moe-t8",       "moe-t16",      "moe-ws64",
                                        "moe-ws128",    "moe-ws256",    "moe-skinny16",
                                        "moe-skinny32", "moe-skinny64", "moe-w8",
                                        "moe-ws96",     "moe-ws256r",   "moe-ws288",
                                        "moe-ws96w",    "moe-ws24x6",   "moe-ws80r",
                                        "moe-ws80d",    "moe-skinny24", "moe-ws160"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
        CHECK_EQ_INT(hc__gpu_force_parse(names[i], &f, &err), HC_OK);
        CHECK_EQ_INT(f, HC_GPU_MOE_FORCED + i);
        CHECK_EQ_INT(hc__gpu_force_check(&h200, f, &err), HC_OK);
        hc_err e4 = {0};
        CHECK_EQ_INT(hc__gpu_force_check(&a100, f, &e4), i < 2 || i == 8 ? HC_OK : HC_UNSUPPORTED);
    }
}

/* The warp-owned small-M kernel (moe-w8, forced only): one wave of blocks -- as many per SM as
 * its shared memory allows (4 warps x 6 stages x (chunk + 1 KiB) + 12 KiB of item
 * descriptors), at most 4 -- however many items its warps then take (v105: their descriptors
 * are a ring); no K split or workspace. */
static void test_moe_w8_plan(void) {
    hc_err err = {0};
    hc_gpu_moe_route r;
    hc_gpu_moe_launch l;
    const unsigned ws = HC_KF_ALL;
    /* Qwen3-like down at M = 16: 128 tiles x 32 stripes = 4096 items; int4 g128 chunks of 2304
     * bytes: 4 x 6 x 3328 = 79872 bytes, (79872 + 12288 + 1024) x 2 <= 228 KiB: 264 blocks */
    hc_gpu_shape down = layer(2048, 768, 2304);
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 128, 128, HC_GMK_W8, &r, &err), HC_OK);
    CHECK_EQ_INT(r.kernel, HC_GMK_W8);
    CHECK_EQ_INT(r.tile, 8);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &down, 1, &r, &l, &err), HC_OK);
    CHECK_EQ_INT(l.grid[0], 264);
    CHECK_EQ_INT(l.grid[1] * l.grid[2], 1);
    CHECK_EQ_INT(l.block, 128);
    CHECK_EQ_U64(l.smem, 79872);
    CHECK_EQ_U64(l.part_bytes + l.cnt_bytes, 0);
    /* int8 chunks of 5376 bytes: 4 x 6 x 6400 = 153600, one block an SM on sm_90 and sm_80 */
    hc_gpu_shape wide = layer(2048, 768, 5376);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &wide, 1, &r, &l, &err), HC_OK);
    CHECK_EQ_INT(l.grid[0], 132);
    hc_gpu_caps a100 = {"sm_80", 108, false, 167936, 166912};
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&a100, &wide, 1, &r, &l, &err), HC_OK);
    CHECK_EQ_INT(l.grid[0], 108);
    /* DeepSeek-like down (H = 7168: 112 stripes) at 65536 slots over 256 experts: (65536 + 256
     * x 7) / 8 = 8416 tiles, 942592 items -- still one wave of 264 blocks (~893 items a warp;
     * before v105, 4910 blocks of 4 warps x 48) */
    hc_gpu_shape dsd = layer(7168, 256, 2304);
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 65536, 256, HC_GMK_W8, &r, &err), HC_OK);
    CHECK_EQ_U64(r.tiles_max, 8416);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &dsd, 1, &r, &l, &err), HC_OK);
    CHECK_EQ_INT(l.grid[0], 264);
    /* past 2^31 - 1 items (the kernel's 32-bit item numbers): refused by name -- 65535 tiles
     * (8 experts, (524224 + 56) / 8) x 32769 stripes = 2147516415; one stripe fewer fits */
    hc_err e1 = {0};
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, 524224, 8, HC_GMK_W8, &r, &err), HC_OK);
    CHECK_EQ_U64(r.tiles_max, 65535);
    hc_gpu_shape huge = layer(32769ull * 64, 768, 2304), big = layer(32768ull * 64, 768, 2304);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &huge, 1, &r, &l, &e1), HC_UNSUPPORTED);
    CHECK_CONTAINS(e1.msg, "moe-w8");
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &big, 1, &r, &l, &err), HC_OK);
    CHECK_EQ_INT(l.grid[0], 264);
    /* forced on a GPU whose SM cannot hold one block (sm_86: 100 KiB; int8 chunks: 153600 +
     * 12288 bytes): refused by name, not a failed launch */
    hc_gpu_caps a6000 = {"sm_86", 84, false, 102400, 101376};
    hc_err e2 = {0};
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&a6000, ws, 4, 128, 128, HC_GMK_W8, &r, &err), HC_OK);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&a6000, &wide, 1, &r, &l, &e2), HC_UNSUPPORTED);
    CHECK_CONTAINS(e2.msg, "moe-w8");
    CHECK_CONTAINS(e2.msg, "sm_86");
}

/* The chooser's kernel per projection: where the route runs tiles of 8 unforced, a projection
 * of at most 8 K tiles (HC_MOE_W8_TILES_K) runs moe-w8 when its items (tiles x stripes x
 * parts) are at least the warps of one wave (4 x blocks), else moe-t8; where it runs
 * moe-skinny16 unforced, a projection of at least 40 K tiles runs moe-t16; every other route
 * runs its own kernel on both. */
static void test_moe_w8_pick(void) {
    hc_err err = {0};
    hc_gpu_moe_route r;
    hc_gpu_moe_launch l;
    const unsigned ws = HC_KF_ALL;
    static const struct {
        const char *what;
        uint64_t n, k, chunk, el, slots;
        unsigned parts;
        int forced;
        hc_gpu_moe_kernel want;
        unsigned grid0; /* the launch's blocks (w8: the wave; t8: the stripes x parts) */
    } cases[] = {
        /* a down of 8 K tiles (K = 512, 32 stripes, int4 g128: 2 blocks an SM = 264 blocks,
         * 1056 warps): M = 16, 128 tiles x 32 = 4096 items */
        {"K 8 tiles M=16", 2048, 512, 2304, 128, 128, 1, HC_GPU_KERNEL_AUTO, HC_GMK_W8, 264},
        /* M = 64: (512 + 896) / 8 = 176 tiles, 5632 items */
        {"K 8 tiles M=64", 2048, 512, 2304, 128, 512, 1, HC_GPU_KERNEL_AUTO, HC_GMK_W8, 264},
        /* Qwen3-like down (K = 768: 12 tiles, past HC_MOE_W8_TILES_K) stays on moe-t8 */
        {"qwen3 down M=16", 2048, 768, 2304, 128, 128, 1, HC_GPU_KERNEL_AUTO, HC_GMK_T8, 32},
        {"qwen3 down M=64", 2048, 768, 2304, 128, 512, 1, HC_GPU_KERNEL_AUTO, HC_GMK_T8, 32},
        /* M = 1: 8 tiles x 32 = 256 items < 1056 warps */
        {"qwen3 down M=1", 2048, 768, 2304, 128, 8, 1, HC_GPU_KERNEL_AUTO, HC_GMK_T8, 32},
        /* gate and up (K = 2048: 32 tiles): long K */
        {"qwen3 gate_up M=16", 768, 2048, 2304, 128, 128, 2, HC_GPU_KERNEL_AUTO, HC_GMK_T8, 24},
        /* DeepSeek-like down at TP 8 (K = 256: 4 tiles, 112 stripes): M = 1, 8 x 112 = 896 <
         * 1056; M = 16, 128 x 112 */
        {"deepseek down M=1", 7168, 256, 2304, 256, 8, 1, HC_GPU_KERNEL_AUTO, HC_GMK_T8, 112},
        {"deepseek down M=16", 7168, 256, 2304, 256, 128, 1, HC_GPU_KERNEL_AUTO, HC_GMK_W8, 264},
        /* ... with its FP8 block chunks (4352 bytes: 4 x 6 x 5376 + 12288 + 1024 = 142336, one
         * block an SM) at M = 64: (512 + 256 x 7) / 8 = 288 tiles x 112 = 32256 items, 61 a
         * warp: one wave of 132 blocks (v105; before, 168 -- a second wave of 36) */
        {"deepseek fp8 down M=64", 7168, 256, 4352, 256, 512, 1, HC_GPU_KERNEL_AUTO, HC_GMK_W8,
         132},
        /* K = 576: 9 tiles, one past the bound */
        {"K 9 tiles", 2048, 576, 2304, 128, 128, 1, HC_GPU_KERNEL_AUTO, HC_GMK_T8, 32},
        /* int8 chunks (5376 bytes): one block an SM, 132 blocks, 528 warps; 4096 items */
        {"int8 down M=16", 2048, 512, 5376, 128, 128, 1, HC_GPU_KERNEL_AUTO, HC_GMK_W8, 132},
        /* forced moe-t8: every projection on it */
        {"forced t8", 2048, 768, 2304, 128, 128, 1, HC_GMK_T8, HC_GMK_T8, 32},
        /* a route of 16-row tiles (r = 8: skinny16) keeps its kernel at a short K */
        {"skinny16 route", 2048, 768, 2304, 128, 1024, 1, HC_GPU_KERNEL_AUTO, HC_GMK_SKINNY16,
         132},
        /* ... and hands a projection of at least 40 K tiles (HC_MOE_T16_TILES_K) to moe-t16 on
         * the same tiles of 16: DeepSeek-like at M = 256 (r = 8), FP8 block chunks -- gate and up
         * (K = 7168: 112 tiles, 4 stripes each) on t16, down (K = 256) on skinny16 */
        {"deepseek gate_up M=256", 256, 7168, 4352, 256, 2048, 2, HC_GPU_KERNEL_AUTO, HC_GMK_T16,
         8},
        {"deepseek down M=256", 7168, 256, 4352, 256, 2048, 1, HC_GPU_KERNEL_AUTO,
         HC_GMK_SKINNY16, 132},
        /* gpt-oss-like at M = 256 (top-4, r = 8): gate_up's 5760 rows (90 stripes) over K =
         * 2880 (45 tiles) */
        {"gpt-oss gate_up M=256", 5760, 2880, 2304, 128, 1024, 1, HC_GPU_KERNEL_AUTO, HC_GMK_T16,
         90},
        /* the bound: 39 tiles stay, 40 go; Qwen3-like gate_up (32 tiles) stays; forced skinny16
         * keeps every projection */
        {"K 39 tiles", 2048, 2496, 2304, 128, 1024, 1, HC_GPU_KERNEL_AUTO, HC_GMK_SKINNY16, 132},
        {"K 40 tiles", 2048, 2560, 2304, 128, 1024, 1, HC_GPU_KERNEL_AUTO, HC_GMK_T16, 32},
        {"qwen3 gate_up M=128", 768, 2048, 2304, 128, 1024, 2, HC_GPU_KERNEL_AUTO,
         HC_GMK_SKINNY16, 132},
        {"forced skinny16", 256, 7168, 4352, 256, 2048, 2, HC_GMK_SKINNY16, HC_GMK_SKINNY16, 132},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_gpu_shape sh = layer(cases[i].n, cases[i].k, cases[i].chunk);
        CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, ws, 4, cases[i].slots, cases[i].el, cases[i].forced,
                                            &r, &err), HC_OK);
        CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &sh, cases[i].parts, &r, &l, &err), HC_OK);
        if (l.kernel != cases[i].want || l.grid[0] != cases[i].grid0)
            fprintf(stderr, "  %s: kernel %d grid %u\n", cases[i].what, (int)l.kernel, l.grid[0]);
        CHECK_EQ_INT(l.kernel, cases[i].want);
        CHECK_EQ_INT(l.grid[0], cases[i].grid0);
        CHECK_EQ_INT(l.args, cases[i].want == HC_GMK_SKINNY16 ? HC_GPU_ARGS_STREAMK
                                                               : HC_GPU_ARGS_GEMV);
        if (cases[i].want == HC_GMK_T16) CHECK_EQ_INT(r.tile, 16); /* (the route's tiles) */
        if (l.kernel == HC_GMK_W8) CHECK_EQ_U64(l.part_bytes + l.cnt_bytes, 0);
    }
    /* sm_86 (100 KiB an SM, 99 KiB a block): 4224-byte int8 chunks do not fit moe-w8 (101376 +
     * 12288 bytes), so down stays on moe-t8 (65536 + 16384); 5376-byte chunks fit neither, and
     * the plan refuses by name (the loader keeps the layer's reason) */
    hc_gpu_caps a6000 = {"sm_86", 84, false, 102400, 101376};
    hc_gpu_shape wide = layer(2048, 768, 4224), widest = layer(2048, 768, 5376);
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&a6000, ws, 4, 128, 128, HC_GPU_KERNEL_AUTO, &r, &err), HC_OK);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&a6000, &wide, 1, &r, &l, &err), HC_OK);
    CHECK_EQ_INT(l.kernel, HC_GMK_T8);
    hc_err e = {0};
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&a6000, &widest, 1, &r, &l, &e), HC_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "moe-t8");
    CHECK_CONTAINS(e.msg, "102400 bytes");
    CHECK_CONTAINS(e.msg, "sm_86 may have 101376");
}

/* hc_gpu_model_load(..., only = an MoE layer) uploads that layer's expert tensors and nothing
 * else: the record is found by name, and the tensors it owns are the per-expert gate/up/down
 * (any expert) or the fused gate_up and down -- not the router, not the biases, not another
 * name that merely starts like one (moe_synth.h's names, written here by hand). */
/* The activation in gate_up's epilogue (hc__gpu_moe_fuse_plan), worked from the rule as
 * gpu_plan.h states it: which launches take it, in which mode, and the halves' grid -- groups of
 * half a block's stripes over ceil(I / 64) stripes of one half. */
static void test_moe_fuse_plan(void) {
    hc_err err = {0};
    hc_gpu_moe_route r;
    hc_gpu_moe_launch lu;
    uint64_t us = 99;
    hc_gpu_shape gate = layer(768, 2048, 2304); /* Qwen3-like gate (or up): I = 768, 12 stripes */
    /* r = 64: moe-ws80d, two stripes a block: one of gate and one of up, 12 groups (unfused: 6
     * pairs a part x 2 parts, the same count) */
    CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, HC_KF_ALL, 4, 8192, 128, HC_GPU_KERNEL_AUTO, &r, &err),
                 HC_OK);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gate, 2, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 12);
    CHECK_EQ_INT(hc__gpu_moe_fuse_plan(&lu, 2, false, 768, false, false, &us), 1);
    CHECK_EQ_U64(us, 0);
    CHECK_EQ_INT(lu.grid[0], 12);
    CHECK_EQ_INT(lu.grid[1], 228); /* (the tiles: unchanged) */
    /* NVFP4 gate and up, each with its own divisor: not fused; an act-order down (hc_moe_act
     * permutes the columns): not fused */
    CHECK_EQ_INT(hc__gpu_moe_fuse_plan(&lu, 2, false, 768, true, false, &us), 0);
    CHECK_EQ_INT(hc__gpu_moe_fuse_plan(&lu, 2, false, 768, false, true, &us), 0);
    /* stacked in one tensor (1536 rows): up's first stripe 768 / 64 = 12 past gate's; I = 720
     * (not a stripe boundary): not fused */
    hc_gpu_shape gu = layer(1536, 2048, 2304);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gu, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(hc__gpu_moe_fuse_plan(&lu, 1, false, 768, false, false, &us), 1);
    CHECK_EQ_U64(us, 12);
    CHECK_EQ_INT(lu.grid[0], 12);
    CHECK_EQ_INT(hc__gpu_moe_fuse_plan(&lu, 1, false, 720, false, false, &us), 0);
    /* interleaved (gpt-oss-like, 2 x 2880 rows = 90 stripes): pairs, the grid as unfused --
     * 90 / 2 = 45 -- whatever the divisors */
    hc_gpu_shape il = layer(5760, 2880, 2304);
    CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &il, 1, &r, &lu, &err), HC_OK);
    CHECK_EQ_INT(lu.grid[0], 45);
    CHECK_EQ_INT(hc__gpu_moe_fuse_plan(&lu, 1, true, 2880, true, false, &us), 2);
    CHECK_EQ_INT(lu.grid[0], 45);
    /* gate and up as two parts (I = 768, 12 stripes a part), by route: whether fused, and then
     * the grid's x (groups of half a block's stripes over 12) and planes */
    static const struct {
        const char *what;
        uint64_t slots;
        int forced;
        unsigned fuse, grid0, grid2;
    } gu_cases[] = {
        /* r = 16: moe-ws24x6 (forced), six stripes a block: 12 / 3 = 4 groups; the pick there,
         * moe-skinny24, the separate launch */
        {"ws24x6", 2048, HC_GMK_WS24X6, 1, 4, 1},
        {"skinny24 auto", 2048, HC_GPU_KERNEL_AUTO, 0, 0, 0},
        /* a tile of 128 (forced): two stripes a block, one of each: 12 groups */
        {"ws128", 16384, HC_GMK_WS128, 1, 12, 1},
        /* small M (tiles of 8) and the skinny kernels (forced at r = 32): the separate launch */
        {"t8", 128, HC_GPU_KERNEL_AUTO, 0, 0, 0},
        {"skinny", 4096, HC_GMK_SKINNY64, 0, 0, 0},
        /* r = 32: moe-ws80r, four stripes a block (two of gate, two of up): 6 groups, two
         * planes */
        {"ws80r auto", 4096, HC_GPU_KERNEL_AUTO, 1, 6, 2},
        /* two tile sizes (ws256r: a pair of stripes; ws80r: four) fused as one: the grid's x
         * as above, its planes unchanged */
        {"ws256r", 32768, HC_GMK_WS256R, 1, 12, 2},
        {"ws80r", 8192, HC_GMK_WS80R, 1, 6, 2},
    };
    for (size_t i = 0; i < sizeof gu_cases / sizeof gu_cases[0]; i++) {
        CHECK_EQ_INT(hc__gpu_moe_route_plan(&h200, HC_KF_ALL, 4, gu_cases[i].slots, 128,
                                            gu_cases[i].forced, &r, &err), HC_OK);
        CHECK_EQ_INT(hc__gpu_moe_gemm_plan(&h200, &gate, 2, &r, &lu, &err), HC_OK);
        const unsigned fz = hc__gpu_moe_fuse_plan(&lu, 2, false, 768, false, false, &us);
        if (fz != gu_cases[i].fuse || (fz && lu.grid[0] != gu_cases[i].grid0))
            fprintf(stderr, "  %s: fuse %u grid %u\n", gu_cases[i].what, fz, lu.grid[0]);
        CHECK_EQ_INT(fz, gu_cases[i].fuse);
        if (fz) {
            CHECK_EQ_INT(lu.grid[0], gu_cases[i].grid0);
            CHECK_EQ_INT(lu.grid[2], gu_cases[i].grid2);
        }
    }
}

static void test_moe_layer_tensors(void) {
    char path[600], msg[512];
    snprintf(path, sizeof path, "%s/moe-only.hconvert", test_tmpdir());
    for (int fused = 0; fused < 2; fused++) {
        const mcfg cf = {4, 64, 64, fused ? G_INTERLEAVED : G_SPLIT, false, fused != 0, fused != 0,
                         NULL};
        hc_container *c = NULL;
        if (write_block(path, &synth_specs[0], &cf, 5, NULL, msg, sizeof msg) ||
            hc_container_open(path, 1, &c, msg, sizeof msg)) {
            CHECK_FAIL_("fixture: %s", msg);
            continue;
        }
        const hc_moe_layer_info *l = hc__gpu_moe_record(c, "mlp");
        CHECK(l != NULL);
        CHECK(hc__gpu_moe_record(c, "mlp.experts") == NULL);
        CHECK(hc__gpu_moe_record(c, NULL) == NULL);
        if (l) {
            static const char *const per[] = {"mlp.experts.0.gate_proj", "mlp.experts.3.up_proj",
                                              "mlp.experts.2.down_proj"};
            static const char *const fus[] = {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"};
            static const char *const not_mine[] = {"mlp.gate.weight", "mlp.experts.gate_up_proj_bias",
                                                   "mlp.experts.down_proj_bias",
                                                   "mlp.experts.x.gate_proj", "mlp.experts.1.gate"};
            for (int i = 0; i < (fused ? 2 : 3); i++)
                CHECK(hc__gpu_moe_layer_has(l, fused ? fus[i] : per[i]));
            for (int i = 0; i < 5; i++) CHECK(!hc__gpu_moe_layer_has(l, not_mine[i]));
            CHECK(hc__gpu_moe_layer_has(l, fused ? per[0] : fus[0]) == false);
        }
        hc_container_free(c);
    }
    unlink(path);
}

void suite_moeplan(void) {
    RUN(test_moe_plan);
    RUN(test_moe_w8_plan);
    RUN(test_moe_w8_pick);
    RUN(test_moe_fuse_plan);
    RUN(test_moe_layer_tensors);
}
