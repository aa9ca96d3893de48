/* layout_core.h: the element-level rules of the tiled layouts (docs/layouts.md), written once
 * for both the host (contract/layout.c, the CPU executor) and the GPU kernels (compiled by
 * NVRTC, which receives this file as a header): code positions and value decoding. */
#ifndef HC_LAYOUT_CORE_H
#define HC_LAYOUT_CORE_H

#ifdef __CUDACC__
#define HC_HD __host__ __device__ __forceinline__
#else
#define HC_HD static inline
#endif

/* The four layouts (their ids and the table: contract/layouts.h). */
typedef enum { HC_TL_INT = 1, HC_TL_FP4, HC_TL_MXFOLD, HC_TL_FP8 } hc_tile_kind;

/* Codec numbers: what the fast kernels are built for (-DHC_CODEC). The table of which layout
 * each belongs to is contract/layouts.c; the numbers are here because the kernels see them. */
#define HC_CODEC_INT4 1    /* tile64-int, 4-bit offset codes (zero point) */
#define HC_CODEC_INT4_SM 2 /* tile64-int, 4-bit sign-magnitude codes */
#define HC_CODEC_INT8 3    /* tile64-int, 8-bit offset codes */
#define HC_CODEC_FP4 4     /* tile64-fp4, E2M1 */
#define HC_CODEC_MXFOLD 5  /* tile64-mxfold, E2M1 with folded group exponents */
#define HC_CODEC_FP8 6     /* tile64-fp8, E4M3 */
#define HC_CODEC_COUNT 7   /* numbers 1..6; 0 is none */

/* Scale kinds: what a tile's scale entries are (hc_core_params.scale_kind, -DHC_SK). */
#define HC_SK_F32 0
#define HC_SK_BF16 1
#define HC_SK_F16 2
#define HC_SK_E4M3 3
#define HC_SK_E8M0 4
#define HC_SK_F32_DIV 5 /* F32 divisors (tile64-fp8 version 2) */
#define HC_SK_COUNT 6

/* What follows from those numbers, for the table (contract/layouts.c) and the kernels alike:
 * bits per stored code of a codec, bytes of a scale entry of a kind, and folded MXFP4's
 * per-row record (base exponent, two group offsets, a pad byte) that stands for its scales. */
#define HC_CODEC_CODE_BITS(c) (((c) == HC_CODEC_INT8 || (c) == HC_CODEC_FP8) ? 8 : 4)
#define HC_SK_BYTES(sk)                                                                       \
    (((sk) == HC_SK_F32 || (sk) == HC_SK_F32_DIV) ? 4u                                        \
     : ((sk) == HC_SK_BF16 || (sk) == HC_SK_F16)  ? 2u                                        \
                                                  : 1u)
#define HC_MXFOLD_RECORD_BYTES 4u

typedef unsigned char hc_u8;
typedef unsigned int hc_u32;
typedef unsigned long long hc_u64;

/* Byte offset and nibble shift of element (r, c) of a tile's code area. */
HC_HD void hc__core_code_pos(unsigned bits, unsigned r, unsigned c, hc_u64 *byte, unsigned *shift) {
    unsigned rb = r / 16, kb = c / 16, i = r % 16, j = c % 16;
    unsigned lane = (i % 8) * 4 + (j % 8) / 2;
    unsigned a = (j >= 8 ? 4u : 0u) + (i >= 8 ? 2u : 0u) + (j % 2);
    if (bits == 4) {
        unsigned nib = (a % 2) * 4 + a / 2;
        *byte = ((hc_u64)rb * 32 + lane) * 16 + kb * 4 + nib / 2;
        *shift = (nib % 2) * 4;
    } else {
        unsigned v = rb * 2 + kb / 2;
        *byte = ((hc_u64)v * 32 + lane) * 16 + (kb % 2) * 8 + a;
        *shift = 0;
    }
}

HC_HD float hc__core_bits_f32(hc_u32 u) {
    union {
        hc_u32 u;
        float f;
    } x;
    x.u = u;
    return x.f;
}

HC_HD double hc__core_pow2(int e) { /* exact 2^e for e in -1074..1023 */
    union {
        hc_u64 u;
        double d;
    } x;
    if (e >= -1022) {
        x.u = (hc_u64)(e + 1023) << 52;
        return x.d;
    }
    x.u = 1ull << (e + 1074);
    return x.d;
}

HC_HD double hc__core_fp4(unsigned code) {
    const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    double v = mag[code & 7];
    return (code & 8) ? -v : v;
}

HC_HD double hc__core_e4m3(unsigned b) {
    unsigned e = (b >> 3) & 15, m = b & 7;
    double s = (b & 0x80) ? -1.0 : 1.0;
    if (e == 15 && m == 7) return 0.0 / 0.0;
    if (e == 0) return s * (double)m * hc__core_pow2(-9);
    return s * (1.0 + (double)m / 8.0) * hc__core_pow2((int)e - 7);
}

HC_HD double hc__core_e8m0(unsigned b) {
    b &= 0xFF;
    return b == 0xFF ? 0.0 / 0.0 : hc__core_pow2((int)b - 127);
}

HC_HD double hc__core_f16(unsigned h) {
    unsigned e = (h >> 10) & 31, m = h & 1023;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 31) return m ? 0.0 / 0.0 : s / 0.0;
    if (e == 0) return s * (double)m * hc__core_pow2(-24);
    return s * (1.0 + (double)m / 1024.0) * hc__core_pow2((int)e - 15);
}

