/* tiles.c: the tile packer. Every scale is stored in its source type (converted only where
 * the conversion is exact and checked), so the layouts are lossless; MXFP4 group exponents
 * are folded into an E4M3 conversion relative to a per-row, per-tile base exponent. */
#include "tiles.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"

/* E8M0 byte of a power of two, or -1. */
static int e8m0_of(double s) {
    int e;
    double m = frexp(s, &e); /* s = m 2^e, m in [0.5, 1) */
    if (!(s > 0) || m != 0.5) return -1;
    int b = e - 1 + 127;
    return b >= 0 && b <= 254 ? b : -1;
}


/* Act-order: columns sorted by group (stable), so each group is contiguous; possible when
 * every group but the last has exactly gk members in order. */
static bool plan_perm(const hc_qtensor *q, hc_tile_plan *pl) {
    uint64_t K = q->K;
    int32_t *perm = malloc(K * sizeof *perm);
    uint64_t *count = calloc(q->sk ? q->sk : 1, sizeof *count);
    if (!perm || !count) {
        free(perm), free(count);
        snprintf(pl->reason, sizeof pl->reason, "out of memory");
        return false;
    }
    for (uint64_t k = 0; k < K; k++) count[q->g_idx[k]]++;
    bool ok = true;
    for (uint64_t g = 0; g < q->sk && ok; g++)
        ok = count[g] == (g + 1 < q->sk ? q->gk : K - g * q->gk);
    uint64_t *start = count; /* reuse as running write positions */
    for (uint64_t g = 0; ok && g < q->sk; g++) start[g] = g * q->gk;
    for (uint64_t k = 0; ok && k < K; k++) perm[start[q->g_idx[k]]++] = (int32_t)k;
    free(count);
    if (!ok) {
        free(perm);
        snprintf(pl->reason, sizeof pl->reason, "act-order groups are not all of %llu columns, "
                 "so no column order makes them contiguous", (unsigned long long)q->gk);
        return false;
    }
    pl->perm = perm;
    return true;
}

uint64_t hc__tile_group_k(uint64_t sk, uint64_t gk) {
    if (sk == 1) return HC_TILE_K;
    return gk % HC_TILE_K == 0 ? gk : hc__gcd_u64(gk, HC_TILE_K);
}

