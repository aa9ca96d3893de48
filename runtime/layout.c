/* layout.c: tile geometry, element addressing and decoding of the tiled layouts
 * (docs/layouts.md). The CPU executor and `dequant` of a container read weights through
 * these functions; the repackers write with hc_tile_code_pos. */
#include "layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"
#include "jsonutil.h"

static const char *const kind_names[] = {NULL, "int", "fp4", "mxfold", "fp8"};

static unsigned scale_size(const hc_tile_params *p) {
    return p->kind == HC_TL_MXFOLD ? 0 : hc_dtype_bits(p->scale_dtype) / 8;
}

bool hc_tile_geometry(hc_tile_params *p) {
    if (p->code_bits != 4 && p->code_bits != 8) return false;
    if (p->g == 0 || (p->g < HC_TILE_K ? HC_TILE_K % p->g : p->g % HC_TILE_K)) return false;
    p->S = p->g >= HC_TILE_K ? 1 : (unsigned)(HC_TILE_K / p->g);
    if (p->Np % HC_TILE_N || p->Kp % HC_TILE_K || p->Np < p->N || p->Kp < p->K || p->E == 0)
        return false;
    p->tiles_n = p->Np / HC_TILE_N;
    p->tiles_k = p->Kp / HC_TILE_K;
    p->code_bytes = (uint64_t)HC_TILE_N * HC_TILE_K * p->code_bits / 8;
    if (p->kind == HC_TL_MXFOLD) {
        if (p->S != 2) return false;
        p->scale_bytes = HC_TILE_N * 4; /* per row: base exponent, two group offsets, pad */
    } else {
        unsigned ss = scale_size(p);
        if (ss == 0) return false;
        p->scale_bytes = (uint64_t)HC_TILE_N * p->S * ss;
    }
    p->zero_bytes = p->zeros ? (uint64_t)HC_TILE_N * p->S : 0;
    uint64_t raw = p->code_bytes + p->scale_bytes + p->zero_bytes;
    p->chunk_bytes = (raw + HC_TILE_ALIGN - 1) / HC_TILE_ALIGN * HC_TILE_ALIGN;
    uint64_t t;
    return hc_mul_u64(p->E, p->tiles_n, &t) && hc_mul_u64(t, p->tiles_k, &t) &&
           hc_mul_u64(t, p->chunk_bytes, &t) && t < (1ull << 53);
}

cJSON *hc_tile_params_json(const hc_tile_params *p) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "kind", kind_names[p->kind]);
    cJSON_AddNumberToObject(j, "code_bits", p->code_bits);
    cJSON_AddNumberToObject(j, "src_bits", p->src_bits);
    cJSON_AddNumberToObject(j, "experts", (double)p->E);
    cJSON_AddNumberToObject(j, "n", (double)p->N);
    cJSON_AddNumberToObject(j, "k", (double)p->K);
    cJSON_AddNumberToObject(j, "n_padded", (double)p->Np);
    cJSON_AddNumberToObject(j, "k_padded", (double)p->Kp);
    cJSON_AddNumberToObject(j, "group_k", (double)p->g);
    cJSON_AddStringToObject(j, "scale_dtype", hc_dtype_name(p->scale_dtype));
    cJSON_AddBoolToObject(j, "zero_points", p->zeros);
    cJSON_AddNumberToObject(j, "zero_const", p->zero_const);
    if (p->global_div != 0) {
        char hex[64];
        snprintf(hex, sizeof hex, "%a", p->global_div); /* exact */
        cJSON_AddStringToObject(j, "global_div", hex);
    } else {
        cJSON_AddNullToObject(j, "global_div");
    }
    cJSON_AddBoolToObject(j, "perm", p->perm);
    cJSON_AddBoolToObject(j, "sign_magnitude", p->sign_magnitude);
    cJSON_AddNumberToObject(j, "chunk_bytes", (double)p->chunk_bytes);
    return j;
}

