// tile_mma.cu: the fast kernels over the tiled layouts (docs/layouts.md): bf16 activations in,
// bf16 out, float32 accumulation on the tensor cores (mma.sync m16n8k16, weights as the A
// operand, tokens as N). Compiled at run time by NVRTC once per kind of layer: the codec
// (-DHC_CODEC; hc_mma_params in layout_core.h lists them), and unless the host asks for a
// generic module, the scale type, group and zero points (-DHC_SK, -DHC_LGS, -DHC_ZP); N, K, M and
// the expert are run-time arguments, so every shape of a model shares its few modules.
//
// The codes are stored in A-fragment order, so a lane's 16-byte word of a tile holds exactly
// the eight codes it feeds to the tensor cores: no shuffles and no shared-memory transposes.
// Each pair of codes becomes a bf16x2 word with a few bit operations and one bf16x2 FMA; the
// value is exact (integers up to 255, E2M1 and E4M3 values are all bf16 numbers).
//
// hc_mma_gemv_t<1|8|16>: M = 1, <= 8 or 16 tokens, memory bound. A block takes one 64-row stripe;
//   each of its four warps streams whole tile chunks through its own shared-memory pipeline
//   (cp.async, HC_GEMV_STAGES deep) and accumulates exact codes per scale group, applying each
//   row's scale in float32 once per group. K is split over warps and over blocks
//   (gridDim.y); the blocks of a stripe write partial sums to a workspace and the last one to
//   finish adds them in a fixed order (deterministic results, no atomics on outputs).
// hc_mma_gemm: M > 16, matrix bound. A block of eight warps computes 128 weight rows x 128
//   tokens over all of K with a three-stage cp.async pipeline of (two chunks + a swizzled
//   128 x 64 activation tile); each weight is decoded, scaled in float32 and rounded once to
//   bf16 (as dequantize-then-GEMM would), activations go through ldmatrix.
// hc_wgmma_gemm (sm_90a): the same tiles on wgmma m64n128k16, A in registers.
// hc_wgmma_gemm64/128/256 (sm_90a, M > 16): warp-specialised, 128 weight rows x 64/128/256
//   tokens per block: a producer thread fills a 5-stage pipeline with TMA (activations) and
//   bulk copies (chunks), two consumer warpgroups decode their rows into registers and run
//   wgmma m64nTk16.
#include "layout_core.h"

#ifndef HC_CODEC
#define HC_CODEC 1
#endif
#define HC_CODE_BITS ((HC_CODEC == 3 || HC_CODEC == 6) ? 8 : 4)
/* Tuning knobs, set by the host through NVRTC options (runtime/gpu.c; bench/NOTES.md has the
 * measurements behind the defaults). */
#ifndef HC_GEMV_STAGES
#define HC_GEMV_STAGES 4 /* tiles of a warp's pipeline (HC_GEMV_STAGES - 1 in flight) */
#endif
#ifndef HC_GEMV1_STAGES
#define HC_GEMV1_STAGES 6 /* the M = 1 kernel's (its stages hold one activation row) */
#endif
#ifndef HC_GEMV_MINB
#define HC_GEMV_MINB 4 /* launch bounds: resident blocks per SM the registers must allow */
#endif
/* HC_GEMV_PDL: the small-M kernels start under programmatic dependent launch -- the weight
 * copies of the first stages are issued before griddepcontrol.wait (weights do not depend on
 * the kernel before; activations, outputs and the workspace are touched only after it) */
#ifndef HC_GEMV_PDL
#define HC_GEMV_PDL 1
#endif
#if HC_GEMV_PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define HC_PDL_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define HC_PDL_RELEASE() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define HC_PDL_WAIT() ((void)0)
#define HC_PDL_RELEASE() ((void)0)
#endif
/* HC_GEMV_MXS (HC_GEMV_MXFOLD_SMEM, default 1; folded MXFP4 only): the small-M kernels decode a
 * tile's 128 scales once -- each lane the 4 of its own two rows' records, written back over
 * those records as bf16 -- instead of every lane decoding the 16 it applies (4 lanes share a
 * row); the warp-specialised kernels likewise (bench/NOTES.md v25) */
#ifndef HC_GEMV_MXS
#define HC_GEMV_MXS 1
#endif
/* HC_GEMV_DIAG (measurements): 1: the small-M kernels only copy (wrong results); 2: they also
 * record per block its SM and the global timer at entry, first tile, loop end and outputs
 * (5 words after the split's partial sums in the workspace; hc_gpu_diag_timeline) */
#ifndef HC_GEMV_DIAG
#define HC_GEMV_DIAG 0
#endif
#if HC_GEMV_DIAG == 2
__device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif
#define HC_GEMM_STAGES 3
#define HC_WGMMA_STAGES 3

typedef unsigned short hc_u16;
/* Layer specialisation: with -DHC_SK (scale kind), -DHC_LGS (log2 k16 steps per scale group),
 * -DHC_ZP (zero points per entry) the host builds one module per kind of layer a model holds,
 * so the tile geometry is constant and the decode has no run-time branches; without them the
 * module reads those fields from hc_mma_params (one module per codec, any layer). */
#ifdef HC_SK
#define P_SK HC_SK
#define P_LGS HC_LGS
#define P_ZEROS HC_ZP
#define P_S (1u << (2 - HC_LGS))
#define P_CODE_BYTES (64u * 64u * HC_CODE_BITS / 8u)
#if HC_CODEC == 5
#define P_SCALE_BYTES 256u
#else
#define P_SCALE_BYTES (64u * P_S * (HC_SK == 0 || HC_SK == 5 ? 4u : HC_SK <= 2 ? 2u : 1u))
#endif
#define P_CB ((hc_u64)((P_CODE_BYTES + P_SCALE_BYTES + (HC_ZP ? 64u * P_S : 0u) + 127u) / 128u * 128u))
#else
#define P_SK p.scale_kind
#define P_LGS p.lgs
#define P_ZEROS p.zeros
#define P_S p.S
#define P_CODE_BYTES p.code_bytes
#define P_SCALE_BYTES p.scale_bytes
#define P_CB p.chunk_bytes
#endif

/* dynamic shared memory of every kernel here (its layout is each kernel's own) */
extern __shared__ __align__(1024) hc_u8 hc_smem[];