bool hc__tile_plan_make(const hc_qtensor *q, hc_tile_plan *pl) {
    memset(pl, 0, sizeof *pl);
    hc_tile_params *p = &pl->p;
    p->E = q->E, p->N = q->N, p->K = q->K;
    if (!hc__round_up_u64(q->N, HC_TILE_N, &p->Np) || !hc__round_up_u64(q->K, HC_TILE_K, &p->Kp)) {
        snprintf(pl->reason, sizeof pl->reason, "N or K overflows when padded to whole tiles");
        return false; /* not reached: shapes are JSON integers below 2^53 */
    }
    p->scale_dtype = q->scale_dtype;
    p->global_div = q->global_div;
    switch (q->kind) {
    case HC_Q_INT:
        p->kind = HC_TL_INT;
        p->src_bits = (unsigned)q->bits;
        p->code_bits = q->bits <= 4 ? 4 : 8;
        p->zeros = q->zeros != NULL;
        p->zero_const = q->zero_const;
        if (q->zeros) {
            uint64_t n = q->E * q->sn * q->sk;
            bool uniform = true;
            for (uint64_t i = 0; i < n; i++) {
                if (q->zeros[i] < 0 || q->zeros[i] > 255) {
                    snprintf(pl->reason, sizeof pl->reason, "a zero point (%d) does not fit a "
                             "byte", q->zeros[i]);
                    return false;
                }
                /* (the GPU takes 4-bit codes off 128 + z in one exact bf16 FMA: z <= 127,
                 * contract/layout.h hc__gpu_zero_fits; a 4-bit code's zero point past 15 is
                 * already outside its range, which validate warns of) */
                if (!hc__gpu_zero_fits(p->code_bits, q->zeros[i])) {
                    snprintf(pl->reason, sizeof pl->reason, "a zero point (%d) of 4-bit codes "
                             "is above 127, past what the GPU decode takes exactly",
                             q->zeros[i]);
                    return false;
                }
                uniform &= q->zeros[i] == q->zeros[0];
            }
            if (uniform && n) { /* symmetric in all but name (GPTQ sym): one constant */
                p->zeros = false;
                p->zero_const = q->zeros[0];
            }
        }
        /* symmetric int4 without the code -8: sign and magnitude, which E4M3 (the FP8
         * activation path) and bf16 both take with a few bit operations */
        if (q->bits <= 4 && !p->zeros && p->zero_const == 1 << (q->bits - 1))
            p->sign_magnitude = q->bits < 4 || q->code_min >= 1; /* no -8 to represent */
        break;
    case HC_Q_FP4: {
        p->src_bits = p->code_bits = 4;
        bool pow2 = true;
        for (uint64_t i = 0; i < q->E * q->sn * q->sk && pow2; i++) pow2 = e8m0_of(q->scales[i]) >= 0;
        if (q->gk == 32 && q->global_div == 0 && pow2) {
            p->kind = HC_TL_MXFOLD;
            p->scale_dtype = HC_DT_U8;
        } else {
            p->kind = HC_TL_FP4;
            if (q->scale_dtype != HC_DT_F8_E4M3 && !(q->scale_dtype == HC_DT_F8_E8M0 && pow2))
                p->scale_dtype = HC_DT_F32; /* e.g. E8M0 x 4 (0.13.x): exact in float */
        }
        break;
    }
    case HC_Q_FP8_E4M3:
        p->kind = HC_TL_FP8;
        p->src_bits = p->code_bits = 8;
        /* GPTQModel's inverse scales: kept as stored (their reciprocals are not exact), the
         * layout divides (version 2); F16 / BF16 divisors widen to F32 exactly */
        p->scale_divides = q->scale_divides;
        if (!hc__tile_scales_fit(q)) {
            snprintf(pl->reason, sizeof pl->reason, "F64 fp8 divisors do not fit the layout's "
                     "F32 exactly (the source layout is kept)");
            return false;
        }
        if (p->scale_divides) p->scale_dtype = HC_DT_F32;
        break;
    default:
        snprintf(pl->reason, sizeof pl->reason, "%s weights have no tiled layout",
                 q->kind == HC_Q_PLAIN ? "unquantized" : "e5m2");
        return false;
    }
    if (p->kind != HC_TL_MXFOLD && hc__scale_kind(p->scale_dtype, p->scale_divides) == HC_SK_NONE)
        p->scale_dtype = HC_DT_F32; /* widened exactly (e.g. F64 scales that fit) */
    /* the layout's group: whole tiles when the source group is a multiple of the tile width
     * (or there is one scale per row), else the largest divisor of both (scales repeated) */
    if (q->g_idx && q->E == 1) {
        if (!plan_perm(q, pl)) return false;
        p->perm = true;
    } else if (q->g_idx) {
        snprintf(pl->reason, sizeof pl->reason, "act-order in fused experts is not supported");
        return false;
    }
    p->g = hc__tile_group_k(q->sk, q->gk);
    if (p->kind == HC_TL_MXFOLD && p->g != 32) p->kind = HC_TL_FP4, p->scale_dtype = HC_DT_F8_E8M0;
    if (!hc__tile_geometry(p)) {
        snprintf(pl->reason, sizeof pl->reason, "tile geometry overflows");
        return false;
    }
    return true;
}

void hc__tile_plan_free(hc_tile_plan *pl) {
    free(pl->perm);
    pl->perm = NULL;
}

