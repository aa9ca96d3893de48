/* tile_synth.h: containers holding one random tiled layer of any layout (docs/layouts.md), for
 * the GPU tests and benchmarks: random codes, random but finite scales of the layout's scale
 * type, random zero points, padded rows with scale 0 and padded columns with code 0 (as the
 * converter writes them), optionally several experts and an act-order permutation. */
#ifndef HC_TILE_SYNTH_H
#define HC_TILE_SYNTH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container_write.h"
#include "layout.h"

typedef struct {
    const char *label;
    hc_tile_kind kind;
    unsigned code_bits;
    bool sign_magnitude, zeros;
    hc_dtype scale_dtype; /* ignored for mxfold */
    uint64_t g;           /* layout group along K */
    double global_div;    /* NVFP4, else 0 */
    bool divides;         /* fp8: w = e4m3 / s (layout version 2) */
    bool wide;            /* mxfold: group scales up to 2^12 (far past what a real checkpoint
                           * holds); else at most 2^0, as a real checkpoint's */
} synth_spec;

static uint64_t synth_rng(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* A scale of the given type, positive, in about [2^-7, 2^-5), as stored bytes. */
static void synth_scale(hc_dtype dt, uint64_t *rng, uint8_t *out) {
    uint64_t r = synth_rng(rng);
    switch (dt) {
    case HC_DT_F32: {
        float f = (float)(1.0 + (double)(r % 1000) / 1000.0) / 128.0f;
        memcpy(out, &f, 4);
        break;
    }
    case HC_DT_BF16: out[0] = (uint8_t)r, out[1] = 0x3C; break;                 /* ~2^-7 */
    case HC_DT_F16: out[0] = (uint8_t)r, out[1] = (uint8_t)(0x20 | (r >> 8 & 3)); break; /* ~2^-7 */
    case HC_DT_F8_E4M3: out[0] = (uint8_t)(0x20 + r % 24); break;                /* 2^-3..2^0 */
    default: out[0] = (uint8_t)(118 + r % 8); break;                              /* E8M0 */
    }
}

/* Stored scale bytes as a number, written apart from contract/layout_core.h (the reference must
 * not share the code it checks). */
static double synth_scale_value(hc_dtype dt, const uint8_t *b) {
    switch (dt) {
    case HC_DT_F32: {
        float f;
        memcpy(&f, b, 4);
        return f;
    }
    case HC_DT_BF16: {
        uint32_t u = (uint32_t)(b[0] | b[1] << 8) << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case HC_DT_F16: {
        unsigned h = b[0] | b[1] << 8, e = h >> 10 & 31, m = h & 1023;
        double v = e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
        return h & 0x8000 ? -v : v;
    }
    case HC_DT_F8_E4M3: {
        unsigned e = b[0] >> 3 & 15, m = b[0] & 7;
        double v = e ? ldexp(8 + m, (int)e - 10) : ldexp(m, -9);
        return b[0] & 0x80 ? -v : v;
    }
    default: return ldexp(1.0, (int)b[0] - 127); /* E8M0 */
    }
}

/* The value of code u with scale s and zero point z under spec sp (independent formulas). */
static double synth_value(const synth_spec *sp, unsigned u, double s, unsigned z) {
    static const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    switch (sp->kind) {
    case HC_TL_INT:
        if (sp->sign_magnitude) return (u & 8 ? -(double)(u & 7) : (double)(u & 7)) * s;
        return ((double)u - (double)z) * s;
    case HC_TL_FP4:
    case HC_TL_MXFOLD: return (u & 8 ? -e2m1[u & 7] : e2m1[u & 7]) * s;
    default: { /* E4M3 */
        unsigned e = u >> 3 & 15, m = u & 7;
        double v = e ? ldexp(8 + m, (int)e - 10) : ldexp(m, -9);
        return (u & 0x80 ? -v : v) * s;
    }
    }
}

/* One generated layer: its tiled tensor NAME and, with a permutation, NAME.perm (t[0..n-1]); the
 * caller frees data, perm and lp (synth_layer_free) after writing. */
typedef struct {
    hc_cw_tensor t[2];
    unsigned n;
    char name[2][256];
    uint8_t *data;
    int32_t *perm;
    cJSON *lp;
} synth_layer;

static void synth_layer_free(synth_layer *L) {
    cJSON_Delete(L->lp);
    free(L->data), free(L->perm);
    memset(L, 0, sizeof *L);
}

/* Layer NAME of spec s, [E, N, K], with a random permutation when perm (drawn from perm_seed
 * when it is not 0, so that two layers can share one; else from the data's generator). With ref
 * non-NULL, also the weights as float64 [E][N][K] in source column order, computed from the
 * codes, scales and zero points as they are generated (not read back through the layout). */
static int synth_layer_make(synth_layer *L, const char *name, const synth_spec *s, uint64_t E,
                            uint64_t N, uint64_t K, bool perm, uint64_t perm_seed, uint64_t seed,
                            double *ref, char *msg, size_t msg_len) {
    memset(L, 0, sizeof *L);
    hc_tile_params p = {.kind = s->kind, .code_bits = s->code_bits,
                        .src_bits = s->kind == HC_TL_INT ? s->code_bits : s->code_bits,
                        .E = E, .N = N, .K = K, .Np = (N + 63) / 64 * 64,
                        .Kp = (K + 63) / 64 * 64, .g = s->g,
                        .scale_dtype = s->kind == HC_TL_MXFOLD ? HC_DT_U8 : s->scale_dtype,
                        .zeros = s->zeros, .zero_const = s->code_bits == 4 ? 8 : 128,
                        .global_div = s->global_div, .perm = perm,
                        .sign_magnitude = s->sign_magnitude, .scale_divides = s->divides};
    if (!hc__tile_geometry(&p)) {
        snprintf(msg, msg_len, "%s: bad geometry", s->label);
        return -1;
    }
    uint64_t bytes = hc__tile_bytes_of(&p), rng = seed * 0x9e3779b97f4a7c15ull + 1;
    uint64_t prng = perm_seed ? perm_seed * 0x2545F4914F6CDD1Dull + 7 : 0;
    uint8_t *d = calloc(1, bytes);
    int32_t *pm = perm ? malloc(K * 4) : NULL;
    if (!d || (perm && !pm)) {
        free(d), free(pm);
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    if (pm) { /* a random permutation of 0..K-1 */
        for (uint64_t i = 0; i < K; i++) pm[i] = (int32_t)i;
        for (uint64_t i = K - 1; i > 0; i--) {
            uint64_t j = synth_rng(perm_seed ? &prng : &rng) % (i + 1);
            int32_t t = pm[i];
            pm[i] = pm[j], pm[j] = t;
        }
    }
    for (uint64_t e = 0; e < E; e++)
        for (uint64_t nb = 0; nb < p.tiles_n; nb++)
            for (uint64_t kb = 0; kb < p.tiles_k; kb++) {
                uint8_t *ch = d + hc__tile_offset(&p, e, nb, kb);
                for (unsigned r = 0; r < 64; r++)
                    for (unsigned c = 0; c < 64; c++) {
                        if (nb * 64 + r >= N || kb * 64 + c >= K) continue; /* padding: 0 */
                        unsigned u = (unsigned)synth_rng(&rng) & (s->code_bits == 4 ? 15 : 255);
                        if (s->kind == HC_TL_FP8 && (u & 0x7F) == 0x7F) u--; /* not NaN */
                        hc_u64 b;
                        unsigned sh;
                        hc__core_code_pos(s->code_bits, r, c, &b, &sh);
                        ch[b] |= (uint8_t)(u << sh);
                    }
                for (unsigned r = 0; r < 64 && nb * 64 + r < N; r++) {
                    if (s->kind == HC_TL_MXFOLD) {
                        uint8_t *rec = ch + p.code_bytes + r * 4;
                        uint64_t x = synth_rng(&rng);
                        const unsigned lo = s->wide ? 124 : 112; /* exponents up to lo + 15 */
                        if (x % 8 == 0) { /* an unfolded row-tile: raw E8M0 exponents */
                            rec[0] = HC_MXFOLD_UNFOLDED, rec[1] = (uint8_t)(lo + 6 + x / 8 % 10);
                            rec[2] = (uint8_t)(lo + 6 + x / 128 % 10);
                        } else { /* base and offsets in -8..6: always exact */
                            rec[0] = (uint8_t)(lo + x / 8 % 10);
                            rec[1] = (uint8_t)(int8_t)((int)(x / 128 % 15) - 8);
                            rec[2] = (uint8_t)(int8_t)((int)(x / 4096 % 15) - 8);
                        }
                        continue;
                    }
                    unsigned ss = hc_dtype_bits(p.scale_dtype) / 8;
                    for (unsigned j = 0; j < p.S; j++) {
                        synth_scale(p.scale_dtype, &rng, ch + p.code_bytes + (r * p.S + j) * ss);
                        if (p.zeros)
                            ch[p.code_bytes + p.scale_bytes + r * p.S + j] =
                                (uint8_t)(synth_rng(&rng) & (s->code_bits == 4 ? 15 : 255));
                    }
                }
                for (unsigned r = 0; ref && r < 64 && nb * 64 + r < N; r++)
                    for (unsigned c = 0; c < 64 && kb * 64 + c < K; c++) {
                        hc_u64 b;
                        unsigned sh, j = p.S > 1 ? c / (unsigned)p.g : 0;
                        hc__core_code_pos(s->code_bits, r, c, &b, &sh);
                        unsigned u = s->code_bits == 4 ? (ch[b] >> sh) & 15u : ch[b];
                        double sc;
                        unsigned z = (unsigned)p.zero_const;
                        if (s->kind == HC_TL_MXFOLD) {
                            const uint8_t *rec = ch + p.code_bytes + r * 4;
                            int ex = rec[0] == HC_MXFOLD_UNFOLDED ? rec[1 + j]
                                                                 : rec[0] + (int8_t)rec[1 + j];
                            sc = ldexp(1.0, ex - 127);
                        } else {
                            unsigned ss = hc_dtype_bits(p.scale_dtype) / 8;
                            sc = synth_scale_value(p.scale_dtype,
                                                   ch + p.code_bytes + (r * p.S + j) * ss);
                            if (s->global_div != 0) sc /= s->global_div;
                            if (p.zeros) z = ch[p.code_bytes + p.scale_bytes + r * p.S + j];
                        }
                        uint64_t kk = kb * 64 + c, col = pm ? (uint64_t)pm[kk] : kk;
                        ref[(e * N + nb * 64 + r) * K + col] =
                            s->divides ? synth_value(s, u, 1.0, z) / sc : synth_value(s, u, sc, z);
                    }
            }
    snprintf(L->name[0], sizeof L->name[0], "%s", name);
    snprintf(L->name[1], sizeof L->name[1], "%s.perm", name);
    L->lp = hc__tile_params_json(&p);
    L->data = d, L->perm = pm;
    L->t[0] = (hc_cw_tensor){.name = L->name[0], .dtype = HC_DT_U8, .ndim = 4,
                             .shape = {E, p.tiles_n, p.tiles_k, p.chunk_bytes},
                             .padded_shape = {E, p.tiles_n, p.tiles_k, p.chunk_bytes},
                             .layout = hc__layout_by_kind(s->kind)->id,
                             .layout_version = hc__tile_layout_version(&p), .data = d,
                             .size = bytes, .layout_params = L->lp};
    L->t[1] = (hc_cw_tensor){.name = L->name[1], .dtype = HC_DT_I32, .ndim = 1, .shape = {K},
                             .padded_shape = {K}, .layout = "source", .data = pm, .size = K * 4};
    L->n = perm ? 2 : 1;
    return 0;
}

/* Writes `path`: layer "w" of spec s, [E, N, K] (synth_layer_make). */
static inline int synth_container(const char *path, const synth_spec *s, uint64_t E, uint64_t N,
                           uint64_t K, bool perm, uint64_t seed, double *ref, char *msg,
                           size_t msg_len) {
    synth_layer L;
    if (synth_layer_make(&L, "w", s, E, N, K, perm, 0, seed, ref, msg, msg_len)) return -1;
    hc_cw_options o = {.source_format = "synthetic", .target = "tiles", .tp_size = 1};
    hc_err err = {0};
    hc_status st = hc__container_write(path, L.t, L.n, &o, &err);
    if (st) snprintf(msg, msg_len, "%s: write: %s", s->label, err.msg);
    synth_layer_free(&L);
    return st ? -1 : 0;
}

/* The layouts the converter writes, one spec each (with the scale types and groups seen). */
static const synth_spec synth_specs[] = {
    {"int4 g128 bf16 sym", HC_TL_INT, 4, false, false, HC_DT_BF16, 128, 0, false, false},
    {"int4 g32 f16 zero points", HC_TL_INT, 4, false, true, HC_DT_F16, 32, 0, false, false},
    {"int4 g64 f32 sign-magnitude", HC_TL_INT, 4, true, false, HC_DT_F32, 64, 0, false, false},
    {"int8 g16 f32 zero points", HC_TL_INT, 8, false, true, HC_DT_F32, 16, 0, false, false},
    {"int8 channel bf16", HC_TL_INT, 8, false, false, HC_DT_BF16, 64, 0, false, false},
    {"nvfp4 g16 e4m3 global", HC_TL_FP4, 4, false, false, HC_DT_F8_E4M3, 16, 448.0 * 6.0, false,
     false},
    {"mxfp4 g32 e8m0 (fallback)", HC_TL_FP4, 4, false, false, HC_DT_F8_E8M0, 32, 0, false, false},
    {"mxfp4 folded", HC_TL_MXFOLD, 4, false, false, HC_DT_U8, 32, 0, false, false},
    {"fp8 block128 f32", HC_TL_FP8, 8, false, false, HC_DT_F32, 128, 0, false, false},
    {"fp8 channel bf16", HC_TL_FP8, 8, false, false, HC_DT_BF16, 64, 0, false, false},
    {"fp8 block128 f32 divisors", HC_TL_FP8, 8, false, false, HC_DT_F32, 128, 0, true, false},
    {"mxfp4 folded wide scales", HC_TL_MXFOLD, 4, false, false, HC_DT_U8, 32, 0, false, true},
};
#define SYNTH_SPECS (sizeof synth_specs / sizeof synth_specs[0])

#endif