__device__ __forceinline__ unsigned bf2_fma(unsigned a, unsigned b, unsigned c) {
    unsigned d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ unsigned bf2_pack(float lo, float hi) {
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}
__device__ __forceinline__ hc_u16 bf16_of(float f) {
    hc_u16 h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float f32_of_f16(hc_u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ void mma_bf16(float *c, const unsigned *a, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned smem_addr(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
/* The dynamic shared memory rounded up to 1024 bytes (the 128-byte swizzle's period), by
 * pointer arithmetic on hc_smem so that the compiler still knows the space (a pointer cast
 * from an integer would make every access a generic load). */
__device__ __forceinline__ hc_u8 *smem_1024() {
    return hc_smem + ((1024u - (smem_addr(hc_smem) & 1023u)) & 1023u);
}
/* 16 bytes global -> shared, bypassing L1; src_bytes 0 fills zeros */
__device__ __forceinline__ void cp16(void *dst, const void *src, unsigned src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
}
/* cp16 under a predicate, without a branch: src_bytes 0 fills zeros; nothing when !on */
__device__ __forceinline__ void cp16_if(unsigned dst, const void *src, unsigned src_bytes, bool on) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %3, 0;\n"
                 "@p cp.async.cg.shared.global [%0], [%1], 16, %2;\n}" ::"r"(dst),
                 "l"(src), "r"(src_bytes), "r"((unsigned)on));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

/* ---- one tile row's scale and zero point, from the chunk in shared memory ---- */
__device__ __forceinline__ float tile_scale(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                            unsigned j) {
#if HC_CODEC == 5
    /* the row's record, one word: base exponent B, offsets d0, d1 (raw E8M0 when B = 0xFF) */
    unsigned rec = *(const unsigned *)(ch + P_CODE_BYTES + r * 4), b = rec & 0xFF;
    unsigned d = (rec >> (8 + 8 * j)) & 0xFF;
    int e = b == 0xFF ? (int)d : (int)b + (int)(signed char)d;
    unsigned bits = e >= 255 ? 0x7FC00000u : e > 0 ? (unsigned)e << 23 : e == 0 ? 0x00400000u : 0u;
    return __uint_as_float(bits); /* 2^(e - 127); e = 0 is 2^-127 */
#else
    const hc_u8 *s = ch + P_CODE_BYTES;
    unsigned i = r * P_S + j;
    float v;
    switch (P_SK) {
    case 0: v = ((const float *)s)[i]; break;
    case 5: v = __frcp_rn(((const float *)s)[i]); break; /* fp8 divisors: w * (1 / s) */
    case 1: v = __uint_as_float((unsigned)((const hc_u16 *)s)[i] << 16); break;
    case 2: v = f32_of_f16(((const hc_u16 *)s)[i]); break;
    case 3: { /* E4M3: bits into float32's exponent and mantissa, times 2^120 */
        unsigned b = s[i];
        v = (b & 0x7F) == 0x7F ? __uint_as_float(0x7FC00000u)
                               : __uint_as_float((b & 0x7F) << 20) * __uint_as_float(0x7B800000u);
        if (b & 0x80) v = -v;
        break;
    }
    default: { /* E8M0 */
        unsigned b = s[i];
        v = b == 0xFF ? __uint_as_float(0x7FC00000u)
            : b == 0  ? __uint_as_float(0x00400000u)
                      : __uint_as_float(b << 23);
    }
    }
#if HC_CODEC == 4 && (!defined(HC_SK) || HC_SK == 3) /* NVFP4's divisor (E4M3 scales only) */
    if (p.global_div != 0.0f) v = v / p.global_div;
#endif
    return v;
#endif
}

#if HC_CODEC == 5
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
__device__ __forceinline__ float record_scale(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                              unsigned j) {
    (void)p; /* (P_CODE_BYTES reads it in generic modules) */
    return __uint_as_float((unsigned)*(const hc_u16 *)(ch + P_CODE_BYTES + r * 4 + j * 2) << 16);
}
/* The scale the small-M kernels apply: tile_scale, or with HC_GEMV_MXS the bf16 the tile's
 * lanes wrote over the records (gemv_body). */
__device__ __forceinline__ float gemv_scale(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                            unsigned j) {
#if HC_CODEC == 5 && HC_GEMV_MXS
    return record_scale(ch, p, r, j);
#else
    return tile_scale(ch, p, r, j);
#endif
}

__device__ __forceinline__ unsigned tile_zero(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                              unsigned j) {
    return P_ZEROS ? ch[P_CODE_BYTES + P_SCALE_BYTES + r * P_S + j] : p.zero_const;
}

/* (a & b) | c in one LOP3 (the compiler otherwise spends two on two immediates) */
__device__ __forceinline__ unsigned lop_and_or(unsigned a, unsigned b, unsigned c) {
    unsigned d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

/* ---- codes -> exact bf16x2 pairs ----
 * Pair t (0..3) of a lane's fragment is A register t: (a2t, a2t+1), one row (g for t even,
 * g + 8 for t odd). 4-bit: w is the lane's word for one k16 step; nibbles of pair t sit at bit
 * 4t and 16 + 4t. 8-bit: w0 holds a0..a3, w1 a4..a7. zb: bf16x2 of -(128 + z) for the row. */
__device__ __forceinline__ unsigned exact_pair(unsigned w0, unsigned w1, int t, unsigned zb) {
#if HC_CODEC == 1
    (void)w1;
    unsigned q = lop_and_or(w0 >> (4 * t), 0x000F000Fu, 0x43004300u); /* 128 + u */
    return bf2_fma(q, 0x3F803F80u, zb);                               /* - (128 + z): exact */
#elif HC_CODEC == 2
    (void)w1, (void)zb;
    unsigned s = w0 >> (4 * t);
    unsigned m = bf2_fma((s & 0x00070007u) | 0x43004300u, 0x3F803F80u, 0xC300C300u);
    return m | ((s << 12) & 0x80008000u); /* bit 3 of each nibble is the sign */
#elif HC_CODEC == 4 || HC_CODEC == 5
    (void)w1, (void)zb;
    /* e1 e0 m of nibble t at bf16's exponent/mantissa seam (bits 6-8), times 2^126; the sign
     * (nibble bit 3) to bit 15: two shifts of w0, an AND, the multiply and one LOP3 */
    unsigned mag = (4 * t <= 6 ? w0 << (6 - 4 * t) : w0 >> (4 * t - 6)) & 0x01C001C0u;
    return lop_and_or(w0 << (12 - 4 * t), 0x80008000u, bf2_fma(mag, 0x7E807E80u, 0x80008000u));
#elif HC_CODEC == 6
    (void)zb;
    unsigned x = __byte_perm(t < 2 ? w0 : w1, 0, (t & 1) ? 0x3424 : 0x1404); /* b << 8, b' << 24 */
    unsigned v = ((x >> 4) & 0x07F007F0u) | (x & 0x80008000u);
    return bf2_fma(v, 0x7B807B80u, 0x80008000u); /* x 2^120 */
#elif HC_CODEC == 3
    unsigned w = t < 2 ? w0 : w1, z = zb;
    float lo = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440 | ((t & 1) * 2))) - __uint_as_float(0x4B000000u | z);
    float hi = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7441 | ((t & 1) * 2))) - __uint_as_float(0x4B000000u | z);
    return bf2_pack(lo, hi);
#endif
}

/* The zero-point operand exact_pair takes for a zero point z. */
__device__ __forceinline__ unsigned zero_operand(unsigned z) {
#if HC_CODEC == 3
    return z;
#else
    return (0xC300u | z) * 0x10001u;
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

#if HC_CODEC == 1 || HC_CODEC == 3
#define HC_HAS_ZERO 1
#else
#define HC_HAS_ZERO 0
#endif

/* The A fragment of one k16 step for tile rows r0 (pairs 0, 2) and r0 + 8 (pairs 1, 3), scale
 * group j, the values exact and unscaled (zero point taken off): the small-M kernels. */
__device__ __forceinline__ void exact_frag(const hc_u8 *ch, const hc_mma_params &p, unsigned r0,
                                           unsigned j, frag_words f, unsigned *a) {
    unsigned z0 = 0, z1 = 0;
#if HC_HAS_ZERO
    z0 = zero_operand(tile_zero(ch, p, r0, j));
    z1 = zero_operand(tile_zero(ch, p, r0 + 8, j));
#endif
#pragma unroll
    for (int t = 0; t < 4; t++) a[t] = exact_pair(f.w0, f.w1, t, t & 1 ? z1 : z0);
}

/* Scales that are bf16 numbers (bf16, E8M0, E4M3 without NVFP4's divisor, folded MXFP4
 * exponents): the product of an exact bf16 value and such a scale is exact in float32, so one
 * bf16x2 FMA (addend -0) rounds it exactly as float32-multiply-then-round does. */
#if defined(HC_SK) && (HC_CODEC == 5 || HC_SK == 1 || HC_SK == 4 || (HC_SK == 3 && HC_CODEC != 4))
#define HC_SCALE_IS_BF16 1
#else
#define HC_SCALE_IS_BF16 0
#endif

/* The same, each weight then scaled in float32 and rounded once to bf16 (the large-M kernels;
 * dequantize-then-GEMM numerics). */
/* SH: the records already hold the group scales as bf16 (HC_GEMV_MXS in ws_gemm) */
template <bool SH = false>
__device__ __forceinline__ void scaled_frag(const hc_u8 *ch, const hc_mma_params &p, unsigned r0,
                                            unsigned j, frag_words f, unsigned *a) {
    float s0, s1;
    if (SH) {
        s0 = record_scale(ch, p, r0, j), s1 = record_scale(ch, p, r0 + 8, j);
    } else {
        s0 = tile_scale(ch, p, r0, j), s1 = tile_scale(ch, p, r0 + 8, j);
    }
    exact_frag(ch, p, r0, j, f, a);
#if HC_SCALE_IS_BF16
    const unsigned b0 = (__float_as_uint(s0) >> 16) * 0x10001u;
    const unsigned b1 = (__float_as_uint(s1) >> 16) * 0x10001u;
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

/* ================= small M ================= */
/* A stage of a warp's pipeline: the tile chunk, then the tile's activations [XR][64] bf16
 * (the 128-byte rows swizzled by 16-byte pieces: piece q of token t at t * 128 + (q ^ t % 8) *
 * 16, so ldmatrix reads them without bank conflicts); NS stages. Rows of tokens >= m are zeroed
 * once; tokens XR..TOK-1 (XR < TOK: the M = 1 kernel, whose stages hold one activation row
 * and so fit more of them) read a zero row after the warp's stages. */
template <int TOK, int XR, int NS>
__device__ __forceinline__ void gemv_body(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                          hc_u64 expert, const hc_u16 *__restrict__ x, hc_u64 m,
                                          hc_u16 *__restrict__ y, float *__restrict__ ws,
                                          unsigned *__restrict__ cnt) {
    constexpr int MT = TOK / 8;
    hc_u8 *smem = hc_smem;
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned g = lane >> 2, c = lane & 3;
    const hc_u64 nb = blockIdx.x, cb = P_CB, sb = cb + XR * 128;
    constexpr unsigned ZR = XR < TOK ? 128 : 0; /* the zero row */
    const hc_u8 *stripe = w + (expert * p.tiles_n + nb) * p.tiles_k * cb;
    hc_u8 *mine = smem + (hc_u64)warp * (NS * sb + ZR), *zrow = mine + NS * sb;
    const hc_u64 step = 4ull * gridDim.y, kb0 = blockIdx.y * 4ull + warp;
    const long nt = kb0 < p.tiles_k ? (long)((p.tiles_k - kb0 + step - 1) / step) : 0;
    const unsigned live = (unsigned)(m < XR ? m : XR), xpieces = live * 8;
    const unsigned gmask = (1u << P_LGS) - 1;
#if HC_GEMV_DIAG == 2
    unsigned long long tl[3] = {threadIdx.x == 0 ? gtimer() : 0ull, 0ull, 0ull};
#endif
    /* activation rows of absent tokens stay zero in every stage */
    for (unsigned q = lane; q < NS * (XR - live) * 8; q += 32) {
        unsigned st = q / ((XR - live) * 8), r = q % ((XR - live) * 8);
        *(uint4 *)(mine + st * sb + cb + (live + r / 8) * 128 + (r % 8) * 16) = make_uint4(0, 0, 0, 0);
    }

    float acc[4][MT][4], part[MT][4];
#pragma unroll
    for (int rb = 0; rb < 4; rb++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[rb][mt][e] = 0.0f;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int e = 0; e < 4; e++) part[mt][e] = 0.0f;

    auto wait = [&](long) {
        cp_wait<NS - 1>();
        __syncwarp();
    };
    /* this lane's pieces of every tile: chunk bytes lane * 16 + 512 q, and activation pieces
     * lane + 32 h (token t, 16-byte piece pc); the copies walk running pointers, so a tile's
     * issue is its cp.async instructions and a few adds */
    if (ZR && lane < 8) *(uint4 *)(zrow + lane * 16) = make_uint4(0, 0, 0, 0);
    constexpr unsigned XH = (XR * 8 + 31) / 32;
    const unsigned mine_s = smem_addr(mine);
    const hc_u8 *csrc = stripe + kb0 * cb + lane * 16;
    const hc_u64 src_step = step * cb, kstep = step * 64;
    const unsigned nq = (unsigned)((cb + 511) / 512);
    const bool qlast = lane * 16 + (nq - 1) * 512 < cb;
    const hc_u16 *xrow[XH];
    unsigned xoff[XH];
    hc_u64 xend[XH]; /* the piece exists while the tile's first column is below this */
    bool xlive[XH];
#pragma unroll
    for (unsigned h = 0; h < XH; h++) {
        unsigned q = lane + h * 32, t = q >> 3, pc = q & 7;
        xlive[h] = q < xpieces;
        xrow[h] = x + (hc_u64)t * p.ldx + pc * 8;
        xend[h] = p.K > pc * 8 ? p.K - pc * 8 : 0;
        xoff[h] = (unsigned)cb + t * 128 + ((pc ^ (t & 7)) * 16);
    }
    hc_u64 kcol = kb0 * 64; /* first column of the next tile to issue */
    unsigned snext = 0;     /* its stage */
    /* a tile's copies: its chunk (into stage st, from csrc) and its activations (column kc) */
    auto issue_w = [&](unsigned st) {
        const unsigned dst = mine_s + st * (unsigned)sb;
#pragma unroll
        for (unsigned q = 0; q < (P_CB + 511) / 512; q++)
            cp16_if(dst + lane * 16 + q * 512, csrc + q * 512, 16, q + 1 < nq || qlast);
        csrc += src_step;
    };
    auto issue_x = [&](unsigned st, hc_u64 kc) {
        const unsigned dst = mine_s + st * (unsigned)sb;
#pragma unroll
        for (unsigned h = 0; h < XH; h++) {
            bool ok = kc < xend[h];
            cp16_if(dst + xoff[h], ok ? xrow[h] + kc : x, ok ? 16 : 0, xlive[h]);
        }
    };
    auto issue = [&]() {
        issue_w(snext);
        issue_x(snext, kcol);
        kcol += kstep;
        snext = snext + 1 == NS ? 0 : snext + 1;
    };
    __syncwarp();
#if HC_GEMV_PDL
    /* the first stages' weights before the previous kernel is done (they go into the first
     * commit group with stage 0's activations; later groups hold activations only) */
#pragma unroll
    for (int s = 0; s < NS - 1; s++)
        if (s < nt) issue_w((unsigned)s);
    HC_PDL_RELEASE();
    HC_PDL_WAIT();
#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        if (s < nt) issue_x((unsigned)s, kcol), kcol += kstep, snext++;
        cp_commit();
    }
#else
#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        if (s < nt) issue();
        cp_commit();
    }
#endif
    unsigned scur = 0; /* tile i's stage, i % NS without a division */
    for (long i = 0; i < nt; i++, scur = scur + 1 == NS ? 0 : scur + 1) {
        __syncwarp(); /* every lane is done with the stage about to be refilled */
        if (i + NS - 1 < nt) issue();
        cp_commit();
        unsigned b[4][MT][2];
        wait(i);
#if HC_GEMV_DIAG == 2
        if (i == 0 && threadIdx.x == 0) tl[1] = gtimer();
#endif
        hc_u8 *ch = mine + scur * (unsigned)sb;
#if HC_CODEC == 5 && HC_GEMV_MXS
        { /* lane L: rows 2L and 2L + 1, each record (B, d0, d1, 0) -> (bf16 s0, bf16 s1) */
            uint2 *rw = (uint2 *)(ch + P_CODE_BYTES + lane * 8);
            const uint2 rc = *rw;
            *rw = make_uint2(mxfold_bf16(rc.x, 0) | mxfold_bf16(rc.x, 1) << 16,
                             mxfold_bf16(rc.y, 0) | mxfold_bf16(rc.y, 1) << 16);
            __syncwarp();
        }
#endif
        const hc_u8 *xs = ch + cb;
        /* B fragments: ldmatrix x4 = 8 tokens x 32 columns (two k16 steps) */
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                unsigned t = mt * 8 + (lane & 7), pc = h * 4 + (lane >> 3);
                unsigned addr = smem_addr(t < XR ? xs + t * 128 + ((pc ^ (t & 7)) * 16)
                                                 : zrow + pc * 16);
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(b[2 * h][mt][0]), "=r"(b[2 * h][mt][1]),
                               "=r"(b[2 * h + 1][mt][0]), "=r"(b[2 * h + 1][mt][1])
                             : "r"(addr));
            }
#if HC_GEMV_DIAG == 1 /* HC_DIAG_GEMV_COPY_ONLY: the copies and one read, no arithmetic */
        acc[0][0][0] += (float)(*(const unsigned *)(ch + lane * 16) & 1u);
        continue;
#endif
#pragma unroll
        for (int rb = 0; rb < 4; rb++) {
            rb_codes v;
            load_codes(ch, rb, lane, v);
#pragma unroll
            for (int ks = 0; ks < 4; ks++) {
                const unsigned j = (unsigned)ks >> P_LGS;
                unsigned a[4];
                exact_frag(ch, p, rb * 16 + g, j, words_of(v, ks), a);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) mma_bf16(part[mt], a, b[ks][mt][0], b[ks][mt][1]);
                if ((((unsigned)ks + 1) & gmask) == 0) { /* end of a scale group */
                    float s0 = gemv_scale(ch, p, rb * 16 + g, j);
                    float s1 = gemv_scale(ch, p, rb * 16 + g + 8, j);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        acc[rb][mt][0] = fmaf(part[mt][0], s0, acc[rb][mt][0]);
                        acc[rb][mt][1] = fmaf(part[mt][1], s0, acc[rb][mt][1]);
                        acc[rb][mt][2] = fmaf(part[mt][2], s1, acc[rb][mt][2]);
                        acc[rb][mt][3] = fmaf(part[mt][3], s1, acc[rb][mt][3]);
#pragma unroll
                        for (int e = 0; e < 4; e++) part[mt][e] = 0.0f;
                    }
                }
            }
        }
    }