/* Writes v in dtype dt at dst, exactly (checked by decoding it back). */
static bool put_scale(double v, hc_dtype dt, uint8_t *dst) {
    double back = NAN;
    switch (dt) {
    case HC_DT_F32: {
        float f = (float)v;
        memcpy(dst, &f, 4);
        back = f;
        break;
    }
    case HC_DT_BF16: { /* exact when the float's low 16 bits are zero (checked inline) */
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        dst[0] = (uint8_t)(u >> 16), dst[1] = (uint8_t)(u >> 24);
        return ((double)f == v || v != v) && (u & 0xFFFFu) == 0;
    }
    case HC_DT_F16: {
        /* the 65536 half values: find v's by construction (exact inputs only) */
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint32_t sign = (u >> 16) & 0x8000u;
        int e = (int)((u >> 23) & 0xFF) - 127 + 15;
        uint32_t m = u & 0x7FFFFF;
        uint16_t h;
        if (f == 0) h = (uint16_t)sign;
        else if (e >= 1 && e <= 30) h = (uint16_t)(sign | (uint32_t)e << 10 | m >> 13);
        else if (e < 1 && e >= -10) h = (uint16_t)(sign | ((m | 0x800000u) >> (14 - e)));
        else h = (uint16_t)(sign | 0x7C00u); /* inf or out of range: caught below */
        memcpy(dst, &h, 2);
        hc__read_scalar(dst, dt, 0, &back);
        break;
    }
    case HC_DT_F8_E4M3: {
        if (v != v) {
            dst[0] = 0x7F;
            return true;
        }
        unsigned sgn = signbit(v) ? 0x80u : 0u;
        double a = fabs(v);
        int e;
        double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1): 1.f x 2^(e-1), E = e + 6 */
        int E = e + 6;
        double mant = a == 0 ? 0 : E >= 1 ? (m * 2 - 1) * 8 : a * 512; /* subnormal: q 2^-9 */
        if (a == 0) E = 0;
        if (E > 15 || mant != floor(mant) || mant > 7 || (E == 15 && mant == 7)) return false;
        dst[0] = (uint8_t)(sgn | (unsigned)(E >= 1 ? E : 0) << 3 | (unsigned)mant);
        hc__read_scalar(dst, dt, 0, &back);
        break;
    }
    case HC_DT_F8_E8M0: {
        int b = e8m0_of(v);
        if (b < 0) return false;
        dst[0] = (uint8_t)b;
        return true;
    }
    default: return false;
    }
    return back == v || (v != v && back != back);
}

void hc__mxfold_row(const uint8_t e[2], const uint8_t codes[64], uint8_t rec[4]) {
    /* the largest offset a group can take: 6 x 2^6 = 384 <= 448, smaller maxima allow more */
    static const int dmax[8] = {99, 9, 8, 8, 7, 7, 6, 6}; /* by the largest |code| (index) */
    int maxm[2] = {0, 0};
    for (int c = 0; c < 64; c++) {
        int m = codes[c] & 7;
        if (m > maxm[c / 32]) maxm[c / 32] = m;
    }
    int base = -1000;
    for (int g = 0; g < 2; g++)
        if (maxm[g] && e[g] - dmax[maxm[g]] > base) base = e[g] - dmax[maxm[g]];
    if (base == -1000) base = 127; /* all zero */
    if (base < 0) base = 0;
    bool ok = base <= 254;
    for (int c = 0; ok && c < 64; c++) {
        uint8_t b;
        int d = maxm[c / 32] ? e[c / 32] - base : 0;
        ok = d >= -128 && d <= 127 && hc__e4m3_of_fp4(codes[c], d, &b);
    }
    if (ok) {
        rec[0] = (uint8_t)base;
        for (int g = 0; g < 2; g++) rec[1 + g] = (uint8_t)(int8_t)(maxm[g] ? e[g] - base : 0);
    } else {
        rec[0] = HC_MXFOLD_UNFOLDED;
        rec[1] = e[0], rec[2] = e[1];
    }
    rec[3] = 0;
}

