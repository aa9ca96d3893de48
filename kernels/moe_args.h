/* moe_args.h: what the grouped MoE kernels (moe_gemm.cu, moe_route.cu) and the runtime that
 * launches them (runtime/gpu_moe.c) agree on: the routing tables' layout and the grouped GEMMs'
 * argument block. Plain C, seen by NVRTC as a header.
 *
 * Routing (hc_moe_route): the slots s = t * topk + j of a call whose expert id is one of the
 * model's [e0, e0 + El) are sorted by local expert, stably (slot order inside an expert), each
 * expert's run cut into tiles of the token tile T -- and, where the route has a second tile
 * Ts (0: none; the grouped kernels moe-ws256r and moe-ws80r), its remainder past its whole
 * tiles of T in one tile of Ts rows where it fits there (else in one more tile of T) -- the
 * run padded to its tiles' rows:
 *   sorted[p] = the slot at sorted position p, -1 in a pad;   inv[s] = p, or -1 (not local);
 *   meta[0] = the number of tiles; meta[HC_MOE_META_TILE(i)] = tile i's local expert,
 *   meta[HC_MOE_META_TILE(i) + 1] = its live rows (1 .. its tile, the pads after them);
 *   tail[0] = nb, the tiles of T rows (tiles 0 .. nb - 1 at rows i T ..; the tiles of Ts
 *   follow them, tile nb + j at rows nb T + j Ts ..), tail[1] = the rows of all tiles (pads
 *   included) -- two words apart from meta (the runtime puts them past its largest table), so
 *   that meta reads as it did before there were two sizes.
 * An expert's rows are its tiles of T in order, then its tile of Ts. The grids are sized by
 * the largest tile count a call can need; blocks of tiles past meta[0] return at once, so no
 * count goes back to the host and a captured graph replays with any routing. */
#ifndef HC_MOE_ARGS_H
#define HC_MOE_ARGS_H

#define HC_MOE_META_TILE(i) (1u + 2u * (unsigned)(i))
/* the most local experts one routing launch sorts (its shared-memory counters: 32 x El) */
#define HC_MOE_EXPERTS_MAX 1024u
/* threads of a routing block: 32 warps */
#define HC_MOE_ROUTE_THREADS 1024u
/* a routing block's dynamic shared memory for el local experts, bytes (moe_route.cu's
 * route_smem: counts 32 x el, totals el, the experts' rows 3 x el, warp sums 2 x 32 and the
 * two totals) */
#define HC_MOE_ROUTE_SMEM_BYTES(el) (4u * (36u * (el) + 66u))
/* the most blocks of a many-slot routing (hc_moe_route_count / _place), and its table of
 * unsigned words: the blocks' counts, then bases, per expert (El x HC_MOE_ROUTE_BLOCKS), then
 * the experts' rows (moe_route.cu: off, nfr, soff, 3 x El) */
#define HC_MOE_ROUTE_BLOCKS 32u
#define HC_MOE_ROUTE_TABLE_WORDS(el) ((el) * (HC_MOE_ROUTE_BLOCKS + 3u))
/* hc_moe_finalize: threads a block (8 columns each) and the slots whose rows a thread loads
 * before it sums them */
#define HC_MOE_FIN_THREADS 64u
#define HC_MOE_FIN_BATCH 8u

/* The warp-specialised grouped kernels' stripe groups, their grid's x (the runtime's plan;
 * moe_gemm.cu moe_ws_tile takes its part and first stripe by it): fuse 1 (halves) -- spw of gate's
 * ceil(I / 64) stripes a group; else 2 spw stripes of each part's tiles_n, parts times */
#define HC_MOE_WS_GROUPS(fuse, I, tiles_n, spw, parts)                                         \
    ((fuse) == 1 ? (((I) + 63) / 64 + (spw) - 1) / (spw)                                         \
                 : ((tiles_n) + 2 * (spw) - 1) / (2 * (spw)) * (parts))

/* The grouped GEMMs' arguments beside the layer's hc_mma_params: parts (1, or 2 when gate and
 * up are separate layers: part 0 gate, part 1 up, each N = I) of El experts each;
 * wtab[part * El + e] is expert e's first tile of that part; part q's outputs start at
 * out + q * ystride. rdiv 0: the activations are rows in sorted order (xs or the activation
 * output); rdiv = topk: row p is the token sorted[p] / topk of x (gathered in place). */
typedef struct {
    const unsigned long long *wtab;
    const int *sorted, *meta, *tail;
    /* each (part, expert)'s NVFP4 global divisor, indexed as wtab (per-expert layers each carry
     * their own), or 0: hc_mma_params' for all */
    const float *gdiv;
    unsigned long long el, ystride, rdiv;
    unsigned parts, tile;
    /* the activation in gate_up's epilogue (the warp-specialised kernels; epilogue/moe_act.cuh):
     * fuse 0, none (the outputs go to out, hc_moe_act follows); 1, halves -- a block's first
     * stripes are gate's, its next the same rows of up: parts 2, up is part 1; parts 1, up's
     * stripes are ustripes past gate's (stacked, I a multiple of 64); the grid's groups count
     * one half's stripes; 2, pairs -- rows 2 j, 2 j + 1 are gate and up of output j
     * (interleaved). Outputs h[row][j], j < I, ldh a row; bias [el][2][I] float32 or 0; act,
     * alpha, limit as hc_moe_act's. */
    unsigned fuse, act;
    float alpha, limit;
    const float *bias;
    unsigned short *h;
    unsigned long long ldh, I, ustripes;
} hc_moe_args;

#endif