/* E2M1 code u times 2^d as an E4M3 byte, when exact (the mxfold conversion). */
HC_HD int hc__core_e4m3_of_fp4(unsigned u, int d, hc_u8 *out) {
    const int ex[8] = {0, -1, 0, 0, 1, 1, 2, 2}; /* |v| = (1 + f/2) 2^ex */
    const int fr[8] = {0, 0, 0, 1, 0, 1, 0, 1};
    unsigned m = u & 7, s = (u & 8) << 4;
    if (m == 0) {
        *out = (hc_u8)s;
        return 1;
    }
    int e = ex[m] + d + 7;
    if (e >= 1) { /* normal; the mantissa is 000 or 100, never the NaN 111 */
        if (e > 15) return 0;
        *out = (hc_u8)(s | (unsigned)e << 3 | (fr[m] ? 4u : 0u));
        return 1;
    }
    int p2 = e + 1; /* subnormal: q 2^-9 with q = (2 + f) 2^(e + 1) in 1..7 */
    unsigned q;
    if (p2 >= 0) q = (2u + (unsigned)fr[m]) << p2;
    else if (p2 == -1 && !fr[m]) q = 1;
    else return 0;
    if (q > 7) return 0;
    *out = (hc_u8)(s | q);
    return 1;
}

/* What a kernel needs to read a tile chunk (filled from hc_tile_params on the host). */
typedef struct {
    unsigned kind;       /* hc_tile_kind */
    unsigned code_bits;  /* 4 or 8 */
    unsigned S;          /* scale columns per tile row */
    unsigned g;          /* scale group along K (S > 1: columns per scale column) */
    unsigned scale_kind; /* HC_SK_* */
    unsigned zeros;      /* a zero-point byte per scale entry */
    unsigned zero_const;
    unsigned sign_magnitude;
    double global_div;   /* NVFP4 divisor, 0 when unused */
    hc_u64 code_bytes, scale_bytes, chunk_bytes;
    hc_u64 tiles_n, tiles_k, N, K;
} hc_core_params;

HC_HD double hc__core_scale(const hc_core_params *p, const hc_u8 *chunk, unsigned r, unsigned j) {
    const hc_u8 *s = chunk + p->code_bytes;
    hc_u64 i = (hc_u64)r * p->S + j;
    switch (p->scale_kind) {
    case HC_SK_F32:
    case HC_SK_F32_DIV: return hc__core_bits_f32((hc_u32)s[4 * i] | (hc_u32)s[4 * i + 1] << 8 |
                                    (hc_u32)s[4 * i + 2] << 16 | (hc_u32)s[4 * i + 3] << 24);
    case HC_SK_BF16: return hc__core_bits_f32(((hc_u32)s[2 * i] | (hc_u32)s[2 * i + 1] << 8) << 16);
    case HC_SK_F16: return hc__core_f16((unsigned)s[2 * i] | (unsigned)s[2 * i + 1] << 8);
    case HC_SK_E4M3: return hc__core_e4m3(s[i]);
    default: return hc__core_e8m0(s[i]);
    }
}

/* The effective weight of element (r, c) of a tile chunk, in float64. */
HC_HD double hc__core_value(const hc_core_params *p, const hc_u8 *chunk, unsigned r, unsigned c) {
    hc_u64 b;
    unsigned sh;
    hc__core_code_pos(p->code_bits, r, c, &b, &sh);
    unsigned u = p->code_bits == 4 ? (chunk[b] >> sh) & 15u : chunk[b];
    unsigned j = p->S > 1 ? c / p->g : 0;
    switch (p->kind) {
    case HC_TL_INT: {
        double s = hc__core_scale(p, chunk, r, j);
        if (p->sign_magnitude) {
            double q = (double)(u & 7);
            return (u & 8 ? -q : q) * s;
        }
        double z = p->zeros ? (double)chunk[p->code_bytes + p->scale_bytes + r * p->S + j]
                            : (double)p->zero_const;
        return ((double)u - z) * s;
    }
    case HC_TL_FP4: {
        double s = hc__core_scale(p, chunk, r, j);
        return p->global_div != 0 ? hc__core_fp4(u) * (s / p->global_div) : hc__core_fp4(u) * s;
    }
    case HC_TL_FP8: /* divided in float64: rounded to float32 it is the float32 quotient's bits */
        return p->scale_kind == HC_SK_F32_DIV ? hc__core_e4m3(u) / hc__core_scale(p, chunk, r, j)
                                  : hc__core_e4m3(u) * hc__core_scale(p, chunk, r, j);
    case HC_TL_MXFOLD: {
        const hc_u8 *rec = chunk + p->code_bytes + (hc_u64)r * 4;
        if (rec[0] == 0xFF) return hc__core_fp4(u) * hc__core_e8m0(rec[1 + j]);
        hc_u8 e;
        if (!hc__core_e4m3_of_fp4(u, (int)(signed char)rec[1 + j], &e)) return 0.0 / 0.0;
        return hc__core_e4m3(e) * hc__core_pow2((int)rec[0] - 127);
    }
    }
    return 0.0 / 0.0;
}

/* The fast kernels' parameters (kernels/tile_mma.cu), filled by runtime/gpu.c: the fields a
 * tile's decode needs and nothing else, so the kernels keep few registers (the codec is a
 * build option: HC_CODEC_*). */
typedef struct {
    hc_u64 tiles_n, tiles_k, chunk_bytes, N, K;
    hc_u64 ldx;          /* activation row stride, in elements */
    unsigned code_bytes, scale_bytes, S;
    unsigned lgs;        /* log2 of the k16 steps per scale group: 0, 1 or 2 */
    unsigned scale_kind; /* as hc_core_params */
    unsigned zeros, zero_const;
    float global_div;    /* NVFP4 divisor of the scales, 0 when unused */
} hc_mma_params;

#endif