#if HC_GEMV_DIAG == 2
    if (threadIdx.x == 0) tl[2] = gtimer();
#endif
    cp_wait<0>();
    __syncthreads(); /* the pipelines' memory becomes the reduction buffer */
    float *red = (float *)smem; /* [warp][row][token] */
#pragma unroll
    for (int rb = 0; rb < 4; rb++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                unsigned row = rb * 16 + g + (e >= 2 ? 8 : 0), tok = mt * 8 + 2 * c + (e & 1);
                red[(warp * 64 + row) * TOK + tok] = acc[rb][mt][e];
            }
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
#if HC_GEMV_DIAG == 2
    if (threadIdx.x == 0) {
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        unsigned long long *r = (unsigned long long *)(ws + (hc_u64)gridDim.y * p.tiles_n * 64 * TOK) +
                                ((hc_u64)blockIdx.y * gridDim.x + blockIdx.x) * 5;
        r[0] = smid, r[1] = tl[0], r[2] = tl[1], r[3] = tl[2], r[4] = gtimer();
    }
#endif
    if (!split) return;
    /* the last block of this stripe to finish adds the partial sums, in block order, with the
     * loads of 8 blocks' partials in flight together (one round trip each, not one per block) */
    __shared__ unsigned last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&cnt[nb], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (unsigned idx = threadIdx.x; idx < E; idx += blockDim.x) {
        unsigned row = idx / mlive, tok = idx % mlive;
        hc_u64 n = nb * 64 + row;
        if (n >= p.N) continue;
        const float *src = ws + (hc_u64)nb * 64 * TOK + row * TOK + tok;
        const hc_u64 bstride = p.tiles_n * 64ull * TOK;
        float s = 0.0f;
        for (unsigned y0 = 0; y0 < gridDim.y; y0 += 8) {
            float v[8];
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

/* Dynamic shared memory: 4 warps x HC_GEMV_STAGES x (chunk_bytes + TOK x 128); M = 1: 4 warps x
 * (HC_GEMV1_STAGES x (chunk_bytes + 128) + 128). x 16-byte aligned with K % 8 == 0 (the host
 * gathers otherwise). */
extern "C" __global__ void __launch_bounds__(128, HC_GEMV_MINB)
    hc_mma_gemv_t1(const hc_u8 *w, hc_mma_params p, hc_u64 expert, const hc_u16 *x, hc_u64 m,
                   hc_u16 *y, float *ws, unsigned *cnt) {
    gemv_body<8, 1, HC_GEMV1_STAGES>(w, p, expert, x, m, y, ws, cnt);
}
extern "C" __global__ void __launch_bounds__(128, HC_GEMV_MINB)
    hc_mma_gemv_t8(const hc_u8 *w, hc_mma_params p, hc_u64 expert, const hc_u16 *x, hc_u64 m,
                   hc_u16 *y, float *ws, unsigned *cnt) {
    gemv_body<8, 8, HC_GEMV_STAGES>(w, p, expert, x, m, y, ws, cnt);
}
extern "C" __global__ void __launch_bounds__(128, HC_GEMV_MINB)
    hc_mma_gemv_t16(const hc_u8 *w, hc_mma_params p, hc_u64 expert, const hc_u16 *x, hc_u64 m,
                    hc_u16 *y, float *ws, unsigned *cnt) {
    gemv_body<16, 16, HC_GEMV_STAGES>(w, p, expert, x, m, y, ws, cnt);
}

/* One K tile for the large-M kernels, copied by NT cooperating threads (thread tid): the
 * activation tile (TOKS tokens x 64 columns from token tok0, zero beyond m and K) into xs with
 * the 128-byte swizzle (16-byte piece q of token t at t * 128 + (q ^ t % 8) * 16), and the
 * block's two weight chunks (stripes wsrc and wsrc + sstride; the second only when two) into cs
 * and cs + cb. */
template <int TOKS, int NT>
__device__ __forceinline__ void load_ktile(hc_u8 *xs, hc_u8 *cs, unsigned tid, const hc_u16 *x,
                                           hc_u64 tok0, hc_u64 m, const hc_mma_params &p,
                                           hc_u64 kb, const hc_u8 *wsrc, hc_u64 sstride,
                                           hc_u64 cb, bool two) {
#pragma unroll
    for (int i = 0; i < TOKS * 8 / NT; i++) {
        unsigned q = tid + i * NT, t = q >> 3, pc = q & 7;
        hc_u64 tok = tok0 + t, k = kb * 64 + pc * 8;
        bool ok = tok < m && k < p.K;
        cp16(xs + t * 128 + ((pc ^ (t & 7)) * 16), ok ? x + tok * p.ldx + k : x, ok ? 16 : 0);
    }
    const unsigned cpieces = (unsigned)(cb / 16);
    for (unsigned q = tid; q < 2 * cpieces; q += NT) {
        unsigned s = q >= cpieces;
        if (s && !two) continue;
        unsigned qq = q - s * cpieces;
        cp16(cs + s * cb + qq * 16, wsrc + s * sstride + kb * cb + qq * 16, 16);
    }
}

/* Writes one warp's accumulators -- C fragments of 16 weight rows (this lane's rows n0 and
 * n0 + 8) x NT8 n8 token tiles from tok0, d[i * 4 + e] -- to y as bf16, inside N x m. */
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

/* ================= large M ================= */
/* x: [m][ldx] bf16 with K % 8 == 0, ldx % 8 == 0 and 16-byte alignment (the host gathers
 * otherwise). Dynamic shared memory: HC_GEMM_STAGES x (2 chunk_bytes + 16384). */
extern "C" __global__ void __launch_bounds__(256)
    hc_mma_gemm(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,
                const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y) {
    hc_u8 *smem = hc_smem;
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned g = lane >> 2, c = lane & 3;
    const unsigned wr = warp & 3, wc = warp >> 2; /* 32-row quarter, 64-token half */
    const hc_u64 cb = P_CB, stage_bytes = 2 * cb + 16384;
    const hc_u64 nb0 = (hc_u64)blockIdx.x * 2, tok0 = (hc_u64)blockIdx.y * 128;
    const bool two = nb0 + 1 < p.tiles_n;
    const hc_u8 *wsrc = w + (expert * p.tiles_n + nb0) * p.tiles_k * cb;
    const hc_u64 sstride = p.tiles_k * cb; /* stripe to stripe */

    float acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int mt = 0; mt < 8; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][mt][e] = 0.0f;

    auto issue = [&](hc_u64 kb) {
        hc_u8 *st = smem + (kb % HC_GEMM_STAGES) * stage_bytes;
        load_ktile<128, 256>(st + 2 * cb, st, tid, x, tok0, m, p, kb, wsrc, sstride, cb, two);
    };
#pragma unroll
    for (int s = 0; s < HC_GEMM_STAGES - 1; s++) {
        if ((hc_u64)s < p.tiles_k) issue(s);
        cp_commit();
    }
    for (hc_u64 kb = 0; kb < p.tiles_k; kb++) {
        cp_wait<HC_GEMM_STAGES - 2>();
        __syncthreads();
        if (kb + HC_GEMM_STAGES - 1 < p.tiles_k) issue(kb + HC_GEMM_STAGES - 1);
        cp_commit();
        const hc_u8 *st = smem + (kb % HC_GEMM_STAGES) * stage_bytes;
        const hc_u8 *ch = st + (wr >> 1) * cb;
        const hc_u8 *xs = st + 2 * cb;
        rb_codes v[2];
#pragma unroll
        for (int i = 0; i < 2; i++) load_codes(ch, (wr & 1) * 2 + i, lane, v[i]);
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            unsigned b[8][2];
#pragma unroll
            for (int mp = 0; mp < 4; mp++) {
                unsigned mi = lane >> 3, t = wc * 64 + mp * 16 + (mi >> 1) * 8 + (lane & 7);
                unsigned pc = ks * 2 + (mi & 1);
                unsigned addr = smem_addr(xs + t * 128 + ((pc ^ (t & 7)) * 16));
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(b[2 * mp][0]), "=r"(b[2 * mp][1]), "=r"(b[2 * mp + 1][0]),
                               "=r"(b[2 * mp + 1][1])
                             : "r"(addr));
            }
            const unsigned j = (unsigned)ks >> P_LGS;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                unsigned a[4];
                scaled_frag(ch, p, ((wr & 1) * 2 + i) * 16 + g, j, words_of(v[i], ks), a);
#pragma unroll
                for (int mt = 0; mt < 8; mt++) mma_bf16(acc[i][mt], a, b[mt][0], b[mt][1]);
            }
        }
    }
    cp_wait<0>();
