// moe_route.cu: the parts of a mixture-of-experts block that are not GEMMs (runtime/gpu_moe.c
// launches them around the grouped GEMMs of moe_gemm.cu): the routing sort, the gather of
// activations by sorted row, the activation between the projections, and the top-k weighted
// sum. One module per device, whatever the layers' kinds. No atomics on results: the same
// inputs give the same bits on every run.
#include "codec/bf16.cuh"
#include "config.h"
#include "epilogue/moe_act.cuh"
#include "memory/ptx.cuh"
#include "moe_args.h"

/* ---- the routing sort: moe_args.h's tables for S slots of ids (int32; local expert id - e0 in
 * [0, El)), tiles T and Ts (0: one size). A block of HC_MOE_ROUTE_THREADS sorts a contiguous
 * range of the slots with dynamic shared memory HC_MOE_ROUTE_SMEM_BYTES(El): warp w owns a
 * contiguous part of the range; pass 1 counts its slots per expert (cnt[w][e]), the counts
 * become per-warp bases inside each expert, and exclusive scans over the experts give each its
 * tiles' rows: off[e] the first row of its tiles of T (nfr[e] rows of them), soff[e] the first
 * of its tile of Ts (after every tile of T); pass 2 walks the same parts in
 * the same order and places each slot by its rank q inside its expert -- the block's base + its
 * warp's base + its rank among the warp's earlier slots of e (__match_any_sync) -- at off[e] + q
 * while q < nfr[e], else in the tile of Ts: a stable counting sort, deterministic without
 * atomics. Few slots: one block, hc_moe_route. Many: hc_moe_route_count then
 * hc_moe_route_place over the same blocks, the blocks' counts per expert turned into their
 * bases by the last block to count (the same sort: a stable sort's result is unique). ---- */
struct route_smem {
    /* [32][El], [El] x 4, [2][32] + the totals (rows of the tiles of T, tiles of Ts) */
    unsigned *cnt, *tot, *off, *nfr, *soff, *wsum;
};
__device__ __forceinline__ route_smem route_smem_of(unsigned *sm, unsigned El) {
    return {sm, sm + 32 * El, sm + 33 * El, sm + 34 * El, sm + 35 * El, sm + 36 * El};
}
/* an expert of c rows: *nf tiles of T and *ns (0 or 1) of Ts -- its remainder past whole tiles
 * of T in a tile of Ts where it fits, else in one more tile of T; Ts = 0: ceil(c / T) of T */
__device__ __forceinline__ void route_split(unsigned c, unsigned T, unsigned Ts, unsigned *nf,
                                            unsigned *ns) {
    if (!Ts) {
        *nf = (c + T - 1) / T, *ns = 0;
        return;
    }
    unsigned f = c / T, rem = c - f * T;
    if (rem > Ts) f++, rem = 0;
    *nf = f, *ns = rem ? 1u : 0u;
}
/* slot s's local expert: -2 past the warp's part (no slot), -1 not local */
__device__ __forceinline__ int route_expert(const int *ids, hc_u64 s, hc_u64 hi, int e0, unsigned El) {
    if (s >= hi) return -2;
    long long d = (long long)ids[s] - e0;
    return d >= 0 && d < (long long)El ? (int)d : -1;
}
/* pass 1 over the block's slots [lo, hi) (warp w's part [*wlo, *whi)), then each warp's counts
 * made its bases inside each expert and tot[e] the block's count of e */
