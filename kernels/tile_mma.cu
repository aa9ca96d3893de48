// tile_mma.cu: the fast kernels over the tiled layouts (docs/layouts.md): bf16 activations in,
// bf16 out, float32 accumulation on the tensor cores (mma.sync m16n8k16, weights as the A
// operand, tokens as N). Compiled at run time by NVRTC once per codec, chosen by -DHC_CODEC
// (hc_mma_params in layout_core.h lists them); N, K, M, scale type, group and zero points are
// run-time arguments, so every shape of a model shares one module per codec.
//
// The codes are stored in A-fragment order, so a lane's 16-byte word of a tile holds exactly
// the eight codes it feeds to the tensor cores: no shuffles and no shared-memory transposes.
// Each pair of codes becomes a bf16x2 word with a few bit operations and one bf16x2 FMA; the
// value is exact (integers up to 255, E2M1 and E4M3 values are all bf16 numbers).
//
// hc_mma_gemv_t<8|16>: M <= 8 or 16 tokens, memory bound. A block takes one 64-row stripe;
//   each of its four warps streams whole tile chunks through its own shared-memory pipeline
//   (cp.async, HC_GEMV_STAGES deep) and accumulates exact codes per scale group, applying each
//   row's scale in float32 once per group. K is split over warps and over blocks
//   (gridDim.y); the blocks of a stripe write partial sums to a workspace and the last one to
//   finish adds them in a fixed order (deterministic results, no atomics on outputs).
// hc_mma_gemm: M > 16, matrix bound. A block of eight warps computes 128 weight rows x 128
//   tokens over all of K with a three-stage cp.async pipeline of (two chunks + a swizzled
//   128 x 64 activation tile); each weight is decoded, scaled in float32 and rounded once to
//   bf16 (as dequantize-then-GEMM would), activations go through ldmatrix.
#include "layout_core.h"

#ifndef HC_CODEC
#define HC_CODEC 1
#endif
#define HC_CODE_BITS ((HC_CODEC == 3 || HC_CODEC == 6) ? 8 : 4)
#define HC_GEMV_STAGES 4
#define HC_GEMM_STAGES 3