#pragma unroll
    for (int i = 0; i < 2; i++)
        store_c<8>(&acc[i][0][0], y, (nb0 + (wr >> 1)) * 64 + ((wr & 1) * 2 + i) * 16 + g,
                   tok0 + wc * 64, c, p, m);
}

/* ================= large M on Hopper: wgmma (sm_90a) ================= */
/* eight accumulator operands d[i..i+7] of a wgmma inline assembly statement */
#define HC_D8(i)                                                                              \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),  \
        "+f"(d[i + 6]), "+f"(d[i + 7])
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HC_WGMMA 1
/* d[64] += A (this warp's 16 rows of the warpgroup's 64, bf16 in registers) x B (128 tokens x
 * k16, bf16 in shared memory, K-major rows of 128 bytes with the 128-byte swizzle). */
__device__ __forceinline__ void wgmma_m64n128k16(float *d, const unsigned *a, hc_u64 desc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, "
                 "%67}, %68, p, 1, 1, 0;\n}\n"
                 : HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24), HC_D8(32), HC_D8(40), HC_D8(48), HC_D8(56)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
__device__ __forceinline__ hc_u64 b_desc(const void *p) {
    hc_u64 a = smem_addr(p);
    return ((a & 0x3FFFF) >> 4) | (1ull << 16) | ((hc_u64)(1024 >> 4) << 32) | (1ull << 62);
}
#endif