__device__ __forceinline__ void route_count(const int *ids, hc_u64 lo, hc_u64 hi, int e0,
                                            unsigned El, const route_smem &r, hc_u64 *wlo,
                                            hc_u64 *whi) {
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (unsigned i = tid; i < 32 * El; i += blockDim.x) r.cnt[i] = 0;
    __syncthreads();
    const hc_u64 per = (hi - lo + 31) / 32, a = lo + warp * per < hi ? lo + warp * per : hi;
    const hc_u64 b = a + per < hi ? a + per : hi;
    *wlo = a, *whi = b;
    for (hc_u64 q = a; q < b; q += 32) {
        int e = route_expert(ids, q + lane, b, e0, El);
        unsigned peers = __match_any_sync(0xFFFFFFFFu, e);
        if (e >= 0 && lane == (unsigned)__ffs(peers) - 1) r.cnt[warp * El + e] += __popc(peers);
        __syncwarp();
    }
    __syncthreads();
    for (unsigned e = tid; e < El; e += blockDim.x) {
        unsigned run = 0;
        for (unsigned w = 0; w < 32; w++) {
            unsigned c = r.cnt[w * El + e];
            r.cnt[w * El + e] = run;
            run += c;
        }
        r.tot[e] = run;
    }
    __syncthreads();
}
/* from the experts' counts tot[e] (El <= HC_MOE_EXPERTS_MAX = the block's threads: thread e
 * holds expert e): two exclusive scans, of the rows of their tiles of T and of their tiles of
 * Ts, into off[e], nfr[e] and soff[e]; the totals (rows of the tiles of T, tiles of Ts) into
 * wsum[64], wsum[65], meta[0] and tail */
__device__ __forceinline__ void route_scan(unsigned El, unsigned T, unsigned Ts, const route_smem &r,
                                           int *meta, int *tail) {
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    unsigned v[2] = {0u, 0u}, incl[2];
    if (tid < El) {
        unsigned nf, ns;
        route_split(r.tot[tid], T, Ts, &nf, &ns);
        v[0] = nf * T, v[1] = ns;
    }
#pragma unroll
    for (int q = 0; q < 2; q++) {
        incl[q] = v[q];
        for (unsigned d = 1; d < 32; d <<= 1) {
            unsigned n = __shfl_up_sync(0xFFFFFFFFu, incl[q], d);
            if (lane >= d) incl[q] += n;
        }
        if (lane == 31) r.wsum[q * 32 + warp] = incl[q];
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int q = 0; q < 2; q++) {
            unsigned s = r.wsum[q * 32 + lane], si = s;
            for (unsigned d = 1; d < 32; d <<= 1) {
                unsigned n = __shfl_up_sync(0xFFFFFFFFu, si, d);
                if (lane >= d) si += n;
            }
            r.wsum[q * 32 + lane] = si - s; /* exclusive */
            if (lane == 31) r.wsum[64 + q] = si; /* the total */
        }
    }
    __syncthreads();
    /* (the tiles of Ts come after every tile of T: wsum[64] rows of them) */
    const unsigned bigrows = r.wsum[64], nsmall = r.wsum[65];
    if (tid < El) {
        r.off[tid] = r.wsum[warp] + incl[0] - v[0];
        r.nfr[tid] = v[0];
        r.soff[tid] = bigrows + (r.wsum[32 + warp] + incl[1] - v[1]) * Ts;
    }
    if (tid == 0) {
        meta[0] = (int)(bigrows / T + nsmall);
        tail[0] = (int)(bigrows / T), tail[1] = (int)(bigrows + nsmall * Ts);
    }
    __syncthreads();
}
/* pass 2 over warp w's part [wlo, whi): each local slot of rank q inside its expert -- qb[e]
 * (the block's base in the expert; null: 0) + its warp's base + its rank -- to off[e] + q, or
 * past its tiles of T (q >= nfr[e]) to soff[e] + q - nfr[e]; inv[s] its place (-1 when not
 * local) */
__device__ __forceinline__ void route_place(const int *ids, hc_u64 wlo, hc_u64 whi, int e0,
                                            unsigned El, const route_smem &r, const unsigned *qb,
                                            int *sorted, int *inv) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (hc_u64 q = wlo; q < whi; q += 32) {
        const hc_u64 s = q + lane;
        int e = route_expert(ids, s, whi, e0, El);
        unsigned peers = __match_any_sync(0xFFFFFFFFu, e);
        if (e >= 0) {
            const unsigned k = (qb ? qb[e] : 0u) + r.cnt[warp * El + e] +
                               __popc(peers & ((1u << lane) - 1u));
            const unsigned p = k < r.nfr[e] ? r.off[e] + k : r.soff[e] + (k - r.nfr[e]);
            sorted[p] = (int)s;
            inv[s] = (int)p;
        } else if (e == -1) {
            inv[s] = -1;
        }
        __syncwarp();
        if (e >= 0 && lane == (unsigned)__ffs(peers) - 1) r.cnt[warp * El + e] += __popc(peers);
        __syncwarp();
    }
}
/* tile i's entry in meta: its expert and live rows */
__device__ __forceinline__ void route_tile(int *meta, unsigned i, unsigned e, unsigned rows) {
    meta[HC_MOE_META_TILE(i)] = (int)e;
    meta[HC_MOE_META_TILE(i) + 1] = (int)rows;
}
/* each expert's pads (sorted -1) and tiles (meta) from its count tot[e] and rows off, nfr, soff
 * (its tiles of T are tiles off[e] / T ..; its tile of Ts is tile nb + (soff[e] - nb T) / Ts,
 * after all nb = wsum[64] / T tiles of T) */