/* Writes a tile's codes in fragment order (docs/layouts.md), walking the destination: for
 * each lane's word (4-bit) or 8-byte half-vector (8-bit), the registers a0..a7 come from
 * rows lane/4 (+8) and columns 2 (lane%4) (+1, +8). Same order as hc__tile_code_pos. */
static void emit_codes(unsigned bits, const uint8_t *tc, uint64_t stride, uint8_t *chunk) {
    for (unsigned rb = 0; rb < 4; rb++)
        for (unsigned lane = 0; lane < 32; lane++)
            for (unsigned kb = 0; kb < 4; kb++) {
                uint32_t w = 0;
                uint8_t b8[8];
                for (unsigned a = 0; a < 8; a++) {
                    unsigned r = rb * 16 + lane / 4 + ((a >> 1) & 1) * 8;
                    unsigned c = kb * 16 + (lane % 4) * 2 + (a & 1) + ((a >> 2) & 1) * 8;
                    if (bits == 4) w |= (uint32_t)tc[r * stride + c] << (4 * ((a % 2) * 4 + a / 2));
                    else b8[a] = tc[r * stride + c];
                }
                if (bits == 4) {
                    uint8_t *d = chunk + (rb * 32 + lane) * 16 + kb * 4;
                    d[0] = (uint8_t)w, d[1] = (uint8_t)(w >> 8), d[2] = (uint8_t)(w >> 16),
                    d[3] = (uint8_t)(w >> 24);
                } else {
                    unsigned v = rb * 2 + kb / 2;
                    memcpy(chunk + (v * 32 + lane) * 16 + (kb % 2) * 8, b8, 8);
                }
            }
}

/* 4-bit fragments from a stripe of natural-order nibbles (two codes a byte): the four bytes
 * (r, c..c+1), (r+8, c..), (r, c+8..), (r+8, c+8..) hold a0 a1 / a2 a3 / a4 a5 / a6 a7, so the
 * word is their low nibbles side by side, then their high nibbles. */
