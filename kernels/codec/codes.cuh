// codes.cuh: codes -> exact bf16 values, by codec (HC_CODEC). The codes are stored in
// A-fragment order, so a lane's 16-byte word of a tile holds exactly the eight codes it feeds to
// the tensor cores: no shuffles and no shared-memory transposes. Each pair of codes becomes a
// bf16x2 word with a few bit operations and one bf16x2 FMA; the value is exact (integers up to
// 255, E2M1 and E4M3 values are all bf16 numbers).
#ifndef HC_K_CODEC_CODES_CUH
#define HC_K_CODEC_CODES_CUH

#include "codec/bf16.cuh"
#include "codec/kind.cuh"

#if HC_CODEC == HC_CODEC_INT4
/* int4 pair t of w as 128 + u, before the zero point is taken off (exact_pair's first step; the
 * small-M kernels of HC_GEMV_ZFOLD_MT token tiles or more take it off their sums instead) */
__device__ __forceinline__ unsigned biased_pair(unsigned w, int t) {
    return lop_and_or(w >> (4 * t), 0x000F000Fu, 0x43004300u);
}
#endif

/* Pair t (0..3) of a lane's fragment is A register t: (a2t, a2t+1), one row (g for t even,
 * g + 8 for t odd). 4-bit: w is the lane's word for one k16 step; nibbles of pair t sit at bit
 * 4t and 16 + 4t. 8-bit: w0 holds a0..a3, w1 a4..a7. zb: zero_operand of the row's zero point. */
__device__ __forceinline__ unsigned exact_pair(unsigned w0, unsigned w1, int t, unsigned zb) {
#if HC_CODEC == HC_CODEC_INT4
    (void)w1;
    return bf2_fma(biased_pair(w0, t), 0x3F803F80u, zb); /* - (128 + z): exact */
#elif HC_CODEC == HC_CODEC_INT4_SM
    (void)w1, (void)zb;
    unsigned s = w0 >> (4 * t);
    unsigned m = bf2_fma((s & 0x00070007u) | 0x43004300u, 0x3F803F80u, 0xC300C300u);
    return m | ((s << 12) & 0x80008000u); /* bit 3 of each nibble is the sign */
#elif HC_CODEC == HC_CODEC_FP4 || HC_CODEC == HC_CODEC_MXFOLD
    (void)w1, (void)zb;
    /* e1 e0 m of nibble t at bf16's exponent/mantissa seam (bits 6-8), times 2^126; the sign
     * (nibble bit 3) to bit 15: two shifts of w0, an AND, the multiply and one LOP3 */
    unsigned mag = (4 * t <= 6 ? w0 << (6 - 4 * t) : w0 >> (4 * t - 6)) & 0x01C001C0u;
    return lop_and_or(w0 << (12 - 4 * t), 0x80008000u, bf2_fma(mag, 0x7E807E80u, 0x80008000u));
#elif HC_CODEC == HC_CODEC_FP8
    (void)zb;
    unsigned x = __byte_perm(t < 2 ? w0 : w1, 0, (t & 1) ? 0x3424 : 0x1404); /* b << 8, b' << 24 */
    unsigned v = ((x >> 4) & 0x07F007F0u) | (x & 0x80008000u);
    return bf2_fma(v, 0x7B807B80u, 0x80008000u); /* x 2^120 */
#elif HC_CODEC == HC_CODEC_INT8
    unsigned w = t < 2 ? w0 : w1, z = zb;
    float lo = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440 | ((t & 1) * 2))) - __uint_as_float(0x4B000000u | z);
    float hi = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7441 | ((t & 1) * 2))) - __uint_as_float(0x4B000000u | z);
    return bf2_pack(lo, hi);
#endif
}

/* The zero-point operand exact_pair takes for a zero point z: int4, bf16x2 of -(128 + z);
 * int8, z itself. */
__device__ __forceinline__ unsigned zero_operand(unsigned z) {
#if HC_CODEC == HC_CODEC_INT8
    return z;
#else
    return bf2_splat((hc_u16)(0xC300u | z));
#endif
}

/* The lane's words for k16 step ks of row block rb, from the chunk in shared memory. */
struct frag_words {
    unsigned w0, w1;
};
#if HC_CODE_BITS == 4
typedef uint4 rb_codes;
__device__ __forceinline__ void load_codes(const hc_u8 *ch, unsigned rb, unsigned lane, rb_codes &v) {
    v = *(const uint4 *)(ch + (rb * 32 + lane) * 16);
}
__device__ __forceinline__ frag_words words_of(const rb_codes &v, int ks) {
    frag_words f;
    f.w0 = ks == 0 ? v.x : ks == 1 ? v.y : ks == 2 ? v.z : v.w;
    f.w1 = 0;
    return f;
}
#else
struct rb_codes {
    uint4 lo, hi;
};
__device__ __forceinline__ void load_codes(const hc_u8 *ch, unsigned rb, unsigned lane, rb_codes &v) {
    v.lo = *(const uint4 *)(ch + ((rb * 2) * 32 + lane) * 16);
    v.hi = *(const uint4 *)(ch + ((rb * 2 + 1) * 32 + lane) * 16);
}
__device__ __forceinline__ frag_words words_of(const rb_codes &v, int ks) {
    const uint4 &q = ks < 2 ? v.lo : v.hi;
    frag_words f;
    f.w0 = ks & 1 ? q.z : q.x;
    f.w1 = ks & 1 ? q.w : q.y;
    return f;
}
#endif

#endif