__device__ __forceinline__ void route_tiles(unsigned El, unsigned T, unsigned Ts,
                                            const route_smem &r, int *sorted, int *meta) {
    for (unsigned e = threadIdx.x; e < El; e += blockDim.x) {
        const unsigned n = r.tot[e], o = r.off[e], nfr = r.nfr[e];
        const unsigned big = n < nfr ? n : nfr, small = n - big; /* (live rows of each) */
        for (unsigned q = big; q < nfr; q++) sorted[o + q] = -1;
        for (unsigned q = 0; q < nfr; q += T) route_tile(meta, (o + q) / T, e, n - q < T ? n - q : T);
        if (small) {
            const unsigned so = r.soff[e];
            for (unsigned q = small; q < Ts; q++) sorted[so + q] = -1;
            route_tile(meta, r.wsum[64] / T + (so - r.wsum[64]) / Ts, e, small);
        }
    }
}

/* One block sorts all S slots. */
extern "C" __global__ void __launch_bounds__(HC_MOE_ROUTE_THREADS)
    hc_moe_route(const int *ids, hc_u64 S, int e0, unsigned El, unsigned T, unsigned Ts,
                 int *sorted, int *inv, int *meta, int *tail) {
    extern __shared__ unsigned sm[];
    const route_smem r = route_smem_of(sm, El);
    hc_u64 wlo, whi;
    HC_PDL_WAIT();
    route_count(ids, 0, S, e0, El, r, &wlo, &whi);
    route_scan(El, T, Ts, r, meta, tail);
    route_place(ids, wlo, whi, e0, El, r, nullptr, sorted, inv);
    route_tiles(El, T, Ts, r, sorted, meta);
    HC_PDL_RELEASE();
}

/* Block b of gridDim.x (<= HC_MOE_ROUTE_BLOCKS) of a many-slot sort: slots [b S / B, (b + 1) S
 * / B) */
__device__ __forceinline__ void route_block_range(hc_u64 S, hc_u64 *lo, hc_u64 *hi) {
    *lo = S * blockIdx.x / gridDim.x, *hi = S * (blockIdx.x + 1) / gridDim.x;
}

/* Many slots, first launch: each block counts its range per expert into rtab[e][b]
 * (HC_MOE_ROUTE_BLOCKS columns); the last block to finish (ticket: zero between launches,
 * reset by it) turns each expert's row into the blocks' exclusive bases, scans the totals into
 * the experts' rows (rtab + El x HC_MOE_ROUTE_BLOCKS: off, nfr, soff, [3][El]) and writes meta
 * and the pads. */
