// moe_route.cu: the parts of a mixture-of-experts block that are not GEMMs (runtime/gpu_moe.c
// launches them around the grouped GEMMs of moe_gemm.cu): the routing sort, the gather of
// activations by sorted row, the activation between the projections, and the top-k weighted
// sum. One module per device, whatever the layers' kinds. No atomics on results: the same
// inputs give the same bits on every run.
#include "codec/bf16.cuh"
#include "memory/ptx.cuh"
#include "moe_args.h"

__device__ __forceinline__ float f_of_bf16(hc_u16 v) { return __uint_as_float((unsigned)v << 16); }

/* ---- hc_moe_route: moe_args.h's tables for S slots of ids (int32; local expert id - e0 in
 * [0, El)), tile T. One block of HC_MOE_ROUTE_THREADS; dynamic shared memory 4 x (32 El + 2 El
 * + 32). Warp w owns a contiguous range of slots; pass 1 counts its slots per expert
 * (cnt[w][e]), the counts become per-warp bases inside each expert and the T-padded experts an
 * exclusive scan (off[e]); pass 2 walks the same ranges in the same order and places each slot
 * at off[e] + its warp's base + its rank among the warp's earlier slots of e (__match_any_sync):
 * a stable counting sort, deterministic without atomics. ---- */
extern "C" __global__ void __launch_bounds__(HC_MOE_ROUTE_THREADS)
    hc_moe_route(const int *ids, hc_u64 S, int e0, unsigned El, unsigned T, int *sorted, int *inv,
                 int *meta) {
    extern __shared__ unsigned sm[];
    unsigned *cnt = sm, *tot = sm + 32 * El, *off = tot + El, *wsum = off + El;
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    HC_PDL_WAIT();
    for (unsigned i = tid; i < 32 * El; i += blockDim.x) cnt[i] = 0;
    __syncthreads();
    const hc_u64 per = (S + 31) / 32, lo = warp * per, hi = lo + per < S ? lo + per : S;
    auto expert_of = [&](hc_u64 s) -> int {
        if (s >= hi) return -2; /* past the range: no slot */
        long long d = (long long)ids[s] - e0;
        return d >= 0 && d < (long long)El ? (int)d : -1;
    };
    for (hc_u64 b = lo; b < hi; b += 32) {
        int e = expert_of(b + lane);
        unsigned peers = __match_any_sync(0xFFFFFFFFu, e);
        if (e >= 0 && lane == (unsigned)__ffs(peers) - 1) cnt[warp * El + e] += __popc(peers);
        __syncwarp();
    }
    __syncthreads();
    for (unsigned e = tid; e < El; e += blockDim.x) {
        unsigned run = 0;
        for (unsigned w = 0; w < 32; w++) {
            unsigned c = cnt[w * El + e];
            cnt[w * El + e] = run;
            run += c;
        }
        tot[e] = run;
    }
    __syncthreads();
    /* exclusive scan of the padded sizes, El <= HC_MOE_EXPERTS_MAX: thread e holds expert e */
    {
        unsigned v = 0;
        for (unsigned e = tid; e < El; e += blockDim.x) v = (tot[e] + T - 1) / T * T;
        unsigned incl = v;
        for (unsigned d = 1; d < 32; d <<= 1) {
            unsigned n = __shfl_up_sync(0xFFFFFFFFu, incl, d);
            if (lane >= d) incl += n;
        }
        if (lane == 31) wsum[warp] = incl;
        __syncthreads();
        if (warp == 0) {
            unsigned s = wsum[lane], si = s;
            for (unsigned d = 1; d < 32; d <<= 1) {
                unsigned n = __shfl_up_sync(0xFFFFFFFFu, si, d);
                if (lane >= d) si += n;
            }
            wsum[lane] = si - s; /* exclusive */
        }
        __syncthreads();
        if (tid < El) off[tid] = wsum[warp] + incl - v;
        if (tid == blockDim.x - 1) meta[0] = (int)((wsum[warp] + incl) / T);
        __syncthreads();
    }
    for (hc_u64 b = lo; b < hi; b += 32) {
        const hc_u64 s = b + lane;
        int e = expert_of(s);
        unsigned peers = __match_any_sync(0xFFFFFFFFu, e);
        if (e >= 0) {
            unsigned p = off[e] + cnt[warp * El + e] + __popc(peers & ((1u << lane) - 1u));
            sorted[p] = (int)s;
            inv[s] = (int)p;
        } else if (e == -1) {
            inv[s] = -1;
        }
        __syncwarp();
        if (e >= 0 && lane == (unsigned)__ffs(peers) - 1) cnt[warp * El + e] += __popc(peers);
        __syncwarp();
    }
    /* each expert's pads and tiles */
    for (unsigned e = tid; e < El; e += blockDim.x) {
        const unsigned n = tot[e], pad = (n + T - 1) / T * T, o = off[e];
        for (unsigned q = n; q < pad; q++) sorted[o + q] = -1;
        for (unsigned q = 0; q < pad; q += T) {
            const unsigned i = (o + q) / T;
            meta[HC_MOE_META_TILE(i)] = (int)e;
            meta[HC_MOE_META_TILE(i) + 1] = (int)(n - q < T ? n - q : T);
        }
    }
    HC_PDL_RELEASE();
}