typedef unsigned short hc_u16;

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
/* 16 bytes global -> shared, bypassing L1; src_bytes 0 fills zeros */
__device__ __forceinline__ void cp16(void *dst, const void *src, unsigned src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

/* ---- one tile row's scale and zero point, from the chunk in shared memory ---- */
__device__ __forceinline__ float tile_scale(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                            unsigned j) {
#if HC_CODEC == 5
    const hc_u8 *rec = ch + p.code_bytes + r * 4; /* base exponent B, offsets d0, d1 */
    int e = rec[0] == 0xFF ? (int)rec[1 + j] : (int)rec[0] + (int)(signed char)rec[1 + j];
    if (e <= 0) return e == 0 ? __uint_as_float(0x00400000u) : 0.0f; /* 2^-127 */
    return e >= 255 ? __uint_as_float(0x7FC00000u) : __uint_as_float((unsigned)e << 23);
#else
    const hc_u8 *s = ch + p.code_bytes;
    unsigned i = r * p.S + j;
    float v;
    switch (p.scale_kind) {
    case 0: v = ((const float *)s)[i]; break;
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
#if HC_CODEC == 4
    if (p.global_div != 0.0f) v = v / p.global_div;
#endif
    return v;
#endif
}

__device__ __forceinline__ unsigned tile_zero(const hc_u8 *ch, const hc_mma_params &p, unsigned r,
                                              unsigned j) {
    return p.zeros ? ch[p.code_bytes + p.scale_bytes + r * p.S + j] : p.zero_const;
}

/* ---- codes -> exact bf16x2 pairs ----
 * Pair t (0..3) of a lane's fragment is A register t: (a2t, a2t+1), one row (g for t even,
 * g + 8 for t odd). 4-bit: w is the lane's word for one k16 step; nibbles of pair t sit at bit
 * 4t and 16 + 4t. 8-bit: w0 holds a0..a3, w1 a4..a7. zb: bf16x2 of -(128 + z) for the row. */
__device__ __forceinline__ unsigned exact_pair(unsigned w0, unsigned w1, int t, unsigned zb) {
#if HC_CODEC == 1
    (void)w1;
    unsigned q = ((w0 >> (4 * t)) & 0x000F000Fu) | 0x43004300u; /* 128 + u */
    return bf2_fma(q, 0x3F803F80u, zb);                          /* - (128 + z): exact */
#elif HC_CODEC == 2
    (void)w1, (void)zb;
    unsigned s = w0 >> (4 * t);
    unsigned m = bf2_fma((s & 0x00070007u) | 0x43004300u, 0x3F803F80u, 0xC300C300u);
    return m | ((s << 12) & 0x80008000u); /* bit 3 of each nibble is the sign */
#elif HC_CODEC == 4 || HC_CODEC == 5
    (void)w1, (void)zb;
    unsigned s = w0 >> (4 * t);
    unsigned mag = (s << 6) & 0x01C001C0u; /* e1 e0 m at bf16's exponent/mantissa seam */
    return bf2_fma(mag, 0x7E807E80u, 0x80008000u) | ((s << 12) & 0x80008000u); /* x 2^126 */
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

/* ================= small M ================= */
template <int TOK>
__device__ __forceinline__ void gemv_body(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                          hc_u64 expert, const hc_u16 *__restrict__ x, hc_u64 m,
                                          hc_u16 *__restrict__ y, float *__restrict__ ws,
                                          unsigned *__restrict__ cnt) {
    constexpr int MT = TOK / 8;
    extern __shared__ __align__(128) hc_u8 hc_smem[];
    hc_u8 *smem = hc_smem;
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned g = lane >> 2, c = lane & 3;
    const hc_u64 nb = blockIdx.x, cb = p.chunk_bytes;
    const hc_u8 *stripe = w + (expert * p.tiles_n + nb) * p.tiles_k * cb;
    hc_u8 *mine = smem + (hc_u64)warp * HC_GEMV_STAGES * cb;
    const hc_u64 step = 4ull * gridDim.y, kb0 = blockIdx.y * 4ull + warp;
    const long nt = kb0 < p.tiles_k ? (long)((p.tiles_k - kb0 + step - 1) / step) : 0;
    const unsigned pieces = (unsigned)(cb / 16);
    const unsigned gmask = (1u << p.lgs) - 1;

    float acc[4][MT][4], part[4][MT][4];
#pragma unroll
    for (int rb = 0; rb < 4; rb++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[rb][mt][e] = part[rb][mt][e] = 0.0f;

    auto issue = [&](long i) {
        const hc_u8 *src = stripe + (kb0 + (hc_u64)i * step) * cb;
        hc_u8 *dst = mine + (hc_u64)(i % HC_GEMV_STAGES) * cb;
        for (unsigned q = lane; q < pieces; q += 32) cp16(dst + q * 16, src + q * 16, 16);
    };
#pragma unroll
    for (int s = 0; s < HC_GEMV_STAGES - 1; s++) {
        if (s < nt) issue(s);
        cp_commit();
    }
    for (long i = 0; i < nt; i++) {
        __syncwarp(); /* every lane is done with the stage about to be refilled */
        if (i + HC_GEMV_STAGES - 1 < nt) issue(i + HC_GEMV_STAGES - 1);
        cp_commit();
        /* the activations of this tile (B fragments), loaded while the codes arrive */
        const hc_u64 k0 = (kb0 + (hc_u64)i * step) * 64 + 2 * c;
        unsigned b[4][MT][2];
#pragma unroll
        for (int ks = 0; ks < 4; ks++)
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                hc_u64 tok = mt * 8 + g, k = k0 + ks * 16;
                const unsigned *xr = (const unsigned *)(x + tok * p.ldx);
                bool live = tok < m;
                b[ks][mt][0] = live && k < p.K ? __ldg(xr + k / 2) : 0u;
                b[ks][mt][1] = live && k + 8 < p.K ? __ldg(xr + (k + 8) / 2) : 0u;
            }
        cp_wait<HC_GEMV_STAGES - 1>();
        __syncwarp();
        const hc_u8 *ch = mine + (hc_u64)(i % HC_GEMV_STAGES) * cb;
        rb_codes v[4];
#pragma unroll
        for (int rb = 0; rb < 4; rb++) load_codes(ch, rb, lane, v[rb]);
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            const unsigned j = (unsigned)ks >> p.lgs;
#pragma unroll
            for (int rb = 0; rb < 4; rb++) {
                unsigned z0 = 0, z1 = 0;
#if HC_HAS_ZERO
                z0 = zero_operand(tile_zero(ch, p, rb * 16 + g, j));
                z1 = zero_operand(tile_zero(ch, p, rb * 16 + g + 8, j));
#endif
                frag_words f = words_of(v[rb], ks);
                unsigned a[4];
#pragma unroll
                for (int t = 0; t < 4; t++) a[t] = exact_pair(f.w0, f.w1, t, t & 1 ? z1 : z0);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) mma_bf16(part[rb][mt], a, b[ks][mt][0], b[ks][mt][1]);
            }
            if ((((unsigned)ks + 1) & gmask) == 0) { /* end of a scale group */
#pragma unroll
                for (int rb = 0; rb < 4; rb++) {
                    float s0 = tile_scale(ch, p, rb * 16 + g, j);
                    float s1 = tile_scale(ch, p, rb * 16 + g + 8, j);
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        acc[rb][mt][0] = fmaf(part[rb][mt][0], s0, acc[rb][mt][0]);
                        acc[rb][mt][1] = fmaf(part[rb][mt][1], s0, acc[rb][mt][1]);
                        acc[rb][mt][2] = fmaf(part[rb][mt][2], s1, acc[rb][mt][2]);
                        acc[rb][mt][3] = fmaf(part[rb][mt][3], s1, acc[rb][mt][3]);
#pragma unroll
                        for (int e = 0; e < 4; e++) part[rb][mt][e] = 0.0f;
                    }
                }
            }
        }
    }
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
    for (unsigned idx = threadIdx.x; idx < 64 * TOK; idx += blockDim.x) {
        unsigned row = idx / TOK, tok = idx % TOK;
        float s = red[row * TOK + tok] + red[(64 + row) * TOK + tok] +
                  red[(128 + row) * TOK + tok] + red[(192 + row) * TOK + tok];
        hc_u64 n = nb * 64 + row;
        if (split) ws[((hc_u64)blockIdx.y * p.tiles_n + nb) * 64 * TOK + idx] = s;
        else if (n < p.N && tok < m) y[tok * p.N + n] = bf16_of(s);
    }
    if (!split) return;
    /* the last block of this stripe to finish adds the partial sums, in block order */
    __shared__ unsigned last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&cnt[nb], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (unsigned idx = threadIdx.x; idx < 64 * TOK; idx += blockDim.x) {
        unsigned row = idx / TOK, tok = idx % TOK;
        hc_u64 n = nb * 64 + row;
        if (n >= p.N || tok >= m) continue;
        float s = 0.0f;
        for (unsigned yb = 0; yb < gridDim.y; yb++)
            s += __ldcg(&ws[((hc_u64)yb * p.tiles_n + nb) * 64 * TOK + idx]);
        y[tok * p.N + n] = bf16_of(s);
    }
    if (threadIdx.x == 0) cnt[nb] = 0; /* ready for the next launch */
}