extern "C" __global__ void __launch_bounds__(HC_MOE_ROUTE_THREADS)
    hc_moe_route_count(const int *ids, hc_u64 S, int e0, unsigned El, unsigned T, unsigned Ts,
                       int *sorted, int *meta, int *tail, unsigned *rtab, unsigned *ticket) {
    extern __shared__ unsigned sm[];
    __shared__ unsigned last;
    const route_smem r = route_smem_of(sm, El);
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, B = gridDim.x;
    hc_u64 lo, hi, wlo, whi;
    if (B > HC_MOE_ROUTE_BLOCKS) __trap(); /* (the table's rows: the host's plan caps B) */
    HC_PDL_WAIT();
    route_block_range(S, &lo, &hi);
    route_count(ids, lo, hi, e0, El, r, &wlo, &whi);
    for (unsigned e = tid; e < El; e += blockDim.x)
        __stcg(rtab + (hc_u64)e * HC_MOE_ROUTE_BLOCKS + blockIdx.x, r.tot[e]);
    if (!arrive_last(ticket, B - 1, tid == 0, last, [] { __syncthreads(); })) {
        HC_PDL_RELEASE();
        return;
    }
    /* a warp an expert: the blocks' counts (one a lane) into exclusive bases, the total */
    for (unsigned e = warp; e < El; e += blockDim.x / 32) {
        unsigned *row = rtab + (hc_u64)e * HC_MOE_ROUTE_BLOCKS;
        const unsigned c = lane < B ? __ldcg(row + lane) : 0u;
        unsigned incl = c;
        for (unsigned d = 1; d < 32; d <<= 1) {
            unsigned n = __shfl_up_sync(0xFFFFFFFFu, incl, d);
            if (lane >= d) incl += n;
        }
        if (lane < B) row[lane] = incl - c;
        if (lane == 31) r.tot[e] = incl;
    }
    __syncthreads();
    route_scan(El, T, Ts, r, meta, tail);
    unsigned *rows = rtab + (hc_u64)El * HC_MOE_ROUTE_BLOCKS;
    for (unsigned e = tid; e < El; e += blockDim.x)
        rows[e] = r.off[e], rows[El + e] = r.nfr[e], rows[2 * El + e] = r.soff[e];
    route_tiles(El, T, Ts, r, sorted, meta);
    if (tid == 0) *ticket = 0; /* ready for the next launch */
    HC_PDL_RELEASE();
}

/* Many slots, second launch (the same grid): each block counts its range again and places its
 * slots by their rank in the expert -- the block's base (rtab, from hc_moe_route_count) + the
 * warp's base + the rank -- in the expert's rows (rtab's off, nfr, soff). */
extern "C" __global__ void __launch_bounds__(HC_MOE_ROUTE_THREADS)
    hc_moe_route_place(const int *ids, hc_u64 S, int e0, unsigned El, const unsigned *rtab,
                       int *sorted, int *inv) {
    extern __shared__ unsigned sm[];
    const route_smem r = route_smem_of(sm, El);
    hc_u64 lo, hi, wlo, whi;
    if (gridDim.x > HC_MOE_ROUTE_BLOCKS) __trap(); /* (as hc_moe_route_count) */
    HC_PDL_WAIT();
    route_block_range(S, &lo, &hi);
    route_count(ids, lo, hi, e0, El, r, &wlo, &whi);
    /* the experts' rows (the count launch's scan) and the block's base in each, in tot (the
     * block's own counts are not needed past route_count) */
    const unsigned *rows = rtab + (hc_u64)El * HC_MOE_ROUTE_BLOCKS;
    for (unsigned e = threadIdx.x; e < El; e += blockDim.x) {
        r.off[e] = __ldcg(rows + e), r.nfr[e] = __ldcg(rows + El + e);
        r.soff[e] = __ldcg(rows + 2 * El + e);
        r.tot[e] = __ldcg(rtab + (hc_u64)e * HC_MOE_ROUTE_BLOCKS + blockIdx.x);
    }
    __syncthreads();
    route_place(ids, wlo, whi, e0, El, r, r.tot, sorted, inv);
    HC_PDL_RELEASE();
}

/* the local expert of slot s (a sorted row's, s >= 0: its id is local) */
__device__ __forceinline__ unsigned route_local(const int *ids, int s, int e0) {
    return (unsigned)(ids[s] - e0);
}

/* ---- hc_moe_expand: xs[p] = x[sorted[p] / topk] for the sorted rows (zeros in pads; tail[1]
 * of them), its columns gathered by the row's expert's act-order permutation (ptab[e]: int32
 * [K], or 0) and zero-padded from K to ldxs. T = config.h HC_MOE_EXPAND_ROW_THREADS threads a
 * row, grid-stride over the block's rows (blockDim / T of them: the runtime's grid counts
 * them); each thread keeps four 16-byte pieces in flight where the strides allow, pad rows
 * included. With config.h HC_MOE_EXPAND_ROWS4 the unpermuted 16-byte case instead gives each
 * thread one column piece and four rows in flight (grid y: a row's pieces in blocks of 256);
 * with HC_MOE_EXPAND_TOKENS as well, by token: tokens rows of x, inv the slots' sorted places. ---- */
