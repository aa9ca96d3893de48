/* layout.c: tile geometry, element addressing and decoding of the tiled layouts
 * (docs/layouts.md). The CPU executor and `dequant` of a container read weights through
 * these functions; the repackers write with hc__tile_code_pos. */
#include "layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"
#include "jsonutil.h"
#include "layout_core.h"

/* Bytes of a scale entry: 0 for mxfold (its records are not scales) and for a dtype that is
 * not a scale type of the layouts. */
static unsigned scale_size(const hc_tile_params *p) {
    return p->kind == HC_TL_MXFOLD ? 0
                                   : hc__scale_kind_bytes(hc__scale_kind(p->scale_dtype,
                                                                       p->scale_divides));
}

bool hc__tile_geometry(hc_tile_params *p) {
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
        p->scale_bytes = HC_TILE_N * HC_MXFOLD_RECORD_BYTES; /* a record per row */
    } else {
        unsigned ss = scale_size(p);
        if (ss == 0) return false;
        p->scale_bytes = (uint64_t)HC_TILE_N * p->S * ss;
    }
    p->zero_bytes = p->zeros ? (uint64_t)HC_TILE_N * p->S : 0;
    uint64_t raw = p->code_bytes + p->scale_bytes + p->zero_bytes;
    p->chunk_bytes = (raw + HC_TILE_ALIGN - 1) / HC_TILE_ALIGN * HC_TILE_ALIGN;
    uint64_t t;
    return hc__mul_u64(p->E, p->tiles_n, &t) && hc__mul_u64(t, p->tiles_k, &t) &&
           hc__mul_u64(t, p->chunk_bytes, &t) && t < (1ull << 53);
}

hc_gpu_rule hc__tile_gpu_rule(const hc_tile_params *p) {
    const hc_layout_row *row = hc__layout_row_of(p->kind, p->code_bits, p->sign_magnitude);
    if (!row || !(row->families & HC_KF_ALL)) return HC_GPU_NO_CODEC;
    if (p->S > 4) return HC_GPU_SMALL_GROUPS;
    if (p->K >= HC_GPU_K_LIMIT) return HC_GPU_WIDE_K;
    if (row->codec == HC_CODEC_FP4 && p->global_div != 0 &&
        hc__scale_kind(p->scale_dtype, p->scale_divides) != HC_SK_E4M3)
        return HC_GPU_FP4_DIVISOR;
    if (p->kind == HC_TL_INT && !p->sign_magnitude && !p->zeros &&
        !hc__gpu_zero_fits(p->code_bits, p->zero_const))
        return HC_GPU_ZERO_RANGE;
    return HC_GPU_RUNS;
}

hc_gpu_rule hc__tile_gpu_rule_zeros(const hc_tile_params *p, const uint8_t *data, uint64_t len,
                                    hc_tile_zero_at *at) {
    if (p->kind != HC_TL_INT || p->sign_magnitude || !p->zeros || p->code_bits != 4 ||
        p->chunk_bytes < p->code_bytes + p->scale_bytes + p->zero_bytes)
        return HC_GPU_RUNS;
    const uint64_t n = len / p->chunk_bytes; /* (whole chunks only: the bytes past are not read) */
    for (uint64_t c = 0; c < n; c++) {
        const uint8_t *z = data + c * p->chunk_bytes + p->code_bytes + p->scale_bytes;
        for (uint64_t i = 0; i < p->zero_bytes; i++)
            if (!hc__gpu_zero_fits(p->code_bits, z[i])) {
                *at = (hc_tile_zero_at){c, (unsigned)(i / p->S), (unsigned)(i % p->S), z[i]};
                return HC_GPU_ZERO_RANGE;
            }
    }
    return HC_GPU_RUNS;
}

cJSON *hc__tile_params_json(const hc_tile_params *p) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "kind", hc__layout_by_kind(p->kind)->params_kind);
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
    if (p->scale_divides) cJSON_AddTrueToObject(j, "scale_divides"); /* version 2 */
    cJSON_AddNumberToObject(j, "chunk_bytes", (double)p->chunk_bytes);
    return j;
}

