// moe_sum.cuh: a mixture-of-experts block's top-k weighted sum, y[t] = the sum over a token's
// slots of weight x (down output + the expert's down bias), in one place for both of its uses --
// hc_moe_finalize (moe_route.cu), the launch of its own after down, and the small-M down
// kernels' epilogue that sums a token's columns once its last slot's outputs are written
// (gemv_fin, below: gpu_moe.c decides which runs). Both add the same float32 terms in slot order
// (moe_fin_term) and round once to bf16, so the two give the same bits.
#ifndef HC_K_EPILOGUE_MOE_SUM_CUH
#define HC_K_EPILOGUE_MOE_SUM_CUH

#include "codec/bf16.cuh"
#include "memory/ptx.cuh"
#include "moe_args.h"

/* A slot's term: s + w x (v + db[n]) (db: the slot's expert's down bias row, or none). */
__device__ __forceinline__ float moe_fin_term(float s, float v, const float *db, hc_u64 n, float w) {
    if (db) v += db[n];
    return fmaf(w, v, s);
}

/* The small-M down's weighted sum (moe_gemm.cu moe_gemv, moe_args.h fin): after a block has
 * written stripe nb of its tile's down outputs (gemv_body's answer: the K split's last block,
 * or the only one), each live row's thread counts the row's token t at fcnt[t x tiles_n + nb]
 * (arrive_one after the block's barrier: a release of the block's writes), the target the
 * token's local slots; the thread that completes a token resets its counter, and the block
 * sums that token's 64 columns of y over its slots in order as hc_moe_finalize does, reading
 * the rows other blocks wrote (o: down's outputs, rows of N; the acquire of the completing
 * arrival, passed on by the barrier). Every thread of the block calls this. */
template <int TOK>
__device__ __forceinline__ void gemv_fin(const hc_moe_args &a, hc_u64 N, hc_u64 nb, unsigned tile,
                                         unsigned live, const hc_u16 *o, unsigned *fcnt) {
    __shared__ unsigned done[TOK]; /* a row's token + 1 where this block completed it, else 0 */
    const hc_u64 tn = (N + 63) / 64, k = a.topk;
    __syncthreads(); /* (the block's writes of the stripe, before each row's release) */
    if (threadIdx.x < live) {
        const hc_u64 t = (hc_u64)a.sorted[(hc_u64)tile * TOK + threadIdx.x] / k;
        unsigned nloc = 0;
        for (hc_u64 j = 0; j < k; j++) nloc += a.inv[t * k + j] >= 0;
        const bool last = arrive_one(&fcnt[t * tn + nb], nloc - 1);
        if (last) fcnt[t * tn + nb] = 0; /* (every arrival is in: ready for the next launch) */
        done[threadIdx.x] = last ? (unsigned)t + 1 : 0u;
    }
    __syncthreads();
    for (unsigned q = threadIdx.x; q < live * 64; q += blockDim.x) {
        const unsigned r = q / 64;
        const hc_u64 n = nb * 64 + q % 64;
        if (!done[r] || n >= N) continue;
        const hc_u64 t = done[r] - 1;
        float s = 0.0f;
        for (hc_u64 j = 0; j < k; j++) {
            const int p = a.inv[t * k + j];
            if (p < 0) continue;
            const float *db = a.dbias ? a.dbias + (hc_u64)(a.ids[t * k + j] - a.e0) * N : nullptr;
            s = moe_fin_term(s, f_of_bf16(__ldcg(o + (hc_u64)p * N + n)), db, n, a.wts[t * k + j]);
        }
        a.y[t * N + n] = bf16_of(s);
    }
}

/* With fin, the tokens none of whose slots is local (no down row, so gemv_fin never completes
 * them) get zeros in y, as hc_moe_finalize gives them: block b of the grid's nblk takes tokens
 * b, b + nblk, ... Every thread of the block calls this. */
__device__ __forceinline__ void gemv_fin_empty(const hc_moe_args &a, hc_u64 N) {
    const hc_u64 nblk = (hc_u64)gridDim.x * gridDim.y * gridDim.z;
    const hc_u64 b = blockIdx.x + (hc_u64)gridDim.x * (blockIdx.y + (hc_u64)gridDim.y * blockIdx.z);
    for (hc_u64 t = b; t < a.M; t += nblk) {
        bool local = false;
        for (hc_u64 j = threadIdx.x; j < a.topk; j += blockDim.x) local |= a.inv[t * a.topk + j] >= 0;
        if (__syncthreads_or(local)) continue;
        for (hc_u64 n = threadIdx.x; n < N; n += blockDim.x) a.y[t * N + n] = 0;
    }
}

#endif
