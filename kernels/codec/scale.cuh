// scale.cuh: one tile row's scale and zero point for a scale group, read from the tile chunk in
// shared memory and decoded to float32 as the module's scale kind (HC_SK) says; for folded
// MXFP4 the group exponent of the row's record, or (HC_GEMV_MXS) the bf16 scales the kernels
// wrote over the records.
#ifndef HC_K_CODEC_SCALE_CUH
#define HC_K_CODEC_SCALE_CUH

#include "codec/bf16.cuh"
#include "codec/kind.cuh"

/* row r's scale for group j */
__device__ __forceinline__ float tile_scale(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                            unsigned j) {
#if HC_CODEC == HC_CODEC_MXFOLD
    (void)p;
    /* the row's record, one word: base exponent B, offsets d0, d1 (raw E8M0 when B = 0xFF) */
    unsigned rec = *(const unsigned *)(ch + HC_CODE_BYTES + r * 4), b = rec & 0xFF;
    unsigned d = (rec >> (8 + 8 * j)) & 0xFF;
    int e = b == 0xFF ? (int)d : (int)b + (int)(signed char)d;
    unsigned bits = e >= 255 ? 0x7FC00000u : e > 0 ? (unsigned)e << 23 : e == 0 ? 0x00400000u : 0u;
    return __uint_as_float(bits); /* 2^(e - 127); e = 0 is 2^-127 */
#else
    const hc_u8 *s = ch + HC_CODE_BYTES;
    unsigned i = r * HC_SCALE_COLS + j;
    float v;
    switch (HC_SK) {
    case HC_SK_F32: v = ((const float *)s)[i]; break;
    case HC_SK_F32_DIV: v = __frcp_rn(((const float *)s)[i]); break; /* fp8 divisors: w * (1 / s) */
    case HC_SK_BF16: v = __uint_as_float((unsigned)((const hc_u16 *)s)[i] << 16); break;
    case HC_SK_F16: v = f32_of_f16(((const hc_u16 *)s)[i]); break;
    case HC_SK_E4M3: { /* bits into float32's exponent and mantissa, times 2^120 */
        unsigned b = s[i];
        v = (b & 0x7F) == 0x7F ? __uint_as_float(0x7FC00000u)
                               : __uint_as_float((b & 0x7F) << 20) * __uint_as_float(0x7B800000u);
        if (b & 0x80) v = -v;
        break;
    }
    default: { /* HC_SK_E8M0 */
        unsigned b = s[i];
        v = b == 0xFF ? __uint_as_float(0x7FC00000u)
            : b == 0  ? __uint_as_float(0x00400000u)
                      : __uint_as_float(b << 23);
    }
    }
#if HC_CODEC == HC_CODEC_FP4 && HC_SK == HC_SK_E4M3 /* NVFP4's divisor (E4M3 scales only) */
    if (p.global_div != 0.0f) v = v / p.global_div;
#else
    (void)p;
#endif
    return v;
#endif
}

#if HC_CODEC == HC_CODEC_MXFOLD
/* The bf16 bits of a folded MXFP4 record's group scale j (tile_scale's value, which is a bf16
 * number: a power of two, 2^-127, NaN or 0). */
__device__ __forceinline__ unsigned mxfold_bf16(unsigned rec, unsigned j) {
    unsigned b = rec & 0xFF, d = (rec >> (8 + 8 * j)) & 0xFF;
    int e = b == 0xFF ? (int)d : (int)b + (int)(signed char)d;
    return e >= 255 ? 0x7FC0u : e > 0 ? (unsigned)e << 7 : e == 0 ? 0x0040u : 0u;
}
#endif
/* Row r's group scale j where HC_GEMV_MXS has written the scales over the records as bf16
 * (bf16 j of the row's 4 bytes) */
__device__ __forceinline__ float record_scale(const hc_u8 *ch, unsigned r, unsigned j) {
    return __uint_as_float((unsigned)*(const hc_u16 *)(ch + HC_CODE_BYTES + r * 4 + j * 2) << 16);
}
/* The scale the small-M kernels apply: tile_scale, or with HC_GEMV_MXS the bf16 the tile's
 * lanes wrote over the records (gemm/gemv.cuh). */
__device__ __forceinline__ float gemv_scale(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                            unsigned j) {
#if HC_CODEC == HC_CODEC_MXFOLD && HC_GEMV_MXS
    (void)p;
    return record_scale(ch, r, j);
#else
    return tile_scale(ch, p, r, j);
#endif
}

/* row r's zero point for group j: its byte (HC_ZP) or the layer's constant */
__device__ __forceinline__ unsigned tile_zero(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                              unsigned j) {
    return HC_ZP ? ch[HC_CODE_BYTES + HC_SCALE_BYTES + r * HC_SCALE_COLS + j] : p.zero_const;
}

#endif