/* M > 16 on sm_90a: a block of two warpgroups computes 128 weight rows (warpgroup w: stripe
 * 2 blockIdx.x + w) x 128 tokens. Per K tile: each warp decodes its row block's A fragments
 * (scaled, rounded to bf16) into registers, then four wgmma m64n128k16 read the shared
 * activation tile (written by cp.async in the layout the 128-byte swizzle expects: 16-byte
 * piece p of token t at t * 128 + (p ^ (t % 8)) * 16). Same stages and arguments as
 * hc_mma_gemm; shared memory 1024 + HC_WGMMA_STAGES x round1024(16384 + 2 chunk_bytes). Each
 * tile's wgmma is waited for before the next is decoded; two blocks per SM overlap the two
 * (double-buffering A in registers cost the second block and lost: bench/NOTES.md v7). */
extern "C" __global__ void __launch_bounds__(256, 2)
    hc_wgmma_gemm(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,
                  const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y) {
#ifdef HC_WGMMA
    hc_u8 *smem = smem_1024();
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned g = lane >> 2, c = lane & 3;
    const unsigned wg = warp >> 2, rb = warp & 3;
    const hc_u64 cb = P_CB, stage_bytes = (16384 + 2 * cb + 1023) / 1024 * 1024;
    const hc_u64 nb0 = (hc_u64)blockIdx.x * 2, tok0 = (hc_u64)blockIdx.y * 128;
    const bool two = nb0 + 1 < p.tiles_n;
    const hc_u8 *wsrc = w + (expert * p.tiles_n + nb0) * p.tiles_k * cb;
    const hc_u64 sstride = p.tiles_k * cb;

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.0f;

    auto issue = [&](hc_u64 kb) {
        hc_u8 *st = smem + (kb % HC_WGMMA_STAGES) * stage_bytes;
        load_ktile<128, 256>(st, st + 16384, tid, x, tok0, m, p, kb, wsrc, sstride, cb, two);
    };
#pragma unroll
    for (int s = 0; s < HC_WGMMA_STAGES - 1; s++) {
        if ((hc_u64)s < p.tiles_k) issue(s);
        cp_commit();
    }
    const unsigned r0 = rb * 16 + g;
    for (hc_u64 kb = 0; kb < p.tiles_k; kb++) {
        cp_wait<HC_WGMMA_STAGES - 2>();
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads(); /* tile kb is here; every warp's wgmma of tile kb - 1 is done */
        if (kb + HC_WGMMA_STAGES - 1 < p.tiles_k) issue(kb + HC_WGMMA_STAGES - 1);
        cp_commit();
        const hc_u8 *st = smem + (kb % HC_WGMMA_STAGES) * stage_bytes;
        const hc_u8 *ch = st + 16384 + wg * cb;
        rb_codes v;
        load_codes(ch, rb, lane, v);
        unsigned a[4][4];
#pragma unroll
        for (int ks = 0; ks < 4; ks++) scaled_frag(ch, p, r0, (unsigned)ks >> P_LGS, words_of(v, ks), a[ks]);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int ks = 0; ks < 4; ks++) wgmma_m64n128k16(d, a[ks], b_desc(st + ks * 32));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    cp_wait<0>();
    if (wg == 0 || two) store_c<16>(d, y, (nb0 + wg) * 64 + r0, tok0, c, p, m);
#else
    (void)w, (void)p, (void)expert, (void)x, (void)m, (void)y;
    __trap(); /* the host launches this kernel on sm_90a only */
#endif
}