extern "C" __global__ void __launch_bounds__(128)
    hc_mma_gemv_t8(const hc_u8 *w, hc_mma_params p, hc_u64 expert, const hc_u16 *x, hc_u64 m,
                   hc_u16 *y, float *ws, unsigned *cnt) {
    gemv_body<8>(w, p, expert, x, m, y, ws, cnt);
}
extern "C" __global__ void __launch_bounds__(128)
    hc_mma_gemv_t16(const hc_u8 *w, hc_mma_params p, hc_u64 expert, const hc_u16 *x, hc_u64 m,
                    hc_u16 *y, float *ws, unsigned *cnt) {
    gemv_body<16>(w, p, expert, x, m, y, ws, cnt);
}

/* ================= large M ================= */
/* x: [m][ldx] bf16 with K % 8 == 0, ldx % 8 == 0 and 16-byte alignment (the host gathers
 * otherwise). Dynamic shared memory: HC_GEMM_STAGES x (2 chunk_bytes + 16384). */
extern "C" __global__ void __launch_bounds__(256)
    hc_mma_gemm(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,
                const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y) {
    extern __shared__ __align__(128) hc_u8 hc_smem[];
    hc_u8 *smem = hc_smem;
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned g = lane >> 2, c = lane & 3;
    const unsigned wr = warp & 3, wc = warp >> 2; /* 32-row quarter, 64-token half */
    const hc_u64 cb = p.chunk_bytes, stage_bytes = 2 * cb + 16384;
    const hc_u64 nb0 = (hc_u64)blockIdx.x * 2, tok0 = (hc_u64)blockIdx.y * 128;
    const bool two = nb0 + 1 < p.tiles_n;
    const unsigned cpieces = (unsigned)(cb / 16);
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
        for (unsigned q = tid; q < 2 * cpieces; q += 256) {
            unsigned s = q >= cpieces;
            if (s && !two) continue;
            unsigned qq = q - s * cpieces;
            cp16(st + s * cb + qq * 16, wsrc + s * sstride + kb * cb + qq * 16, 16);
        }
        hc_u8 *xs = st + 2 * cb;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            unsigned q = tid + i * 256, t = q >> 3, pc = q & 7;
            hc_u64 tok = tok0 + t, k = kb * 64 + pc * 8;
            bool ok = tok < m && k < p.K;
            const hc_u16 *src = ok ? x + tok * p.ldx + k : x;
            cp16(xs + t * 128 + ((pc ^ (t & 7)) * 16), src, ok ? 16 : 0);
        }
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
            const unsigned j = (unsigned)ks >> p.lgs;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const unsigned r0 = ((wr & 1) * 2 + i) * 16 + g;
                float s0 = tile_scale(ch, p, r0, j), s1 = tile_scale(ch, p, r0 + 8, j);
                unsigned z0 = 0, z1 = 0;
#if HC_HAS_ZERO
                z0 = zero_operand(tile_zero(ch, p, r0, j));
                z1 = zero_operand(tile_zero(ch, p, r0 + 8, j));
#endif
                frag_words f = words_of(v[i], ks);
                unsigned a[4];
#pragma unroll
                for (int t = 0; t < 4; t++) {
                    unsigned e = exact_pair(f.w0, f.w1, t, t & 1 ? z1 : z0);
                    float s = t & 1 ? s1 : s0;
                    a[t] = bf2_pack(__uint_as_float(e << 16) * s, __uint_as_float(e & 0xFFFF0000u) * s);
                }
#pragma unroll
                for (int mt = 0; mt < 8; mt++) mma_bf16(acc[i][mt], a, b[mt][0], b[mt][1]);
            }
        }
    }
    cp_wait<0>();
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int mt = 0; mt < 8; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                hc_u64 n = (nb0 + (wr >> 1)) * 64 + ((wr & 1) * 2 + i) * 16 + g + (e >= 2 ? 8 : 0);
                hc_u64 tok = tok0 + wc * 64 + mt * 8 + 2 * c + (e & 1);
                if (n < p.N && tok < m) y[tok * p.N + n] = bf16_of(acc[i][mt][e]);
            }
}
