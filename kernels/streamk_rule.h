/* streamk_rule.h: how the skinny kernels cut their work (gemm/skinny_gemm.cuh and the fix-up of
 * epilogue/streamk.cuh), written once for the kernels (NVRTC sees this file as a header) and
 * the host: the chooser sizes a dense launch's grid by it (runtime/gpu_plan.c) and
 * tests/t_plan.c replays every block's segments and arrivals by it. Plain C.
 *
 * A launch's `items` work items (output tiles x tiles_k, K tiles fastest) are cut into one
 * contiguous range per taking-part block, range b = [start(b), start(b + 1)). A tile whose
 * items lie in one block's range is written by it; otherwise each block with items of the tile
 * writes its segment to slot 0 (the segment its range begins with) or 1 (the one it ends with)
 * and arrives at the tile's counter, and the block that arrives last -- the (owner(last item) -
 * owner(first item) + 1)-th -- sums the segments of blocks owner(first) .. owner(last) in
 * that order. No range is empty, so every block between a tile's first and last one arrives. */
#ifndef HC_STREAMK_RULE_H
#define HC_STREAMK_RULE_H

#include "layout_core.h"

/* The blocks of a grid of `grid` that take part: all while each gets min_items items, else
 * items / min_items (at least one); the rest leave at once. */
HC_HD hc_u64 hc_streamk_blocks(hc_u64 items, hc_u64 grid, hc_u64 min_items) {
    hc_u64 want = items / min_items > 1 ? items / min_items : 1;
    return grid < want ? grid : want;
}
/* The first item of block b's range, of g taking part (items x g must fit 64 bits). */
HC_HD hc_u64 hc_streamk_start(hc_u64 b, hc_u64 items, hc_u64 g) { return b * items / g; }
/* The block whose range holds item t. */
HC_HD hc_u64 hc_streamk_owner(hc_u64 t, hc_u64 items, hc_u64 g) { return ((t + 1) * g - 1) / items; }
/* The slot in which block b left its segment of the tile whose first item is u0: 0 unless
 * its range began before the tile. */
HC_HD unsigned hc_streamk_slot(hc_u64 b, hc_u64 u0, hc_u64 items, hc_u64 g) {
    return hc_streamk_start(b, items, g) >= u0 ? 0u : 1u;
}

/* The workspace of a launch's segments, blocks taking part: two slots a block, each 256 rows
 * x toks float32 sums (epilogue/streamk.cuh: [block][slot][toks / 8][512 threads] float4). */
HC_HD hc_u64 hc_streamk_segment_bytes(hc_u64 blocks, hc_u64 toks) { return blocks * 2 * 256 * toks * 4; }

#endif