static void emit_nibbles_scalar(const uint8_t *nib, uint64_t stride, uint64_t col0, uint8_t *chunk) {
    for (unsigned rb = 0; rb < 4; rb++)
        for (unsigned lane = 0; lane < 32; lane++) {
            const uint8_t *r0 = nib + (rb * 16 + lane / 4) * stride, *r8 = r0 + 8 * stride;
            for (unsigned kb = 0; kb < 4; kb++) {
                uint64_t c = (col0 + kb * 16 + (lane % 4) * 2) / 2;
                uint32_t x = (uint32_t)r0[c] | (uint32_t)r8[c] << 8 | (uint32_t)r0[c + 4] << 16 |
                             (uint32_t)r8[c + 4] << 24;
                uint32_t lo = x & 0x0F0F0F0Fu, hi = (x >> 4) & 0x0F0F0F0Fu;
                lo = (lo | lo >> 4) & 0x00FF00FFu, lo = (lo | lo >> 8) & 0xFFFFu;
                hi = (hi | hi >> 4) & 0x00FF00FFu, hi = (hi | hi >> 8) & 0xFFFFu;
                uint32_t w = lo | hi << 16;
                uint8_t *d = chunk + (rb * 32 + lane) * 16 + kb * 4;
                d[0] = (uint8_t)w, d[1] = (uint8_t)(w >> 8), d[2] = (uint8_t)(w >> 16),
                d[3] = (uint8_t)(w >> 24);
            }
        }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The same with byte shuffles. For one row pair (r, r+8) -- the four lanes 4t..4t+3 -- let
 * L = low nibbles of row r | low nibbles of row r+8 << 4, H likewise with the high nibbles
 * (32 bytes each for the tile's 64 columns). Lane m's 16 bytes are, for k16 steps 0..3 at
 * i = m + 8 kb: L[i], L[i+4], H[i], H[i+4]: four shuffles and three ORs per lane. */
__attribute__((target("ssse3"))) static void emit_nibbles_ssse3(const uint8_t *nib,
                                                                uint64_t stride, uint64_t col0,
                                                                uint8_t *chunk) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m128i sl[4], sh[4]; /* per lane m: shuffle indices into a 16-byte half (two k16 steps) */
    for (int m = 0; m < 4; m++) {
        int8_t il[16], ih[16];
        for (int j = 0; j < 16; j++) il[j] = ih[j] = (int8_t)0x80;
        for (int kb = 0; kb < 2; kb++) {
            int i = m + 8 * kb;
            il[kb * 4 + 0] = (int8_t)i, il[kb * 4 + 1] = (int8_t)(i + 4);
            ih[kb * 4 + 2] = (int8_t)i, ih[kb * 4 + 3] = (int8_t)(i + 4);
        }
        sl[m] = _mm_loadu_si128((const __m128i *)il);
        sh[m] = _mm_loadu_si128((const __m128i *)ih);
    }
    for (unsigned rb = 0; rb < 4; rb++)
        for (unsigned t = 0; t < 8; t++) {
            const uint8_t *r0 = nib + (rb * 16 + t) * stride + col0 / 2, *r8 = r0 + 8 * stride;
            __m128i L[2], H[2];
            for (int h = 0; h < 2; h++) {
                __m128i a = _mm_loadu_si128((const __m128i *)(r0 + 16 * h));
                __m128i b = _mm_loadu_si128((const __m128i *)(r8 + 16 * h));
                L[h] = _mm_or_si128(_mm_and_si128(a, m4), _mm_slli_epi16(_mm_and_si128(b, m4), 4));
                H[h] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), m4),
                                    _mm_andnot_si128(m4, b));
            }
            for (unsigned m = 0; m < 4; m++) {
                __m128i lo = _mm_or_si128(_mm_shuffle_epi8(L[0], sl[m]), _mm_shuffle_epi8(H[0], sh[m]));
                __m128i hi = _mm_or_si128(_mm_shuffle_epi8(L[1], sl[m]), _mm_shuffle_epi8(H[1], sh[m]));
                __m128i v = _mm_unpacklo_epi64(lo, hi);
                _mm_storeu_si128((__m128i *)(chunk + (rb * 32 + t * 4 + m) * 16), v);
            }
        }
}
#endif

/* The shuffle version where the processor has SSSE3, else the portable one (same bytes:
 * tests/t_layout.c compares them). */
static void emit_nibbles(const uint8_t *nib, uint64_t stride, uint64_t col0, uint8_t *chunk) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("ssse3")) {
        emit_nibbles_ssse3(nib, stride, col0, chunk);
        return;
    }
#endif
    emit_nibbles_scalar(nib, stride, col0, chunk);
}

/* Exposed for the tests: both emitters on one stripe. */
void hc__emit_nibbles_both(const uint8_t *nib, uint64_t stride, uint8_t *scalar, uint8_t *fast) {
    emit_nibbles_scalar(nib, stride, 0, scalar);
    emit_nibbles(nib, stride, 0, fast);
}

/* Fills a stripe (64 rows) from the source's natural-order codes: nibbles for 4-bit codes
 * (row of Kp/2 bytes), bytes for 8-bit (Kp), zero beyond N and K; sign-magnitude through a
 * byte table. */