extern "C" __global__ void hc_moe_expand(const hc_u16 *x, hc_u64 ldx, hc_u64 K, const int *sorted,
                                         const int *tail, const int *ids, int e0, hc_u64 topk,
                                         const hc_u64 *ptab, hc_u16 *xs, hc_u64 ldxs,
                                         const int *inv, hc_u64 tokens) {
    HC_PDL_WAIT();
    constexpr unsigned T = HC_MOE_EXPAND_ROW_THREADS, W = 8 * T; /* a pass's columns */
    static_assert(T >= 1 && T <= 256 && 256 % T == 0, "rows of the launch's 256 threads");
    const hc_u64 rows = (hc_u64)tail[1];
    const unsigned lane = threadIdx.x % T, rpb = blockDim.x / T;
    const bool vec = K % 8 == 0 && ldx % 8 == 0 && ldxs % 8 == 0 && ((hc_u64)x & 15) == 0 &&
                     ((hc_u64)xs & 15) == 0;
    if (HC_MOE_EXPAND_ROWS4 && vec && !ptab && (hc_u64)gridDim.y * blockDim.x * 8 >= ldxs) {
        /* v89: this thread's column piece c (grid y: 256 pieces a block, covering the row --
         * else the form below), rows blockIdx.x + gridDim.x j, four loads in flight before
         * their stores (a slot is below 2^31 and top-k at most 256: a 32-bit division) */
        const unsigned tk = (unsigned)topk;
        const hc_u64 c = ((hc_u64)blockIdx.y * blockDim.x + threadIdx.x) * 8;
        const hc_u64 G = gridDim.x;
        if (HC_MOE_EXPAND_TOKENS && blockDim.x % 32 == 0) {
            /* v103: the same piece of tokens blockIdx.x + gridDim.x j, each loaded once, with
             * its top-k places, and stored to the places that are this model's (inv: -1 for
             * an expert elsewhere); then the pads: each warp reads 32 rows' slots at once and
             * every thread zeroes its piece of the pad rows among them. Each (row, piece) is
             * written once: real rows by their slot's token, pads by the second pass. */
            const bool mine = c < ldxs;
            for (hc_u64 t = blockIdx.x; t < tokens; t += G) {
                const uint4 v =
                    mine && c < K ? *(const uint4 *)(x + t * ldx + c) : make_uint4(0, 0, 0, 0);
                /* (eight places loaded before their stores: the loads in flight together) */
                for (unsigned j0 = 0; j0 < tk; j0 += 8) {
                    int pl[8];
#pragma unroll
                    for (unsigned u = 0; u < 8; u++) pl[u] = j0 + u < tk ? inv[t * tk + j0 + u] : -1;
#pragma unroll
                    for (unsigned u = 0; u < 8; u++)
                        if (mine && pl[u] >= 0) *(uint4 *)(xs + (hc_u64)pl[u] * ldxs + c) = v;
                }
            }
            const unsigned l = threadIdx.x & 31;
            for (hc_u64 q0 = (hc_u64)blockIdx.x * 32; q0 < rows; q0 += 32 * G) {
                const bool pad = q0 + l < rows && sorted[q0 + l] < 0;
                unsigned pads = __ballot_sync(0xffffffffu, pad);
                while (mine && pads) {
                    const unsigned b = (unsigned)__ffs(pads) - 1;
                    pads &= pads - 1;
                    *(uint4 *)(xs + (q0 + b) * ldxs + c) = make_uint4(0, 0, 0, 0);
                }
            }
        } else {
            for (hc_u64 p0 = blockIdx.x; c < ldxs && p0 < rows; p0 += 4 * G) {
                uint4 v[4];
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    const hc_u64 p = p0 + u * G;
                    const int s = p < rows ? sorted[p] : -1;
                    v[u] = s >= 0 && c < K
                               ? *(const uint4 *)(x + (hc_u64)((unsigned)s / tk) * ldx + c)
                               : make_uint4(0, 0, 0, 0);
                }
#pragma unroll
                for (int u = 0; u < 4; u++)
                    if (p0 + u * G < rows) *(uint4 *)(xs + (p0 + u * G) * ldxs + c) = v[u];
            }
        }
        HC_PDL_RELEASE();
        return;
    }
    /* (the row-a-block form: on grid y's first plane only, where the launch has several) */
    for (hc_u64 p = (hc_u64)blockIdx.x * rpb + threadIdx.x / T; blockIdx.y == 0 && p < rows;
         p += (hc_u64)gridDim.x * rpb) {
        const int s = sorted[p];
        const int *perm = ptab && s >= 0 ? (const int *)ptab[route_local(ids, s, e0)] : nullptr;
        const hc_u16 *src = s >= 0 ? x + (hc_u64)s / topk * ldx : nullptr;
        hc_u16 *dst = xs + p * ldxs;
        if (!perm && vec) {
            for (hc_u64 c0 = lane * 8; c0 < ldxs; c0 += 4 * W) {
                uint4 v[4];
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    const hc_u64 c = c0 + u * W;
                    v[u] = src && c < K ? *(const uint4 *)(src + c) : make_uint4(0, 0, 0, 0);
                }
#pragma unroll
                for (int u = 0; u < 4; u++)
                    if (c0 + u * W < ldxs) *(uint4 *)(dst + c0 + u * W) = v[u];
            }
            continue;
        }
        for (hc_u64 c = lane; c < ldxs; c += T)
            dst[c] = src && c < K ? src[perm ? (hc_u64)perm[c] : c] : (hc_u16)0;
    }
    HC_PDL_RELEASE();
}

