// frag.cuh: the A fragment of one k16 step (16 tile rows x 16 columns, as mma.sync and wgmma
// take it) from a lane's code words: exact and unscaled for the small-M kernels, which apply
// the scales to their float32 sums once per group; scaled in float32 and rounded once to bf16
// for the large-M kernels (dequantize-then-GEMM numerics).
#ifndef HC_K_CODEC_FRAG_CUH
#define HC_K_CODEC_FRAG_CUH

#include "codec/codes.cuh"
#include "codec/scale.cuh"

/* tile rows r0 (pairs 0, 2) and r0 + 8 (pairs 1, 3), scale group j, zero point taken off */
__device__ __forceinline__ void exact_frag(const hc_u8 *ch, const hc_mma_params &p, unsigned r0,
                                           unsigned j, frag_words f, unsigned *a) {
    unsigned z0 = 0, z1 = 0;
#if HC_HAS_ZERO
    z0 = zero_operand(tile_zero(ch, p, r0, j));
    z1 = zero_operand(tile_zero(ch, p, r0 + 8, j));
#else
    (void)ch, (void)p, (void)j;
#endif
#pragma unroll
    for (int t = 0; t < 4; t++) a[t] = exact_pair(f.w0, f.w1, t, t & 1 ? z1 : z0);
}

/* The same, each weight then scaled by its row's scale. SH: the records already hold the group
 * scales as bf16 (HC_GEMV_MXS in gemm/ws_gemm.cuh). */
template <bool SH = false>
__device__ __forceinline__ void scaled_frag(const hc_u8 *ch, const hc_mma_params &p, unsigned r0,
                                            unsigned j, frag_words f, unsigned *a) {
    float s0, s1;
    if (SH) {
        s0 = record_scale(ch, r0, j), s1 = record_scale(ch, r0 + 8, j);
    } else {
        s0 = tile_scale(ch, p, r0, j), s1 = tile_scale(ch, p, r0 + 8, j);
    }
    exact_frag(ch, p, r0, j, f, a);
#if HC_SCALE_IS_BF16
    const unsigned b0 = bf2_splat((hc_u16)(__float_as_uint(s0) >> 16));
    const unsigned b1 = bf2_splat((hc_u16)(__float_as_uint(s1) >> 16));
#pragma unroll
    for (int t = 0; t < 4; t++) a[t] = bf2_fma(a[t], t & 1 ? b1 : b0, 0x80008000u);
#else
#pragma unroll
    for (int t = 0; t < 4; t++) {
        float s = t & 1 ? s1 : s0;
        a[t] = bf2_pack(__uint_as_float(a[t] << 16) * s, __uint_as_float(a[t] & 0xFFFF0000u) * s);
    }
#endif
}

#endif