static void stripe_from_packed(const hc_qtensor *q, const hc_tile_params *p, uint64_t e,
                               uint64_t nb, uint8_t *stripe) {
    uint64_t row = p->code_bits == 4 ? p->Kp / 2 : p->Kp;
    uint64_t used = p->code_bits == 4 ? (q->K + 1) / 2 : q->K;
    uint8_t lut[256];
    for (unsigned b = 0; b < 256 && (p->sign_magnitude || q->packed_xor); b++) {
        unsigned lo = b & 15, hi = b >> 4;
        if (p->sign_magnitude) {
            int vl = (int)lo - p->zero_const, vh = (int)hi - p->zero_const;
            lo = vl < 0 ? 8u | (unsigned)-vl : (unsigned)vl;
            hi = vh < 0 ? 8u | (unsigned)-vh : (unsigned)vh;
        }
        lut[b] = p->code_bits == 4 ? (uint8_t)(lo | hi << 4) : (uint8_t)(b ^ q->packed_xor);
    }
    bool identity = !p->sign_magnitude && !q->packed_xor;
    for (unsigned r = 0; r < HC_TILE_N; r++) {
        uint8_t *dst = stripe + r * row;
        if (nb * HC_TILE_N + r >= q->N) {
            memset(dst, 0, (size_t)row);
            continue;
        }
        uint64_t n = nb * HC_TILE_N + r;
        if (q->packed_col_stride) { /* GPTQ: gather the row's words down the columns */
            const uint8_t *base = q->packed + n * 4;
            for (uint64_t j = 0; j < used / 4; j++) {
                const uint8_t *w = base + j * q->packed_col_stride * 4;
                uint8_t *o = dst + 4 * j;
                if (identity) memcpy(o, w, 4);
                else o[0] = lut[w[0]], o[1] = lut[w[1]], o[2] = lut[w[2]], o[3] = lut[w[3]];
            }
        } else {
            const uint8_t *src = q->packed + (e * q->N + n) * q->packed_row_bytes;
            if (identity) memcpy(dst, src, (size_t)used);
            else
                for (uint64_t i = 0; i < used; i++) dst[i] = lut[src[i]];
        }
        memset(dst + used, 0, (size_t)(row - used));
        if (p->code_bits == 4 && q->K % 2) dst[used - 1] &= 0x0F; /* the odd last column */
    }
}