hc_status hc__tile_params_parse(const cJSON *j, const char *layout, hc_tile_params *p,
                               const char *name, hc_err *err) {
    memset(p, 0, sizeof *p);
#define BAD(what) return hc__fail(err, HC_INVALID, "tensor '%s': layout_params: %s", name, what)
    if (!cJSON_IsObject(j)) BAD("missing");
    const hc_layout_row *row = hc__layout_by_params_kind(hc__json_str(j, "kind"));
    if (!row || strcmp(layout, row->id)) BAD("kind does not match the layout id");
    p->kind = row->kind;
    uint64_t v[9];
    static const char *const keys[9] = {"code_bits", "src_bits", "experts", "n", "k",
                                        "n_padded", "k_padded", "group_k", "chunk_bytes"};
    for (int i = 0; i < 9; i++)
        if (!hc__json_u64(cJSON_GetObjectItemCaseSensitive(j, keys[i]), &v[i])) BAD(keys[i]);
    p->code_bits = (unsigned)(v[0] <= 8 ? v[0] : 0);
    p->src_bits = (unsigned)(v[1] <= 8 ? v[1] : 0);
    p->E = v[2], p->N = v[3], p->K = v[4], p->Np = v[5], p->Kp = v[6], p->g = v[7];
    const char *sd = hc__json_str(j, "scale_dtype");
    p->scale_dtype = sd ? hc_dtype_from_name(sd) : HC_DTYPE_INVALID;
    p->zeros = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "zero_points"));
    uint64_t zc;
    if (!hc__json_u64(cJSON_GetObjectItemCaseSensitive(j, "zero_const"), &zc) || zc > 255)
        BAD("zero_const");
    p->zero_const = (int)zc;
    const char *gd = hc__json_str(j, "global_div");
    if (gd) {
        char *end;
        p->global_div = strtod(gd, &end);
        if (*end || !isfinite(p->global_div) || p->global_div <= 0) BAD("global_div");
    }
    p->perm = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "perm"));
    p->sign_magnitude = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "sign_magnitude"));
    if (p->sign_magnitude && (p->kind != HC_TL_INT || p->code_bits != 4 || p->zeros))
        BAD("sign_magnitude applies to 4-bit integer codes without zero points");
    p->scale_divides = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "scale_divides"));
    if (p->scale_divides && (p->kind != HC_TL_FP8 || p->scale_dtype != HC_DT_F32))
        BAD("scale_divides applies to fp8 codes with F32 scales");
    if (!hc__layout_row_of(p->kind, p->code_bits, p->sign_magnitude))
        BAD("code_bits: no codec of the layout stores codes of that width");
    if (!p->src_bits || (p->kind == HC_TL_INT && p->src_bits > p->code_bits)) BAD("src_bits");
    if (p->kind != HC_TL_MXFOLD && !scale_size(p)) BAD("scale_dtype");
    if (!hc__tile_geometry(p)) BAD("dimensions, group or code width are inconsistent");
    if (p->chunk_bytes != v[8]) BAD("chunk_bytes");
    return HC_OK;
#undef BAD
}

void hc__tile_code_pos(unsigned code_bits, unsigned r, unsigned c, uint64_t *byte,
                      unsigned *shift) {
    hc_u64 b;
    hc__core_code_pos(code_bits, r, c, &b, shift);
    *byte = b;
}

bool hc__e4m3_of_fp4(unsigned u, int d, uint8_t *out) { return hc__core_e4m3_of_fp4(u, d, out); }

void hc__tile_core_params(const hc_tile_params *p, hc_core_params *c) {
    memset(c, 0, sizeof *c);
    c->kind = (unsigned)p->kind;
    c->code_bits = p->code_bits;
    c->S = p->S;
    c->g = (unsigned)(p->g < HC_TILE_K ? p->g : HC_TILE_K);
    /* mxfold's records hold exponents: E8M0 is the kind its modules are built for */
    c->scale_kind = p->kind == HC_TL_MXFOLD ? HC_SK_E8M0
                                            : hc__scale_kind(p->scale_dtype, p->scale_divides);
    c->zeros = p->zeros;
    c->zero_const = (unsigned)p->zero_const;
    c->sign_magnitude = p->sign_magnitude;
    c->global_div = p->global_div;
    c->code_bytes = p->code_bytes, c->scale_bytes = p->scale_bytes, c->chunk_bytes = p->chunk_bytes;
    c->tiles_n = p->tiles_n, c->tiles_k = p->tiles_k, c->N = p->N, c->K = p->K;
}

double hc__tile_value(const hc_tile_params *p, const uint8_t *chunk, unsigned r, unsigned c) {
    hc_core_params cp;
    hc__tile_core_params(p, &cp);
    return hc__core_value(&cp, chunk, r, c);
}

void hc__tile_decode_stripe(const hc_tile_params *p, const uint8_t *tensor, uint64_t e,
                           uint64_t nb, float *out) {
    hc_core_params cp;
    hc__tile_core_params(p, &cp);
    for (uint64_t kb = 0; kb < p->tiles_k; kb++) {
        const uint8_t *chunk = tensor + hc__tile_offset(p, e, nb, kb);
        for (unsigned r = 0; r < HC_TILE_N; r++)
            for (unsigned c = 0; c < HC_TILE_K; c++)
                out[r * p->Kp + kb * HC_TILE_K + c] = (float)hc__core_value(&cp, chunk, r, c);
    }
}
