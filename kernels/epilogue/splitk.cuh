// splitk.cuh: the epilogue of the small-M kernels (gemm/gemv.cuh). A block's four warps each
// hold sums over their share of the block's K range: they are added through shared memory and
// written to Y, or, when K is split over blocks (gridDim.y > 1), to the workspace; the last
// block of a stripe to finish then adds the partial sums in block order -- a fixed order, so
// results are deterministic, and no atomics on outputs.
#ifndef HC_K_EPILOGUE_SPLITK_CUH
#define HC_K_EPILOGUE_SPLITK_CUH

#include "codec/bf16.cuh"
#include "memory/ptx.cuh"

/* The four warps' sums of each live output of stripe nb (red: [warp][row][token] float32, the
 * block's idle pipeline memory, each warp's C fragments stored there by the kernel): to y, or
 * with a split to the workspace ([blockIdx.y][stripe][row][token] float32). Every thread of
 * the block calls this. */
template <int TOK>
__device__ __forceinline__ void gemv_block_sums(const float *red, hc_u64 nb, hc_u64 m,
                                                const hc_mma_params &p, hc_u16 *y, float *ws) {
    __syncthreads();
    const bool split = gridDim.y > 1;
    /* the live tokens' sums only: element idx of E is row idx / mlive, token idx % mlive */
    const unsigned mlive = (unsigned)(m < TOK ? m : TOK), E = 64 * mlive;
    for (unsigned idx = threadIdx.x; idx < E; idx += blockDim.x) {
        unsigned row = idx / mlive, tok = idx % mlive;
        float s = red[row * TOK + tok] + red[(64 + row) * TOK + tok] +
                  red[(128 + row) * TOK + tok] + red[(192 + row) * TOK + tok];
        hc_u64 n = nb * 64 + row;
        if (split) __stcg(&ws[((hc_u64)blockIdx.y * p.tiles_n + nb) * 64 * TOK + row * TOK + tok], s);
        else if (n < p.N) y[tok * p.N + n] = bf16_of(s);
    }
}

/* With a split, after gemv_block_sums: the last block of stripe nb to finish (counted in
 * cnt[nb], which it resets for the next launch) adds the stripe's partial sums, in block
 * order, with the loads of 8 blocks' partials in flight together (one round trip each, not one
 * per block). last: a __shared__ word of the kernel's; v: the kernel's registers for the 8
 * loads. (Both are the caller's so that the kernels' code stays as it was when this was
 * written inline: a static here would be shared by every kernel that instantiates this, and an
 * array local to a callee changes the order in which the compiler numbers the kernel's
 * accumulators -- bench/kernel_text.sh shows the machine code is the same.) */
template <int TOK>
__device__ __forceinline__ void splitk_add(const float *ws, unsigned *cnt, hc_u64 nb, hc_u64 m,
                                           const hc_mma_params &p, hc_u16 *y, unsigned &last,
                                           float (&v)[8]) {
    const unsigned mlive = (unsigned)(m < TOK ? m : TOK), E = 64 * mlive;
    if (!arrive_last(&cnt[nb], gridDim.y - 1, threadIdx.x == 0, last, [] { __syncthreads(); }))
        return;
    for (unsigned idx = threadIdx.x; idx < E; idx += blockDim.x) {
        unsigned row = idx / mlive, tok = idx % mlive;
        hc_u64 n = nb * 64 + row;
        if (n >= p.N) continue;
        const float *src = ws + (hc_u64)nb * 64 * TOK + row * TOK + tok;
        const hc_u64 bstride = p.tiles_n * 64ull * TOK;
        float s = 0.0f;
        for (unsigned y0 = 0; y0 < gridDim.y; y0 += 8) {
#pragma unroll
            for (unsigned u = 0; u < 8; u++)
                v[u] = y0 + u < gridDim.y ? __ldcg(src + (y0 + u) * bstride) : 0.0f;
#pragma unroll
            for (unsigned u = 0; u < 8; u++)
                if (y0 + u < gridDim.y) s += v[u];
        }
        y[tok * p.N + n] = bf16_of(s);
    }
    if (threadIdx.x == 0) cnt[nb] = 0; /* ready for the next launch */
}

#endif
