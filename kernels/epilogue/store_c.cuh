// store_c.cuh: the epilogue of hc_mma_gemm and hc_wgmma_gemm: a warp's float32 accumulators,
// in the mma C-fragment layout, rounded to bf16 and stored straight to Y inside N x m.
#ifndef HC_K_EPILOGUE_STORE_C_CUH
#define HC_K_EPILOGUE_STORE_C_CUH

#include "codec/bf16.cuh"

/* C fragments of 16 weight rows (this lane's rows n0 and n0 + 8) x NT8 n8 token tiles from
 * tok0, d[i * 4 + e]; c is the lane's column pair (lane % 4) */
template <int NT8>
__device__ __forceinline__ void store_c(const float *d, hc_u16 *__restrict__ y, hc_u64 n0,
                                        hc_u64 tok0, unsigned c, const hc_mma_params &p,
                                        hc_u64 m) {
#pragma unroll
    for (int i = 0; i < NT8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            hc_u64 n = n0 + (e >= 2 ? 8 : 0), tok = tok0 + i * 8 + 2 * c + (e & 1);
            if (n < p.N && tok < m) y[tok * p.N + n] = bf16_of(d[i * 4 + e]);
        }
}

#endif
