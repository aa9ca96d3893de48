// gemv_items.cuh: the small-M body over whole work items a warp owns (the grouped
// hc_moe_gemv_w8, moe_gemm.cu): each of a block's four warps takes items -- a 64-row stripe of
// one expert x a tile of 8 tokens, its whole K range -- round-robin over the grid's warps, and
// its copy pipeline runs on across them: the next item's tiles are issued while the current
// one's are computed, so a short K (MoE down: 4 tiles at I = 256) pays no
// pipeline fill, block-wide reduction or workspace per item (bench/NOTES.md v32: per-unit
// costs are what lost; v44). The tile arithmetic is gemv.cuh's (gemv_tile); an item's outputs
// leave from the C fragments (no K split: the warp holds the whole sum).
#ifndef HC_K_GEMM_GEMV_ITEMS_CUH
#define HC_K_GEMM_GEMV_ITEMS_CUH

#include "gemm/gemv.cuh"

/* An item as its warp reads it (shared memory, written once at the start by the Work's fill):
 * the stripe's chunks, Y at the item's (token 0, row 0) (token t's row r at y + t N + r), its
 * live tokens and rows of Y (below N), the NVFP4 global divisor, each live token's row of X. */
struct gemv_item {
    const hc_u8 *w;
    hc_u16 *y;
    unsigned rows, nmax;
    float gdiv;
    unsigned tok[8];
    unsigned pad_;
};
static_assert(sizeof(gemv_item) * 4 * HC_GEMVW_ITEMS == HC_GEMVW_DESC_BYTES,
              "config.h's HC_GEMVW_DESC_BYTES is not the items' shared memory");

/* `items` work items (Work::fill(u, item) describes item u; u < items), the grid's warps taking
 * u = warp, warp + 4 gridDim.x, ... -- as many as that gives (the host launches one wave). A
 * warp's descriptors are a ring of HC_GEMVW_ITEMS: its first items are described at the
 * start, and each time 32 more of its items are done their lanes describe the next 32 into
 * those items' places (v105: before, a warp took at most HC_GEMVW_ITEMS and the host added a
 * second, short wave of blocks past that). The issue side runs at most HC_GEMVW_STAGES - 1 K
 * tiles -- as many items -- ahead of the items done, inside the ring's other 16. 128 threads;
 * shared memory: 4 warps x HC_GEMVW_STAGES x (chunk bytes + 8 x 128), and the descriptors
 * (static). No barrier of the whole block: a warp with no item leaves at once. */