/* ---- hc_moe_expand: xs[p] = x[sorted[p] / topk] for the sorted rows (zeros in pads), its
 * columns gathered by the row's expert's act-order permutation (ptab[e]: int32 [K], or 0) and
 * zero-padded from K to ldxs. A block per row, grid-stride. ---- */
extern "C" __global__ void hc_moe_expand(const hc_u16 *x, hc_u64 ldx, hc_u64 K, const int *sorted,
                                         const int *meta, unsigned T, hc_u64 topk,
                                         const hc_u64 *ptab, hc_u16 *xs, hc_u64 ldxs) {
    HC_PDL_WAIT();
    const hc_u64 rows = (hc_u64)meta[0] * T;
    for (hc_u64 p = blockIdx.x; p < rows; p += gridDim.x) {
        const int s = sorted[p];
        const int *perm = ptab ? (const int *)ptab[meta[HC_MOE_META_TILE(p / T)]] : nullptr;
        const hc_u16 *src = s >= 0 ? x + (hc_u64)s / topk * ldx : nullptr;
        hc_u16 *dst = xs + p * ldxs;
        if (!perm && src && K % 8 == 0 && ldx % 8 == 0 && ldxs % 8 == 0 &&
            ((hc_u64)x & 15) == 0 && ((hc_u64)xs & 15) == 0) {
            for (hc_u64 c = threadIdx.x * 8; c < ldxs; c += blockDim.x * 8)
                *(uint4 *)(dst + c) = c < K ? *(const uint4 *)(src + c) : make_uint4(0, 0, 0, 0);
            continue;
        }
        for (hc_u64 c = threadIdx.x; c < ldxs; c += blockDim.x)
            dst[c] = src && c < K ? src[perm ? (hc_u64)perm[c] : c] : (hc_u16)0;
    }
    HC_PDL_RELEASE();
}

/* ---- hc_moe_act: h[p][c] = act(gate + bg, up + bu) for the sorted rows (zeros in pads), in
 * float32 from the gate_up outputs: gate j of row p at g[p * ldg + j * cs], up j at
 * u[p * ldg + j * cs] (interleaved: u = g + 1, cs = 2; stacked: u = g + I, cs = 1; two
 * layers: two buffers, cs = 1); j = c, or the down projection's act-order permutation of the
 * row's expert (ptab[e][c]); biases float32 bias[e][2][I] (gate, up) or 0. act 0: silu(gate) x
 * up; 1 (gpt-oss): gate clamped to <= limit, up to [-limit, limit], gate x sigmoid(alpha x
 * gate) x (up + 1). A block per row, grid-stride; a thread takes 8 columns, with 16-byte loads
 * and stores where no permutation and the strides allow (bench/NOTES.md MoE v3). ---- */
