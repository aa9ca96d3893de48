// streamk.cuh: the epilogue of the skinny kernels (gemm/skinny_gemm.cuh) and of ws128k (gemm/
// ws_gemm.cuh ws_gemm_streamk, 256 consumer threads where skinny has 512), whose blocks each own
// an equal contiguous range of the (output tile, K tile) work, so an output tile's K range may
// be cut between consecutive blocks. A block that ran a tile's whole K range writes it to Y
// from its accumulators. Otherwise each block's share (a segment) goes to the workspace, and
// the last of the tile's blocks to arrive adds the segments in block order -- a fixed order,
// so the result is the same bits on every run whichever block arrives last -- and writes Y.
// No block waits for another (no co-residency assumption), no atomics on outputs. The cut
// and the order are streamk_rule.h's. The pieces (store, arrive, sum) are separate because
// the skinny body arrives for a block's first segment from a producer thread (its handoff)
// and makes every sum at the block's end, from one call site.
#ifndef HC_K_EPILOGUE_STREAMK_CUH
#define HC_K_EPILOGUE_STREAMK_CUH

#include "codec/bf16.cuh"
#include "memory/ptx.cuh"
#include "streamk_rule.h"

/* Four values of a warpgroup's wgmma m64 x TOKS accumulators -- d[4 i .. 4 i + 3]: lane row r0
 * and r0 + 8 of its warp, tokens 8 i + 2 c and + 1 -- to Y as bf16: rows n0 + .. below N,
 * tokens tok0 + .. below m. */
__device__ __forceinline__ void frag_store4(float4 v, unsigned i, hc_u16 *__restrict__ y,
                                            hc_u64 n0, unsigned r0, unsigned c, hc_u64 tok0,
                                            hc_u64 m, hc_u64 N) {
    const float e4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const hc_u64 tok = tok0 + i * 8 + 2 * c + (e & 1), n = n0 + r0 + (e >= 2 ? 8 : 0);
        if (tok < m && n < N) y[tok * N + n] = bf16_of(e4[e]);
    }
}

/* A warpgroup's whole m64 x TOKS accumulators d to Y as frag_store4 does (its callers skip a
 * warpgroup whose rows begin at or past N). */
template <int TOKS>
__device__ __forceinline__ void frag_store_tile(const float *d, hc_u16 *__restrict__ y, hc_u64 n0,
                                                unsigned r0, unsigned c, hc_u64 tok0, hc_u64 m,
                                                hc_u64 N) {
#pragma unroll
    for (int i = 0; i < TOKS / 8; i++)
        frag_store4(make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]), (unsigned)i, y,
                    n0, r0, c, tok0, m, N);
}

/* The blocks b0 .. b1 whose ranges hold tile items [u0, u0 + tiles_k), found from block blk's
 * (w items, g blocks taking part). */
__device__ __forceinline__ void streamk_span(hc_u64 u0, hc_u64 tiles_k, hc_u64 blk, hc_u64 w,
                                             hc_u64 g, hc_u64 &b0, hc_u64 &b1) {
    b0 = hc_streamk_owner_from((unsigned)u0, (unsigned)blk, (unsigned)w, (unsigned)g);
    b1 = hc_streamk_owner_from((unsigned)(u0 + tiles_k - 1), (unsigned)blk, (unsigned)w, (unsigned)g);
}

/* Segment slot (0: the block's first, 1: its last) of block blk: the accumulators d of the NT
 * consumer threads to ws ([block][slot][TOKS / 8][NT] float4, fragment order, so the stores
 * are coalesced). */
template <int TOKS, int NT>
__device__ __forceinline__ void streamk_store(const float *d, float *__restrict__ ws, hc_u64 blk,
                                              unsigned slot, unsigned ctid) {
    constexpr int V = TOKS / 8; /* float4 per thread */
    float4 *mine = (float4 *)ws + ((blk * 2 + slot) * V) * NT + ctid;
#pragma unroll
    for (int j = 0; j < V; j++)
        __stcg(mine + j * NT, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
}

/* The last arrival's sums of output tile u (items [u0, u0 + tiles_k)): every block's segment
 * of u, blocks b0 .. b1 in that order, added in d and stored as frag_store4 does (rows n0 + ..,
 * tokens tok0 + ..); the tile's counter cnt[u] reset for the next launch. */
template <int TOKS, int NT>
__device__ __forceinline__ void streamk_sum(float *d, const float *__restrict__ ws,
                                            unsigned *__restrict__ cnt, hc_u64 u, hc_u64 u0,
                                            hc_u64 b0, hc_u64 b1, unsigned ctid, hc_u64 w, hc_u64 g,
                                            hc_u16 *__restrict__ y, hc_u64 n0, unsigned r0,
                                            unsigned c, hc_u64 tok0, hc_u64 m, hc_u64 N) {
    constexpr int V = TOKS / 8;
    const unsigned w32 = (unsigned)w, g32 = (unsigned)g, u032 = (unsigned)u0;
    /* block by block, each block's V loads in flight together (one round trip a block) */
    for (hc_u64 b = b0; b <= b1; b++) {
        const float4 *src =
            (const float4 *)ws + ((b * 2 + hc_streamk_slot((unsigned)b, u032, w32, g32)) * V) * NT + ctid;
        float4 v[V];
#pragma unroll
        for (int j = 0; j < V; j++) v[j] = __ldcg(src + j * NT);
#pragma unroll
        for (int j = 0; j < V; j++) {
            if (b == b0) {
                d[4 * j] = v[j].x, d[4 * j + 1] = v[j].y, d[4 * j + 2] = v[j].z, d[4 * j + 3] = v[j].w;
            } else {
                d[4 * j] += v[j].x, d[4 * j + 1] += v[j].y, d[4 * j + 2] += v[j].z, d[4 * j + 3] += v[j].w;
            }
        }
    }
    if (n0 < N) frag_store_tile<TOKS>(d, y, n0, r0, c, tok0, m, N);
    if (ctid == 0) cnt[u] = 0; /* ready for the next launch */
}

/* Block blk's arrival at the counter of output tile u (items [u0, u0 + tiles_k)), its segment
 * stored before by the NT consumer threads (ctid < NT; their named barrier 1): whether it is
 * the last (the block then sums the tile: streamk_sum). In a bench build's no-fix-up mode
 * (HC_GEMV_DIAG 3) no block arrives: a measurement, wrong outputs. */
template <int NT>
__device__ __forceinline__ bool streamk_arrive(unsigned *__restrict__ cnt, hc_u64 u, hc_u64 u0,
                                               hc_u64 tiles_k, hc_u64 blk, unsigned ctid, hc_u64 w,
                                               hc_u64 g, unsigned &last) {
#if HC_GEMV_DIAG == 3
    return false;
#endif
    hc_u64 b0, b1;
    streamk_span(u0, tiles_k, blk, w, g, b0, b1);
    /* (thread 0 rewrites last only after a later segment's first barrier, after every thread
     * has read it here) */
    return arrive_last(&cnt[u], (unsigned)(b1 - b0), ctid == 0, last, [] { bar_sync<1, NT>(); });
}

#endif