hc_status hc_tile_params_parse(const cJSON *j, const char *layout, hc_tile_params *p,
                               const char *name, hc_err *err) {
    memset(p, 0, sizeof *p);
#define BAD(what) return hc_fail(err, HC_INVALID, "tensor '%s': layout_params: %s", name, what)
    if (!cJSON_IsObject(j)) BAD("missing");
    const char *k = hc_json_str(j, "kind");
    for (int i = 1; k && i <= 4; i++)
        if (!strcmp(k, kind_names[i])) p->kind = (hc_tile_kind)i;
    const char *want = p->kind == HC_TL_INT ? HC_LAYOUT_INT : p->kind == HC_TL_FP4 ? HC_LAYOUT_FP4
                       : p->kind == HC_TL_MXFOLD ? HC_LAYOUT_MXFOLD : HC_LAYOUT_FP8;
    if (!p->kind || strcmp(layout, want)) BAD("kind does not match the layout id");
    uint64_t v[9];
    static const char *const keys[9] = {"code_bits", "src_bits", "experts", "n", "k",
                                        "n_padded", "k_padded", "group_k", "chunk_bytes"};
    for (int i = 0; i < 9; i++)
        if (!hc_json_u64(cJSON_GetObjectItemCaseSensitive(j, keys[i]), &v[i])) BAD(keys[i]);
    p->code_bits = (unsigned)(v[0] <= 8 ? v[0] : 0);
    p->src_bits = (unsigned)(v[1] <= 8 ? v[1] : 0);
    p->E = v[2], p->N = v[3], p->K = v[4], p->Np = v[5], p->Kp = v[6], p->g = v[7];
    const char *sd = hc_json_str(j, "scale_dtype");
    p->scale_dtype = sd ? hc_dtype_from_name(sd) : HC_DTYPE_INVALID;
    p->zeros = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "zero_points"));
    uint64_t zc;
    if (!hc_json_u64(cJSON_GetObjectItemCaseSensitive(j, "zero_const"), &zc) || zc > 255)
        BAD("zero_const");
    p->zero_const = (int)zc;
    const char *gd = hc_json_str(j, "global_div");
    if (gd) {
        char *end;
        p->global_div = strtod(gd, &end);
        if (*end || !isfinite(p->global_div) || p->global_div <= 0) BAD("global_div");
    }
    p->perm = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "perm"));
    p->sign_magnitude = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "sign_magnitude"));
    if (p->sign_magnitude && (p->kind != HC_TL_INT || p->code_bits != 4 || p->zeros))
        BAD("sign_magnitude applies to 4-bit integer codes without zero points");
    if (!p->src_bits || (p->kind == HC_TL_INT && p->src_bits > p->code_bits)) BAD("src_bits");
    if (p->kind != HC_TL_MXFOLD && !scale_size(p)) BAD("scale_dtype");
    if (!hc_tile_geometry(p)) BAD("dimensions, group or code width are inconsistent");
    if (p->chunk_bytes != v[8]) BAD("chunk_bytes");
    return HC_OK;
#undef BAD
}

void hc_tile_code_pos(unsigned code_bits, unsigned r, unsigned c, uint64_t *byte,
                      unsigned *shift) {
    unsigned rb = r / 16, kb = c / 16, i = r % 16, j = c % 16;
    unsigned lane = (i % 8) * 4 + (j % 8) / 2;
    unsigned a = (j >= 8 ? 4u : 0u) + (i >= 8 ? 2u : 0u) + (j % 2); /* register a0..a7 */
    if (code_bits == 4) {
        /* one u32 per (lane, k16 step): a0 a2 a4 a6 in the low half-word's nibbles, a1 a3 a5
         * a7 in the high one, so (x >> 4i) & 0x000F000F yields the pair (a2i, a2i+1) */
        unsigned nib = (a % 2) * 4 + a / 2;
        *byte = ((uint64_t)rb * 32 + lane) * 16 + kb * 4 + nib / 2;
        *shift = (nib % 2) * 4;
    } else {
        unsigned v = rb * 2 + kb / 2;
        *byte = ((uint64_t)v * 32 + lane) * 16 + (kb % 2) * 8 + a;
        *shift = 0;
    }
}