__device__ __forceinline__ float moe_act(float g, float u, unsigned act, float alpha, float limit) {
    if (act == 1) {
        g = fminf(g, limit);
        u = fminf(fmaxf(u, -limit), limit);
        return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
    }
    return g / (1.0f + expf(-g)) * u;
}
extern "C" __global__ void hc_moe_act(const hc_u16 *g, const hc_u16 *u, hc_u64 ldg, hc_u64 cs,
                                      hc_u64 I, const int *sorted, const int *meta, unsigned T,
                                      const float *bias, const hc_u64 *ptab, unsigned act,
                                      float alpha, float limit, hc_u16 *h, hc_u64 ldh) {
    HC_PDL_WAIT();
    const hc_u64 rows = (hc_u64)meta[0] * T;
    /* 16-byte pieces: 8 columns of gate and up (cs = 1: 8 of each buffer; cs = 2: 16 interleaved
     * values from g) and of h */
    const bool vec = !ptab && I % 8 == 0 && ldg % 8 == 0 && ldh % 8 == 0 && ((hc_u64)g & 15) == 0 &&
                     ((hc_u64)h & 15) == 0 && (cs == 2 ? u == g + 1 : cs == 1 && ((hc_u64)u & 15) == 0);
    for (hc_u64 p = blockIdx.x; p < rows; p += gridDim.x) {
        const unsigned e = (unsigned)meta[HC_MOE_META_TILE(p / T)];
        const bool live = sorted[p] >= 0;
        const int *perm = ptab ? (const int *)ptab[e] : nullptr;
        const float *bg = bias ? bias + (hc_u64)e * 2 * I : nullptr;
        for (hc_u64 c0 = threadIdx.x * 8ull; c0 < ldh; c0 += blockDim.x * 8ull) {
            float v[8];
            if (live && vec && c0 < I) {
                float gv[8], uv[8];
                if (cs == 2) {
                    const uint4 a = *(const uint4 *)(g + p * ldg + 2 * c0);
                    const uint4 b = *(const uint4 *)(g + p * ldg + 2 * c0 + 8);
                    const unsigned w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
                    for (int q = 0; q < 8; q++)
                        gv[q] = f_of_bf16((hc_u16)(w[q] & 0xFFFFu)), uv[q] = f_of_bf16((hc_u16)(w[q] >> 16));
                } else {
                    const uint4 a = *(const uint4 *)(g + p * ldg + c0);
                    const uint4 b = *(const uint4 *)(u + p * ldg + c0);
                    const unsigned wa[4] = {a.x, a.y, a.z, a.w}, wb[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
                    for (int q = 0; q < 4; q++) {
                        gv[2 * q] = f_of_bf16((hc_u16)(wa[q] & 0xFFFFu)), gv[2 * q + 1] = f_of_bf16((hc_u16)(wa[q] >> 16));
                        uv[2 * q] = f_of_bf16((hc_u16)(wb[q] & 0xFFFFu)), uv[2 * q + 1] = f_of_bf16((hc_u16)(wb[q] >> 16));
                    }
                }
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
    }
    HC_PDL_RELEASE();
}

/* ---- hc_moe_finalize: y[t][n] = bf16 of the float32 sum over j = 0..topk-1, in that order,
 * of the slot's weight x (o[inv[t * topk + j]][n] + its expert's down bias[n]) for the local
 * slots (no local slot: 0; expert parallelism adds the ranks' y). A block per token,
 * grid-stride: the token's slots (row, weight, expert) into shared memory first, then a thread
 * takes 8 columns with 16-byte loads of every slot's row (bench/NOTES.md MoE v3). Dynamic
 * shared memory: 12 x topk bytes. ---- */
extern "C" __global__ void hc_moe_finalize(const hc_u16 *o, hc_u64 H, const int *inv,
                                           const int *ids, hc_u64 topk, int e0,
                                           const float *wts, const float *dbias, hc_u64 M,
                                           hc_u16 *y) {
    extern __shared__ unsigned fsm[];
    int *sp = (int *)fsm, *se = sp + topk;
    float *sw = (float *)(se + topk);
    HC_PDL_WAIT();
    const bool vec = H % 8 == 0 && ((hc_u64)o & 15) == 0 && ((hc_u64)y & 15) == 0;
    for (hc_u64 t = blockIdx.x; t < M; t += gridDim.x) {
        __syncthreads(); /* (the previous token's slots are read) */
        for (hc_u64 j = threadIdx.x; j < topk; j += blockDim.x) {
            sp[j] = inv[t * topk + j];
            se[j] = ids[t * topk + j] - e0;
            sw[j] = wts[t * topk + j];
        }
        __syncthreads();
        for (hc_u64 n0 = threadIdx.x * 8ull; n0 < H; n0 += blockDim.x * 8ull) {
            float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (hc_u64 j = 0; j < topk; j++) {
                const int p = sp[j];
                if (p < 0) continue;
                float v[8];
                if (vec) {
                    const uint4 a = *(const uint4 *)(o + (hc_u64)p * H + n0);
                    const unsigned w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
                    for (int q = 0; q < 4; q++)
                        v[2 * q] = f_of_bf16((hc_u16)(w[q] & 0xFFFFu)), v[2 * q + 1] = f_of_bf16((hc_u16)(w[q] >> 16));
                } else {
#pragma unroll
                    for (int q = 0; q < 8; q++) v[q] = n0 + q < H ? f_of_bf16(o[(hc_u64)p * H + n0 + q]) : 0.0f;
                }
                const float *db = dbias ? dbias + (hc_u64)se[j] * H : nullptr;
#pragma unroll
                for (int q = 0; q < 8; q++) {
                    if (db && n0 + q < H) v[q] += db[n0 + q];
                    s[q] += sw[j] * v[q];
                }
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
