/* ws_walk.h: the order in which the warp-specialised kernels' blocks -- or a persistent grid's
 * items -- take the (stripe group, token tile) grid (gemm/ws_gemm.cuh, moe_gemm.cu), written
 * once for the kernels (NVRTC sees this file as a header) and the host, so that tests/t_walk.c
 * can replay it: every cell of the grid taken exactly once. Plain C. */
#ifndef HC_WS_WALK_H
#define HC_WS_WALK_H

#include "config.h"
#include "layout_core.h"

/* Block (or item) id's stripe group *vp and token tile *mt of the grid gx x gy: token tiles
 * fastest inside groups of HC_WIDE_GROUP of them (the last group may be shorter), so that the
 * blocks in flight at once share their weights and activations in L2. id < gx x gy; gx x
 * HC_WIDE_GROUP and gx x gy under 2^32 (the launches' bounds: gpu_plan.c). */
HC_HD void hc_ws_walk(unsigned gx, unsigned gy, unsigned id, unsigned *vp, unsigned *mt) {
    const unsigned grp = id / (HC_WIDE_GROUP * gx), gm0 = grp * HC_WIDE_GROUP;
    const unsigned gm = gy - gm0 < HC_WIDE_GROUP ? gy - gm0 : HC_WIDE_GROUP;
    const unsigned within = id - grp * HC_WIDE_GROUP * gx;
    *vp = within / gm, *mt = gm0 + within % gm;
}

#endif