/* ================= large M on Hopper, warp-specialised (sm_90a) ================= */
#ifdef HC_WGMMA
/* d[128] += A (this warp's 16 of the warpgroup's 64 weight rows x k16, bf16 in registers) x B
 * (256 tokens x k16, shared memory, K-major rows of 128 bytes with the 128-byte swizzle). */
__device__ __forceinline__ void wgmma_m64n256k16(float *d, const unsigned *a, hc_u64 db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
                 : HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24), HC_D8(32), HC_D8(40), HC_D8(48), HC_D8(56), HC_D8(64), HC_D8(72), HC_D8(80), HC_D8(88), HC_D8(96), HC_D8(104), HC_D8(112), HC_D8(120)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
/* d[32] += A (registers) x B (64 tokens x k16, shared memory, as above) */
__device__ __forceinline__ void wgmma_m64n64k16(float *d, const unsigned *a, hc_u64 db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
                 : HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
/* wgmma m64 x TOKS x k16 with A in registers, for the warp-specialised kernels */
template <int TOKS> __device__ __forceinline__ void wgmma_rs(float *d, const unsigned *a, hc_u64 db);
template <> __device__ __forceinline__ void wgmma_rs<64>(float *d, const unsigned *a, hc_u64 db) {
    wgmma_m64n64k16(d, a, db);
}
template <> __device__ __forceinline__ void wgmma_rs<128>(float *d, const unsigned *a, hc_u64 db) {
    wgmma_m64n128k16(d, a, db);
}
template <> __device__ __forceinline__ void wgmma_rs<256>(float *d, const unsigned *a, hc_u64 db) {
    wgmma_m64n256k16(d, a, db);
}
__device__ __forceinline__ void mbar_init(unsigned a, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned a) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(a) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned a, unsigned parity) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
}
#endif