hc_status hc__tile_pack(const hc_qtensor *q, const hc_tile_plan *pl, uint8_t *out,
                       hc_tile_stats *st, hc_err *err) {
    const hc_tile_params *p = &pl->p;
    /* natural-order source codes are repacked without unpacking them (the fast path) */
    bool direct = !q->codes && q->packed && !pl->perm;
    if (!q->codes && !direct) return hc__fail(err, HC_INTERNAL, "tile pack needs decoded codes");
    unsigned ss = p->kind == HC_TL_MXFOLD ? 0 : hc_dtype_bits(p->scale_dtype) / 8;
    /* the source group of each (tile column block, scale column): no division per scale;
     * -1 marks padding columns */
    int64_t *grp_of = malloc(p->tiles_k * p->S * sizeof *grp_of);
    if (!grp_of) return hc__fail(err, HC_NOMEM, "out of memory");
    for (uint64_t kb = 0; kb < p->tiles_k; kb++)
        for (unsigned j = 0; j < p->S; j++) {
            uint64_t kp = kb * HC_TILE_K + j * (p->g < HC_TILE_K ? p->g : HC_TILE_K);
            grp_of[kb * p->S + j] = kp >= q->K ? -1 : q->sk == 1 ? 0 : (int64_t)(kp / q->gk);
        }
    /* one row stripe (64 rows x Kp codes) at a time: the source rows are read in order */
    uint8_t *stripe = malloc((size_t)(HC_TILE_N * p->Kp));
    uint8_t *rowbuf = malloc(HC_TILE_K);
    if (!stripe || !rowbuf) {
        free(stripe), free(rowbuf), free(grp_of);
        return hc__fail(err, HC_NOMEM, "out of memory for a tile stripe");
    }
    uint64_t nstride = p->code_bits == 4 ? p->Kp / 2 : p->Kp; /* stripe row, direct path */
    for (uint64_t e = 0; e < p->E; e++)
        for (uint64_t nb = 0; nb < p->tiles_n; nb++) {
            if (direct) stripe_from_packed(q, p, e, nb, stripe);
            else memset(stripe, 0, (size_t)(HC_TILE_N * p->Kp));
            for (unsigned r = 0; !direct && r < HC_TILE_N && nb * HC_TILE_N + r < q->N; r++) {
                const uint8_t *src = q->codes + (e * q->N + nb * HC_TILE_N + r) * q->K;
                uint8_t *dst = stripe + (uint64_t)r * p->Kp;
                if (!pl->perm && !p->sign_magnitude) {
                    memcpy(dst, src, (size_t)q->K);
                    continue;
                }
                for (uint64_t kp = 0; kp < q->K; kp++) {
                    unsigned u = src[pl->perm ? (uint64_t)pl->perm[kp] : kp];
                    if (p->sign_magnitude) {
                        int v = (int)u - p->zero_const;
                        u = v < 0 ? 8u | (unsigned)-v : (unsigned)v;
                    }
                    dst[kp] = (uint8_t)u;
                }
            }
            for (uint64_t kb = 0; kb < p->tiles_k; kb++) { /* the codes of every tile */
                uint8_t *chunk = out + hc__tile_offset(p, e, nb, kb);
                /* codes are all written below; scales, zero points and padding start at 0 */
                memset(chunk + p->code_bytes, 0, (size_t)(p->chunk_bytes - p->code_bytes));
                if (direct && p->code_bits == 4) emit_nibbles(stripe, nstride, kb * HC_TILE_K, chunk);
                else emit_codes(p->code_bits, stripe + kb * HC_TILE_K, p->Kp, chunk);
                if (st) st->tiles++;
            }
            /* then the scales, row by row, so each row's scales are read in order */
            for (unsigned r = 0; r < HC_TILE_N; r++) {
                uint64_t n = nb * HC_TILE_N + r;
                if (n >= q->N) break; /* padding rows: scale 0, zero 0 */
                const double *srow = q->scales + (e * q->sn + n / q->gn) * q->sk;
                const int32_t *zrow = q->zeros ? q->zeros + (e * q->sn + n / q->gn) * q->sk : NULL;
                for (uint64_t kb = 0; kb < p->tiles_k; kb++) {
                    uint8_t *chunk = out + hc__tile_offset(p, e, nb, kb);
                    uint8_t *sc = chunk + p->code_bytes, *zp = sc + p->scale_bytes;
                    if (p->kind == HC_TL_MXFOLD) {
                        const uint8_t *rowcodes = stripe + (uint64_t)r * p->Kp + kb * HC_TILE_K;
                        if (direct) { /* the fold reads the row's codes */
                            const uint8_t *nr = stripe + r * nstride + kb * HC_TILE_K / 2;
                            for (unsigned c = 0; c < HC_TILE_K; c++)
                                rowbuf[c] = c % 2 ? nr[c / 2] >> 4 : nr[c / 2] & 15;
                            rowcodes = rowbuf;
                        }
                        uint8_t ex[2] = {127, 127};
                        for (unsigned j = 0; j < 2; j++) {
                            uint64_t kp = kb * HC_TILE_K + j * 32;
                            if (kp < q->K) ex[j] = (uint8_t)e8m0_of(srow[kp / 32]);
                        }
                        hc__mxfold_row(ex, rowcodes, sc + (uint64_t)r * 4);
                        if (sc[(uint64_t)r * 4] == HC_MXFOLD_UNFOLDED && st) st->mx_unfolded++;
                        continue;
                    }
                    for (unsigned j = 0; j < p->S; j++) {
                        int64_t grp = grp_of[kb * p->S + j]; /* groups are contiguous here */
                        if (grp < 0) break; /* padding columns: scale 0, zero 0 */
                        if (!put_scale(srow[grp], p->scale_dtype, sc + ((uint64_t)r * p->S + j) * ss)) {
                            free(stripe), free(rowbuf), free(grp_of);
                            return hc__fail(err, HC_INTERNAL, "scale %g is not exact as %s",
                                           srow[grp], hc_dtype_name(p->scale_dtype));
                        }
                        if (p->zeros) zp[r * p->S + j] = (uint8_t)zrow[grp];
                    }
                }
            }
        }
    free(stripe), free(rowbuf), free(grp_of);
    return HC_OK;
}