/* ---- hc_moe_act: h[p][c] = act(gate + bg, up + bu) for the sorted rows (zeros in pads; tail[1]
 * of them; a row's expert from its slot's id: ids, e0), in
 * float32 from the gate_up outputs: gate j of row p at g[p * ldg + j * cs], up j at
 * u[p * ldg + j * cs] (interleaved: u = g + 1, cs = 2; stacked: u = g + I, cs = 1; two
 * layers: two buffers, cs = 1); j = c, or the down projection's act-order permutation of the
 * row's expert (ptab[e][c]); biases float32 bias[e][2][I] (gate, up) or 0. act 0: silu(gate) x
 * up; 1 (gpt-oss): gate clamped to <= limit, up to [-limit, limit], gate x sigmoid(alpha x
 * gate) x (up + 1). A thread takes 8 columns of a row -- the grid's threads stride over the
 * rows' 8-column pieces, row after row, so that a narrow row (I = 256 is 32 pieces) does not
 * leave a block's other threads idle (v102) -- with 16-byte loads and stores where no
 * permutation and the strides allow (bench/NOTES.md MoE v3; the function itself:
 * epilogue/moe_act.cuh, which gate_up's epilogue applies instead where it can). ---- */
extern "C" __global__ void hc_moe_act(const hc_u16 *g, const hc_u16 *u, hc_u64 ldg, hc_u64 cs,
                                      hc_u64 I, const int *sorted, const int *tail, const int *ids,
                                      int e0, const float *bias, const hc_u64 *ptab, unsigned act,
                                      float alpha, float limit, hc_u16 *h, hc_u64 ldh) {
    HC_PDL_WAIT();
    const hc_u64 rows = (hc_u64)tail[1];
    /* 16-byte pieces: 8 columns of gate and up (cs = 1: 8 of each buffer; cs = 2: 16 interleaved
     * values from g) and of h */
    const bool vec = !ptab && I % 8 == 0 && ldg % 8 == 0 && ldh % 8 == 0 && ((hc_u64)g & 15) == 0 &&
                     ((hc_u64)h & 15) == 0 && (cs == 2 ? u == g + 1 : cs == 1 && ((hc_u64)u & 15) == 0);
    /* (n: at most h's elements -- a device buffer's, far below 2^64) */
    const hc_u64 pieces = (ldh + 7) / 8, n = rows * pieces;
    const bool narrow = n <= 0xffffffffull; /* (a 32-bit division where it can) */
    for (hc_u64 i = (hc_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (hc_u64)gridDim.x * blockDim.x) {
        const hc_u64 p = narrow ? (hc_u64)((unsigned)i / (unsigned)pieces) : i / pieces;
        const hc_u64 c0 = (i - p * pieces) * 8;
#if HC_MOE_META_EARLY
        /* (config.h v111: row p's gate and up -- below tail[1], so one of g's rows -- read with
         * its slot, not after the slot's test: one round trip, not two) */
        uint4 ra = make_uint4(0, 0, 0, 0), rb = ra;
        if (vec && c0 < I) {
            const hc_u16 *ga0 = g + p * ldg + (cs == 2 ? 2 * c0 : c0);
            ra = *(const uint4 *)ga0, rb = *(const uint4 *)(cs == 2 ? ga0 + 8 : u + p * ldg + c0);
        }
#endif
        const int s = sorted[p];
        const bool live = s >= 0;
        const unsigned e = live ? route_local(ids, s, e0) : 0u; /* (a pad's: unused) */
        const int *perm = ptab ? (const int *)ptab[e] : nullptr;
        const float *bg = bias ? bias + (hc_u64)e * 2 * I : nullptr;
        float v[8];
        if (live && vec && c0 < I) {
            /* (cs 2: the 16 interleaved values from g; else 8 of g and 8 of u) */
            float gv[8], uv[8];
#if HC_MOE_META_EARLY
            gate_up_of(ra, rb, cs == 2, gv, uv);
#else
            const hc_u16 *ga = g + p * ldg + (cs == 2 ? 2 * c0 : c0);
            gate_up_of(*(const uint4 *)ga,
                       *(const uint4 *)(cs == 2 ? ga + 8 : u + p * ldg + c0), cs == 2, gv, uv);
#endif
#pragma unroll
            for (int q = 0; q < 8; q++) {
                if (bg) gv[q] += bg[c0 + q], uv[q] += bg[I + c0 + q];
                v[q] = moe_act(gv[q], uv[q], act, alpha, limit);
            }
        } else {
#pragma unroll
            for (int q = 0; q < 8; q++) {
                const hc_u64 c = c0 + q;
                v[q] = 0.0f;
                if (live && c < I) {
                    const hc_u64 j = perm ? (hc_u64)perm[c] : c;
                    float gv = f_of_bf16(g[p * ldg + j * cs]), uv = f_of_bf16(u[p * ldg + j * cs]);
                    if (bg) gv += bg[j], uv += bg[I + j];
                    v[q] = moe_act(gv, uv, act, alpha, limit);
                }
            }
        }
        if (vec) {
            *(uint4 *)(h + p * ldh + c0) = make_uint4(bf2_pack(v[0], v[1]), bf2_pack(v[2], v[3]),
                                                      bf2_pack(v[4], v[5]), bf2_pack(v[6], v[7]));
        } else {
            for (int q = 0; q < 8 && c0 + q < ldh; q++) h[p * ldh + c0 + q] = bf16_of(v[q]);
        }
    }
    HC_PDL_RELEASE();
}

/* ---- hc_moe_finalize: y[t][n] = bf16 of the float32 sum over j = 0..topk-1, in that order,
 * of the slot's weight x (o[inv[t * topk + j]][n] + its expert's down bias[n]) for the local
 * slots (no local slot: 0; expert parallelism adds the ranks' y). Grid (column blocks of
 * HC_MOE_FIN_THREADS x 8 columns, tokens; grid-stride over both): a block's token's slots
 * (row, weight, expert) into shared memory first, then a thread takes 8 columns, and loads
 * those of HC_MOE_FIN_BATCH slots (16 bytes each) before it sums them in order (a block per
 * token, one load in flight a thread, took 14.7 us at M = 1 on a row of 7168: bench/NOTES.md
 * session 21). Dynamic shared memory: 12 x topk bytes. ---- */

/* the finalize's slot j: its row's 8 columns n0.. (+ the expert's down bias) x its weight, added
 * to s; raw: the 8 columns as loaded (16 bytes) where vec, else they are read here one by one */
__device__ __forceinline__ void fin_add(float s[8], uint4 raw, bool vec, const hc_u16 *o, int p,
                                        hc_u64 H, hc_u64 n0, const float *db, float w) {
    float v[8];
    if (vec) {
        const unsigned q4[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (int q = 0; q < 4; q++)
            v[2 * q] = f_of_bf16((hc_u16)(q4[q] & 0xFFFFu)), v[2 * q + 1] = f_of_bf16((hc_u16)(q4[q] >> 16));
    } else {
#pragma unroll
        for (int q = 0; q < 8; q++) v[q] = n0 + q < H ? f_of_bf16(o[(hc_u64)p * H + n0 + q]) : 0.0f;
    }
#pragma unroll
    for (int q = 0; q < 8; q++) {
        if (db && n0 + q < H) v[q] += db[n0 + q];
        s[q] += w * v[q];
    }
}

extern "C" __global__ void __launch_bounds__(HC_MOE_FIN_THREADS)
    hc_moe_finalize(const hc_u16 *o, hc_u64 H, const int *inv, const int *ids, hc_u64 topk,
                    int e0, const float *wts, const float *dbias, hc_u64 M, hc_u16 *y) {
    extern __shared__ unsigned fsm[];
    int *sp = (int *)fsm, *se = sp + topk;
    float *sw = (float *)(se + topk);
    HC_PDL_WAIT();
    const bool vec = H % 8 == 0 && ((hc_u64)o & 15) == 0 && ((hc_u64)y & 15) == 0;
    const hc_u64 c0 = ((hc_u64)blockIdx.x * blockDim.x + threadIdx.x) * 8ull;
    const hc_u64 cstep = (hc_u64)gridDim.x * blockDim.x * 8ull;
    for (hc_u64 t = blockIdx.y; t < M; t += gridDim.y) {
        __syncthreads(); /* (the previous token's slots are read) */
        for (hc_u64 j = threadIdx.x; j < topk; j += blockDim.x) {
            sp[j] = inv[t * topk + j];
            se[j] = ids[t * topk + j] - e0;
            sw[j] = wts[t * topk + j];
        }
        __syncthreads();
        for (hc_u64 n0 = c0; n0 < H; n0 += cstep) {
            float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (vec) { /* a batch's loads first, then its sums in slot order */
                for (hc_u64 j0 = 0; j0 < topk; j0 += HC_MOE_FIN_BATCH) {
                    uint4 raw[HC_MOE_FIN_BATCH];
#pragma unroll
                    for (unsigned b = 0; b < HC_MOE_FIN_BATCH; b++) {
                        const int p = j0 + b < topk ? sp[j0 + b] : -1;
                        raw[b] = make_uint4(0, 0, 0, 0);
                        if (p >= 0) raw[b] = *(const uint4 *)(o + (hc_u64)p * H + n0);
                    }
#pragma unroll
                    for (unsigned b = 0; b < HC_MOE_FIN_BATCH; b++) {
                        const hc_u64 j = j0 + b;
                        if (j < topk && sp[j] >= 0)
                            fin_add(s, raw[b], true, o, sp[j], H, n0,
                                    dbias ? dbias + (hc_u64)se[j] * H : nullptr, sw[j]);
                    }
                }
            } else {
                for (hc_u64 j = 0; j < topk; j++)
                    if (sp[j] >= 0)
                        fin_add(s, make_uint4(0, 0, 0, 0), false, o, sp[j], H, n0,
                                dbias ? dbias + (hc_u64)se[j] * H : nullptr, sw[j]);
            }
            if (vec) {
                *(uint4 *)(y + t * H + n0) = make_uint4(bf2_pack(s[0], s[1]), bf2_pack(s[2], s[3]),
                                                        bf2_pack(s[4], s[5]), bf2_pack(s[6], s[7]));
            } else {
                for (int q = 0; q < 8 && n0 + q < H; q++) y[t * H + n0 + q] = bf16_of(s[q]);
            }
        }
    }
    HC_PDL_RELEASE();
}