/* M > 128 on sm_90a (and 16 < M with HC_WGMMA_MID): a block computes 128 weight rows (stripes
 * 2 b and 2 b + 1) x TOKS tokens (256; 64 or 128 for hc_wgmma_gemm64 / 128) with one producer
 * warpgroup and two consumer warpgroups.
 * - Producer (one thread; the warpgroup's registers cut to 40): for each K tile, once its
 *   stage is empty, one TMA copy brings the TOKS x 64 activation tile (tmx: the host's tensor
 *   map of X, [m][ldx] bf16, box 64 x TOKS, 128-byte swizzle, zeros outside m x K) and one
 *   bulk copy per stripe its weight chunk; the stage's full barrier completes when the bytes
 *   land.
 * - Consumer warpgroup c (registers raised to 232) owns stripe 2 b + c: each warp decodes its
 *   16 rows of tile kb + 1 (scaled, rounded to bf16) into registers while the wgmma
 *   m64 x TOKS x k16 of tile kb run, A from those registers, B the activation tile; after tile
 *   kb's wgmma are issued it waits for tile kb - 1's and releases that stage (empty barrier).
 * Blocks walk the (stripe pair, token tile) grid in groups of 8 token tiles so that the
 * weights and activations of the blocks in flight stay in L2. Arguments of hc_wgmma_gemm plus
 * tmx; grid ((tiles_n + 1) / 2, ceil(m / TOKS)); shared memory 1024 + HC_WIDE_STAGES x
 * round1024(TOKS x 128 + 2 chunk_bytes). */
