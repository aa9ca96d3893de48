/* streamk_rule.h: how the skinny kernels cut their work (gemm/skinny_gemm.cuh and the fix-up of
 * epilogue/streamk.cuh), written once for the kernels (NVRTC sees this file as a header) and
 * the host: the chooser sizes a dense launch's grid by it (runtime/gpu_plan.c) and
 * tests/t_walk.c replays every block's segments and arrivals by it. Plain C.
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
/* The first item of block b's range, of g taking part: floor(b x items / g), written as
 * b (items / g) + b (items % g) / g so that 32 bits hold every step (b <= g < 2^16, items <
 * 2^31: the launches' bounds) and the kernels' divisions stay inline (a 64-bit division is a
 * call, whose return address ptxas keeps in local memory). */
HC_HD unsigned hc_streamk_start(unsigned b, unsigned items, unsigned g) {
    return b * (items / g) + b * (items % g) / g;
}
/* The block whose range holds item t: ((t + 1) g - 1) / items (the host's form). */
HC_HD hc_u64 hc_streamk_owner(hc_u64 t, hc_u64 items, hc_u64 g) { return ((t + 1) * g - 1) / items; }
/* The same block, found by stepping from block b's range (the kernels' form: a tile spans a
 * few blocks, and start needs no 64-bit division). */
HC_HD unsigned hc_streamk_owner_from(unsigned t, unsigned b, unsigned items, unsigned g) {
    while (b > 0 && hc_streamk_start(b, items, g) > t) b--;
    while (b + 1 < g && hc_streamk_start(b + 1, items, g) <= t) b++;
    return b;
}
/* The slot in which block b left its segment of the tile whose first item is u0: 0 unless
 * its range began before the tile. */
HC_HD unsigned hc_streamk_slot(unsigned b, unsigned u0, unsigned items, unsigned g) {
    return hc_streamk_start(b, items, g) >= u0 ? 0u : 1u;
}

/* The workspace of a launch's segments, blocks taking part: two slots a block, each 256 rows
 * x toks float32 sums (epilogue/streamk.cuh: [block][slot][toks / 8][512 threads] float4). */
HC_HD hc_u64 hc_streamk_segment_bytes(hc_u64 blocks, hc_u64 toks) { return blocks * 2 * 256 * toks * 4; }

#endif