template <class Work>
__device__ __forceinline__ void gemv_items_body(const Work &work, unsigned items,
                                                const hc_mma_params &p,
                                                const hc_u16 *__restrict__ x) {
    constexpr int NS = HC_GEMVW_STAGES;
    constexpr unsigned R = HC_GEMVW_ITEMS; /* the ring: 32 refilled at a time, 16 to run ahead in */
    static_assert(R >= 32 + 16 && NS - 1 <= 16, "the issue side stays inside the ring's other 16");
    __shared__ gemv_item desc[4][R];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
    const unsigned G = gridDim.x * 4u, gw = blockIdx.x * 4u + warp;
    const unsigned n = gw < items ? (items - gw + G - 1) / G : 0u;
    gemv_item *d = desc[warp];
    for (unsigned j = lane; j < n && j < R; j += 32) work.fill(gw + j * G, d[j]);
    __syncwarp();
    if (n == 0) return;
    const unsigned cb = HC_CHUNK_BYTES, sb = cb + 8u * 128u, tk = (unsigned)p.tiles_k;
    const unsigned mine_s = smem_addr(hc_smem) + warp * NS * sb;
    hc_u8 *mine = hc_smem + warp * NS * sb;
    const unsigned total = n * tk;
    /* this lane's copies of a tile: chunk bytes lane x 16 + 512 q; activation pieces q = lane +
     * 32 h (token q / 8, 16-byte piece q % 8), swizzled as gemv.cuh's stages */
    const unsigned nq = (cb + 511) / 512;
    const bool qlast = lane * 16 + (nq - 1) * 512 < cb;
    unsigned xoff[2], tokh[2];
    hc_u64 xend[2];
#pragma unroll
    for (unsigned h = 0; h < 2; h++) {
        const unsigned q = lane + h * 32, t = q >> 3, pc = q & 7;
        tokh[h] = t;
        xoff[h] = cb + t * 128 + ((pc ^ (t & 7)) * 16);
        xend[h] = p.K > pc * 8 ? p.K - pc * 8 : 0;
    }
    /* the issue side: the item of descriptor d[islot], its tile ikb; its running chunk source
     * and activation rows */
    unsigned islot = 0, ikb = 0, snext = 0;
    const hc_u8 *csrc = nullptr;
    const hc_u16 *xrow[2] = {x, x};
    bool xlive[2] = {false, false};
    auto issue = [&]() {
        if (ikb == 0) {
            const gemv_item &it = d[islot];
            csrc = it.w + lane * 16;
#pragma unroll
            for (unsigned h = 0; h < 2; h++) {
                xlive[h] = tokh[h] < it.rows;
                xrow[h] = x + (xlive[h] ? (hc_u64)it.tok[tokh[h]] * p.ldx : 0) + ((lane + h * 32) & 7) * 8;
            }
        }
        const unsigned dst = mine_s + snext * sb;
#pragma unroll
        for (unsigned q = 0; q < (HC_CHUNK_BYTES + 511) / 512; q++)
            cp16_if(dst + lane * 16 + q * 512, csrc + q * 512, 16, q + 1 < nq || qlast);
        csrc += cb;
        const hc_u64 kc = (hc_u64)ikb * 64;
#pragma unroll
        for (unsigned h = 0; h < 2; h++) { /* (a dead piece is zero-filled: rows change by item) */
            const bool ok = xlive[h] && kc < xend[h];
            cp16_if(dst + xoff[h], ok ? xrow[h] + kc : x, ok ? 16 : 0, true);
        }
        if (++ikb == tk) ikb = 0, islot = islot + 1 == R ? 0 : islot + 1;
        snext = snext + 1 == NS ? 0 : snext + 1;
    };
#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        if ((unsigned)s < total) issue();
        cp_commit();
    }
    float acc[4][1][4], part[1][4];
#pragma unroll
    for (int rb = 0; rb < 4; rb++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[rb][0][e] = 0.0f;
#pragma unroll
    for (int e = 0; e < 4; e++) part[0][e] = 0.0f;
    hc_mma_params pe = p;
    pe.global_div = d[0].gdiv;
    unsigned cj = 0, cslot = 0, ckb = 0, scur = 0; /* (d[cslot]: item cj's descriptor) */
    for (unsigned i = 0; i < total; i++, scur = scur + 1 == NS ? 0 : scur + 1) {
        __syncwarp(); /* every lane is done with the stage about to be refilled */
        if (i + NS - 1 < total) issue();
        cp_commit();
        unsigned b[4][1][2];
        cp_wait<NS - 1>();
        __syncwarp();
        gemv_tile<1, 8>(mine + scur * sb, nullptr, pe, lane, b, acc, part);
        if (++ckb < tk) continue;
        /* item cj's sums are whole: to Y, then the next item's */
        const gemv_item &it = d[cslot];
#pragma unroll
        for (int rb = 0; rb < 4; rb++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const unsigned row = rb * 16 + g + (e >= 2 ? 8 : 0), tok = 2 * c + (e & 1);
                if (tok < it.rows && row < it.nmax) it.y[tok * p.N + row] = bf16_of(acc[rb][0][e]);
                acc[rb][0][e] = 0.0f;
            }
        ckb = 0;
        cslot = cslot + 1 == R ? 0 : cslot + 1;
        if (++cj % 32 == 0 && cj + R - 32 < n) {
            /* items cj - 32 .. cj - 1 done: their places take items cj + R - 32 .. (every lane
             * has stored its sums of the last of them first); item cj + R - 32 + lane's place
             * is R - 32 + lane past item cj's */
            __syncwarp();
            const unsigned j = cj + R - 32 + lane, sl = cslot + (R - 32) + lane;
            if (j < n) work.fill(gw + j * G, d[sl >= R ? sl - R : sl]);
            __syncwarp();
        }
        if (cj < n) pe.global_div = d[cslot].gdiv;
    }
    cp_wait<0>();
}

#endif