#ifndef HC_WIDE_STAGES
#define HC_WIDE_STAGES 5
#endif
#define HC_WIDE_GROUP 8
#ifndef HC_WGMMA_MID
#define HC_WGMMA_MID 1
#endif
/* a CUtensorMap, as the host encodes it (cuTensorMapEncodeTiled) */
struct __align__(64) hc_tmap {
    unsigned long long v[16];
};
#ifdef HC_WGMMA
template <int TOKS>
__device__ __forceinline__ void ws_gemm(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                        hc_u64 expert, hc_u64 m, hc_u16 *__restrict__ y,
                                        const hc_tmap &tmx) {
    constexpr unsigned XB = TOKS * 128; /* bytes of a stage's activation tile */
    __shared__ __align__(8) unsigned long long full[HC_WIDE_STAGES], empty[HC_WIDE_STAGES];
    hc_u8 *smem = smem_1024();
    const unsigned tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const hc_u64 cb = P_CB, stage_bytes = (XB + 2 * cb + 1023) / 1024 * 1024;
    /* block -> (stripe pair nt, token tile mt), token tiles fastest inside groups of 8 */
    const unsigned tn = gridDim.x, tm = gridDim.y, id = blockIdx.y * tn + blockIdx.x;
    const unsigned grp = id / (HC_WIDE_GROUP * tn), gm0 = grp * HC_WIDE_GROUP;
    const unsigned gm = tm - gm0 < HC_WIDE_GROUP ? tm - gm0 : HC_WIDE_GROUP;
    const unsigned within = id - grp * HC_WIDE_GROUP * tn;
    const hc_u64 nb0 = (hc_u64)(within / gm) * 2, tok0 = (hc_u64)(gm0 + within % gm) * TOKS;
    const bool two = nb0 + 1 < p.tiles_n;
    const hc_u64 tiles = p.tiles_k;
    if (tid == 0) {
        for (int s = 0; s < HC_WIDE_STAGES; s++) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp < 4) { /* ---- producer ---- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid != 0) return;
        const hc_u8 *wsrc = w + (expert * p.tiles_n + nb0) * tiles * cb;
        const hc_u64 sstride = tiles * cb;
        const unsigned tx = XB + (two ? 2u : 1u) * (unsigned)cb;
        const hc_u64 tmap = (hc_u64)&tmx;
        unsigned s = 0, ph = 0;
        for (hc_u64 kb = 0; kb < tiles; kb++) {
            if (kb >= HC_WIDE_STAGES) mbar_wait(smem_addr(&empty[s]), ph ^ 1);
            const unsigned st = smem_addr(smem + s * stage_bytes), fb = smem_addr(&full[s]);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(tx)
                         : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];" ::"r"(st),
                         "l"(tmap), "r"((unsigned)(kb * 64)), "r"((unsigned)tok0), "r"(fb)
                         : "memory");
            for (unsigned q = 0; q < (two ? 2u : 1u); q++)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                             " [%0], [%1], %2, [%3];" ::"r"(st + XB + q * (unsigned)cb),
                             "l"(wsrc + q * sstride + kb * cb), "r"((unsigned)cb), "r"(fb)
                             : "memory");
            if (++s == HC_WIDE_STAGES) s = 0, ph ^= 1;
        }
        return;
    }
    /* ---- consumers ---- */
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const unsigned wgc = (warp - 4) >> 2, wl = warp & 3, g = lane >> 2, c = lane & 3;
    const unsigned r0 = wl * 16 + g;
    float d[TOKS / 2];
#pragma unroll
    for (int i = 0; i < TOKS / 2; i++) d[i] = 0.0f;
    unsigned a0[4][4], a1[4][4];
    /* waits for tile kb in stage s (phase ph) and decodes this warp's A fragments into a */
    auto decode = [&](unsigned s, unsigned ph, unsigned (*a)[4]) {
        mbar_wait(smem_addr(&full[s]), ph);
        hc_u8 *ch = smem + s * stage_bytes + XB + wgc * cb;
#if HC_CODEC == 5 && HC_GEMV_MXS
        constexpr bool SH = true;
        { /* this warp's 16 rows' 32 group scales, one a lane, as bf16 over the records */
            hc_u8 *rw = ch + P_CODE_BYTES + (wl * 16 + (lane >> 1)) * 4;
            const unsigned rc = *(const unsigned *)rw;
            __syncwarp(); /* (the record's other lane has read it too) */
            *(hc_u16 *)(rw + (lane & 1) * 2) = (hc_u16)mxfold_bf16(rc, lane & 1);
            /* (ordered before the producer's next bulk copy into this stage, async proxy) */
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncwarp();
        }
#else
        constexpr bool SH = false;
#endif
        rb_codes v;
        load_codes(ch, wl, lane, v);
#pragma unroll
        for (int ks = 0; ks < 4; ks++)
            scaled_frag<SH>(ch, p, r0, (unsigned)ks >> P_LGS, words_of(v, ks), a[ks]);
    };
    /* issues tile kb's wgmma (stage s, A in a), then decodes tile kb + 1 into an (stage sn,
     * phase phn) and releases stage sp (tile kb - 1) once its wgmma are done */
    auto step = [&](hc_u64 kb, unsigned s, unsigned (*a)[4], unsigned (*an)[4], unsigned sn,
                    unsigned phn, unsigned sp) {
        const hc_u8 *st = smem + s * stage_bytes;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int ks = 0; ks < 4; ks++) wgmma_rs<TOKS>(d, a[ks], b_desc(st + ks * 32));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        if (kb > 0) {
            __syncwarp();
            if (lane == 0) mbar_arrive(smem_addr(&empty[sp]));
        }
        if (kb + 1 < tiles) decode(sn, phn, an);
    };
    if (tiles > 0) decode(0, 0, a0);
    unsigned s = 0, ph = 0, sp = HC_WIDE_STAGES - 1;
    for (hc_u64 kb = 0; kb < tiles; kb += 2) {
        unsigned s1 = s + 1 == HC_WIDE_STAGES ? 0 : s + 1, ph1 = s1 == 0 ? ph ^ 1 : ph;
        step(kb, s, a0, a1, s1, ph1, sp);
        if (kb + 1 >= tiles) break;
        unsigned s2 = s1 + 1 == HC_WIDE_STAGES ? 0 : s1 + 1, ph2 = s2 == 0 ? ph1 ^ 1 : ph1;
        step(kb + 1, s1, a1, a0, s2, ph2, s);
        sp = s1, s = s2, ph = ph2;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    /* epilogue through shared memory (the pipeline's stages are idle once both consumer
     * warpgroups are past their last wgmma; the producer has nothing in flight): the block's
     * TOKS tokens x 128 outputs as bf16 rows of 136 (conflict-free for the fragment layout),
     * then each token's 256 bytes written with 16-byte stores */
    asm volatile("bar.sync 1, 256;" ::: "memory");
    hc_u16 *out = (hc_u16 *)smem;
    const unsigned nl = wgc * 64 + r0;
    /* (a stripe past N has nothing to write; ptxas also needs the accumulator reads in a
     * block of their own: straight after the wait it serialises every wgmma, warning C7514) */
    if (wgc == 0 || two)
#pragma unroll
        for (int i = 0; i < TOKS / 8; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                out[(i * 8 + 2 * c + (e & 1)) * 136 + nl + (e >= 2 ? 8 : 0)] = bf16_of(d[i * 4 + e]);
    asm volatile("bar.sync 1, 256;" ::: "memory");
    const bool vec = (p.N & 7) == 0 && ((size_t)y & 15) == 0;
    for (unsigned q = tid - 128; q < TOKS * 16; q += 256) {
        const unsigned tl = q >> 4, pc = q & 15;
        const hc_u64 tok = tok0 + tl, n = nb0 * 64 + pc * 8;
        if (tok >= m || n >= p.N) continue;
        const hc_u16 *src = out + tl * 136 + pc * 8;
        if (vec) {
            *(uint4 *)(y + tok * p.N + n) = *(const uint4 *)src;
        } else {
            for (unsigned j = 0; j < 8 && n + j < p.N; j++) y[tok * p.N + n + j] = src[j];
        }
    }
}
#endif

#ifdef HC_WGMMA
#define HC_WS_BODY(toks) ws_gemm<toks>(w, p, expert, m, y, tmx)
#else
#define HC_WS_BODY(toks) \
    ((void)w, (void)p, (void)expert, (void)m, (void)y, (void)tmx, __trap()) /* sm_90a only */
#endif
/* the entry points, one per token tile */
#define HC_WS_KERNEL(name, toks)                                                               \
    extern "C" __global__ void __launch_bounds__(384, 1)                                       \
        name(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,                      \
             const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y,                   \
             const __grid_constant__ hc_tmap tmx) {                                            \
        (void)x;                                                                               \
        HC_WS_BODY(toks);                                                                      \
    }
HC_WS_KERNEL(hc_wgmma_gemm256, 256)
/* HC_WGMMA_MID (default 1; 0 drops them): the same kernel with 64- and 128-token tiles, for
 * 16 < M <= 128 and for layers with few stripes (more blocks) -- bench/NOTES.md v18 */
#if HC_WGMMA_MID
HC_WS_KERNEL(hc_wgmma_gemm64, 64)
HC_WS_KERNEL(hc_wgmma_gemm128, 128)
#endif