double hc_tile_scale(const hc_tile_params *p, const uint8_t *chunk, unsigned r, unsigned j) {
    const uint8_t *s = chunk + p->code_bytes;
    double v = 0;
    if (p->scale_dtype == HC_DT_F8_E8M0) return hc_e8m0(s[r * p->S + j]);
    hc_read_scalar(s, p->scale_dtype, (uint64_t)r * p->S + j, &v);
    return v;
}

int hc_tile_zero(const hc_tile_params *p, const uint8_t *chunk, unsigned r, unsigned j) {
    if (!p->zeros) return p->zero_const;
    return chunk[p->code_bytes + p->scale_bytes + r * p->S + j];
}

bool hc_e4m3_of_fp4(unsigned u, int d, uint8_t *out) {
    static const int ex[8] = {0, -1, 0, 0, 1, 1, 2, 2}; /* |v| = (1 + f/2) 2^ex */
    static const int fr[8] = {0, 0, 0, 1, 0, 1, 0, 1};
    unsigned m = u & 7, s = (u & 8) << 4;
    if (m == 0) {
        *out = (uint8_t)s;
        return true;
    }
    int e = ex[m] + d + 7; /* biased exponent */
    if (e >= 1) {           /* normal; the mantissa is 000 or 100, never the NaN 111 */
        if (e > 15) return false;
        *out = (uint8_t)(s | (unsigned)e << 3 | (fr[m] ? 4u : 0u));
        return true;
    }
    /* subnormal: value = q x 2^-9 with q = (2 + f) x 2^(e + 1), an integer in 1..7 */
    int p2 = e + 1;
    unsigned q;
    if (p2 >= 0) q = (2u + (unsigned)fr[m]) << p2;
    else if (p2 == -1 && !fr[m]) q = 1;
    else return false;
    if (q > 7) return false;
    *out = (uint8_t)(s | q);
    return true;
}

double hc_tile_value(const hc_tile_params *p, const uint8_t *chunk, unsigned r, unsigned c) {
    unsigned u = hc_tile_code(p, chunk, r, c);
    unsigned j = p->S > 1 ? c / (unsigned)p->g : 0;
    switch (p->kind) {
    case HC_TL_INT:
        if (p->sign_magnitude) {
            double q = (double)(u & 7);
            return (u & 8 ? -q : q) * hc_tile_scale(p, chunk, r, j);
        }
        return ((double)u - (double)hc_tile_zero(p, chunk, r, j)) * hc_tile_scale(p, chunk, r, j);
    case HC_TL_FP4: {
        double s = hc_tile_scale(p, chunk, r, j);
        return p->global_div != 0 ? hc_fp4_e2m1(u) * (s / p->global_div) : hc_fp4_e2m1(u) * s;
    }
    case HC_TL_FP8: return hc_fp8_e4m3(u) * hc_tile_scale(p, chunk, r, j);
    case HC_TL_MXFOLD: {
        const uint8_t *rec = chunk + p->code_bytes + (uint64_t)r * 4;
        if (rec[0] == HC_MXFOLD_UNFOLDED) return hc_fp4_e2m1(u) * hc_e8m0(rec[1 + j]);
        uint8_t b;
        if (!hc_e4m3_of_fp4(u, (int8_t)rec[1 + j], &b)) return NAN;
        return hc_fp8_e4m3(b) * ldexp(1.0, (int)rec[0] - 127);
    }
    }
    return NAN;
}

void hc_tile_decode_stripe(const hc_tile_params *p, const uint8_t *tensor, uint64_t e,
                           uint64_t nb, float *out) {
    for (uint64_t kb = 0; kb < p->tiles_k; kb++) {
        const uint8_t *chunk = tensor + hc_tile_offset(p, e, nb, kb);
        for (unsigned r = 0; r < HC_TILE_N; r++)
            for (unsigned c = 0; c < HC_TILE_K; c++)
                out[r * p->Kp + kb * HC_TILE_K + c] = (float)hc_tile_value(p, chunk, r, c);
    }
}
