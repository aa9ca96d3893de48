/* decode_ct.c: the compressed-tensors decoders (pack-quantized integers, unpacked integers
 * and fp8, nvfp4 and mxfp4) and quant_method fp8 (weight_scale_inv), with the compressed-
 * tensors scale grids, into the canonical tensor (quant.h). Layout facts:
 * ../shared/docs/FORMATS.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_int.h"

/* Unpacks N rows of W words each into K codes per row. Widths that divide 32 take a word at
 * a time (both layouts agree there); others walk the chosen layout field by field. */
static void unpack_rows(const void *d, uint64_t N, uint64_t W, uint64_t K, int b, bool stream,
                        uint8_t *out) {
    unsigned per = 32u / (unsigned)b, mask = (1u << b) - 1;
    for (uint64_t n = 0; n < N; n++) {
        uint8_t *o = out + n * K;
        if (32 % b == 0) {
            for (uint64_t w = 0; w < W; w++) {
                uint32_t v = hc__dec_word32(d, n * W + w);
                uint64_t k0 = w * per, kn = k0 + per < K ? per : K - k0;
                for (unsigned i = 0; i < kn; i++, v >>= b) o[k0 + i] = (uint8_t)(v & mask);
            }
        } else {
            for (uint64_t k = 0; k < K; k++)
                o[k] = (uint8_t)(stream ? hc__dec_field_stream(d, n * W, 1, k, b)
                                        : hc__dec_field_words(d, n * W, 1, k, b));
        }
    }
}

/* Scale grid of a compressed-tensors strategy for an [N, K] weight. */
static bool ct_grid(dctx *c, uint64_t N, uint64_t K, uint64_t *sn, uint64_t *sk, uint64_t *gn,
                    uint64_t *gk) {
    const hc_scheme *s = &c->m->scheme;
    switch (s->strategy) {
    case HC_STRAT_TENSOR: *sn = *sk = 1, *gn = N ? N : 1, *gk = K ? K : 1; return true;
    case HC_STRAT_CHANNEL: *sn = N, *sk = 1, *gn = 1, *gk = K ? K : 1; return true;
    case HC_STRAT_GROUP:
    case HC_STRAT_TENSOR_GROUP: {
        uint64_t gs = (uint64_t)s->group_size;
        if (K >= gs && K % gs) {
            PROBLEM(c, c->m->t[HC_ROLE_WEIGHT]->name, "divisible",
                    "module '%s': K=%llu is not divisible by group_size %llu (config group '%s')",
                    c->m->name, (unsigned long long)K, (unsigned long long)gs, s->group);
            return false;
        }
        *sn = N, *sk = hc__cdiv_u64(K, gs), *gn = 1, *gk = gs;
        return true;
    }
    case HC_STRAT_BLOCK:
        *sn = hc__cdiv_u64(N, s->block[0]), *sk = hc__cdiv_u64(K, s->block[1]);
        *gn = s->block[0], *gk = s->block[1];
        return true;
    }
    return false;
}

/* Scale tensor of the grid: tensor strategy accepts any shape holding one value. */
static bool ct_scales(dctx *c, const hc_ck_entry *se, bool e8m0) {
    hc_qtensor *q = c->q;
    if (c->m->scheme.strategy == HC_STRAT_TENSOR) {
        if (se->t->numel != 1) {
            PROBLEM(c, se->name, "scale shape", "tensor '%s': scale shape: per-tensor scale must "
                    "hold 1 value, it holds %llu", se->name, (unsigned long long)se->t->numel);
            return false;
        }
    } else if (!hc__dec_check_shape(c, se, 2, (uint64_t[]){q->sn, q->sk}, "scale shape")) {
        return false;
    }
    hc__dec_read_scales(c, se, e8m0, q->sn * q->sk, q->scales);
    return true;
}

/* ---------------- compressed-tensors ---------------- */

static void ct_layout(const dctx *c, uint64_t width, uint64_t count, int b, bool *stream) {
    const int *v = c->m->scheme.ct_version;
    bool known = v[0] || v[1] || v[2];
    if (known) *stream = v[0] > 0 || v[1] >= 18;
    else *stream = width == hc__cdiv_u64(count * (uint64_t)b, 32); /* the data decides */
}

void hc__dec_ct_pack(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    int b = m->scheme.bits;
    const hc_ck_entry *we = hc__dec_need(c, HC_ROLE_WEIGHT, "weight_packed");
    const hc_ck_entry *sh = hc__dec_need(c, HC_ROLE_SHAPE, "weight_shape");
    const hc_ck_entry *se = hc__dec_need(c, HC_ROLE_SCALE, "weight_scale");
    if (c->bad || !CHECK_DT(c, we, HC_DT_I32) || !CHECK_DT(c, sh, HC_DT_I64, HC_DT_I32)) return;
    if (we->t->ndim != 2 || sh->t->numel != 2) {
        PROBLEM(c, we->name, "shape", "module '%s': weight_packed must be 2-D and weight_shape "
                "hold 2 values", m->name);
        return;
    }
    double dn, dk;
    hc__read_scalar(hc__dec_data(c, sh), sh->t->dtype, 0, &dn);
    hc__read_scalar(hc__dec_data(c, sh), sh->t->dtype, 1, &dk);
    uint64_t N = we->t->shape[0], W = we->t->shape[1];
    if (dn != (double)N || dk < 0 || dk > 1e12) {
        PROBLEM(c, sh->name, "weight_shape", "tensor '%s': weight_shape [%.0f, %.0f] disagrees "
                "with weight_packed's %llu rows", sh->name, dn, dk, (unsigned long long)N);
        return;
    }
    uint64_t K = (uint64_t)dk;
    bool stream;
    ct_layout(c, W, K, b, &stream);
    uint64_t wantW = stream ? hc__cdiv_u64(K * (uint64_t)b, 32) : hc__cdiv_u64(K, 32u / (unsigned)b);
    if (W != wantW) {
        PROBLEM(c, we->name, "packed width", "tensor '%s': packed width %llu words per row "
                "disagrees with tensor '%s' (weight_shape [%llu, %llu]): K=%llu at %d bits needs "
                "%llu (%s layout, compressed-tensors %d.%d.%d)", we->name, (unsigned long long)W,
                sh->name, (unsigned long long)N, (unsigned long long)K, (unsigned long long)K, b,
                (unsigned long long)wantW, stream ? "bitstream" : "fields-per-word",
                m->scheme.ct_version[0], m->scheme.ct_version[1], m->scheme.ct_version[2]);
        return;
    }
    uint64_t sn, sk, gn, gk;
    if (b == 4 || b == 8) q->packed = hc__dec_data(c, we), q->packed_row_bytes = W * 4; /* both layouts agree */
    if (!ct_grid(c, N, K, &sn, &sk, &gn, &gk) || !hc__dec_alloc_q(c, 1, N, K, sn, sk)) return;
    q->gn = gn, q->gk = gk, q->kind = HC_Q_INT, q->bits = b;
    if (stream && b % 2) snprintf(q->quirks, sizeof q->quirks, "bitstream layout (>= 0.18.0)");
    if (q->codes) unpack_rows(hc__dec_data(c, we), N, W, K, b, stream, q->codes);
    if (b == 4 && K % 8 == 0) q->code_min = hc__dec_words_have_zero_nibble(hc__dec_data(c, we), N * W) ? 0 : 1;
    if (!ct_scales(c, se, false)) return;
    q->zero_const = 1 << (b - 1);
    if (!m->scheme.symmetric) {
        const hc_ck_entry *ze = hc__dec_need(c, HC_ROLE_ZERO, "weight_zero_point");
        if (!ze) return;
        q->zeros = malloc(sn * sk * sizeof *q->zeros);
        if (!q->zeros) return;
        if (m->scheme.strategy == HC_STRAT_TENSOR) {
            double z;
            hc__read_scalar(hc__dec_data(c, ze), ze->t->dtype, 0, &z);
            q->zeros[0] = (int32_t)z + q->zero_const;
        } else {
            uint64_t Wz = stream ? hc__cdiv_u64(N * (uint64_t)b, 32) : hc__cdiv_u64(N, 32u / (unsigned)b);
            if (!CHECK_DT(c, ze, HC_DT_I32) || !hc__dec_check_shape(c, ze, 2, (uint64_t[]){Wz, sk},
                                                                    "zero point shape"))
                return;
            const void *zd = hc__dec_data(c, ze);
            for (uint64_t g = 0; g < sk; g++)
                for (uint64_t n = 0; n < N; n++)
                    q->zeros[n * sk + g] = (int32_t)(stream ? hc__dec_field_stream(zd, g, sk, n, b)
                                                            : hc__dec_field_words(zd, g, sk, n, b));
        }
    }
    if (m->scheme.actorder || m->t[HC_ROLE_GIDX]) hc__dec_read_gidx(c, K, sk);
}

/* The scale grid of quant_method fp8 (hc__resolve_fp8, scheme_float.c): blocks, one scale
 * per output row (GPTQModel "row") or one for the tensor. */
static void fp8_grid(const hc_scheme *s, uint64_t N, uint64_t K, uint64_t *sn, uint64_t *sk,
                     uint64_t *gn, uint64_t *gk) {
    if (s->strategy == HC_STRAT_BLOCK) {
        *sn = hc__cdiv_u64(N, s->block[0]), *sk = hc__cdiv_u64(K, s->block[1]);
        *gn = s->block[0], *gk = s->block[1];
    } else if (s->strategy == HC_STRAT_CHANNEL) {
        *sn = N, *sk = 1, *gn = 1, *gk = K ? K : 1;
    } else {
        *sn = *sk = 1, *gn = N ? N : 1, *gk = K ? K : 1;
    }
}

/* weight_scale_inv in the grid's shape (rows: [N] as GPTQModel writes it, or [N, 1]; tensor:
 * any shape of one value), read as the source's values; the rule (multiply or divide) goes
 * with them. A shape that disagrees names the configuration fields it follows from. */
static bool fp8_scales(dctx *c, const hc_ck_entry *se) {
    const hc_scheme *s = &c->m->scheme;
    hc_qtensor *q = c->q;
    if (!CHECK_DT(c, se, HC_DT_F32, HC_DT_BF16, HC_DT_F16, HC_DT_F64)) return false;
    char ctx[160];
    if (s->strategy == HC_STRAT_BLOCK)
        snprintf(ctx, sizeof ctx, "quantization_config weight_scale_method 'block', "
                 "weight_block_size [%llu, %llu]", (unsigned long long)s->block[0],
                 (unsigned long long)s->block[1]);
    else
        snprintf(ctx, sizeof ctx, "quantization_config weight_scale_method '%s', "
                 "weight_block_size null", s->strategy == HC_STRAT_CHANNEL ? "row" : "tensor");
    bool ok;
    if (s->strategy == HC_STRAT_TENSOR)
        ok = se->t->numel == 1 || hc__dec_check_shape_ctx(c, se, 1, (uint64_t[]){1}, "scale shape", ctx);
    else if (s->strategy == HC_STRAT_CHANNEL && se->t->ndim == 2 && se->t->shape[1] == 1)
        ok = hc__dec_check_shape_ctx(c, se, 2, (uint64_t[]){q->sn, 1}, "scale shape", ctx);
    else if (s->strategy == HC_STRAT_CHANNEL)
        ok = hc__dec_check_shape_ctx(c, se, 1, (uint64_t[]){q->sn}, "scale shape", ctx);
    else
        ok = hc__dec_check_shape_ctx(c, se, 2, (uint64_t[]){q->sn, q->sk}, "scale shape", ctx);
    if (!ok) return false;
    hc__dec_read_scales(c, se, false, q->sn * q->sk, q->scales);
    q->scale_divides = s->scale_inverse;
    if (s->scale_inverse)
        snprintf(q->quirks, sizeof q->quirks, "weight_scale_inv divides (weight_scale_semantics "
                 "'inverse')");
    return true;
}

/* Unpacked integer or fp8 weights [N, K] with strategy scales. */
void hc__dec_ct_unpacked(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = hc__dec_need(c, HC_ROLE_WEIGHT, "weight");
    const hc_ck_entry *se = hc__dec_need(c, HC_ROLE_SCALE, "weight_scale");
    if (c->bad) return;
    bool is_int = m->scheme.fmt == HC_FMT_CT_INT;
    bool mx = m->scheme.fmt == HC_FMT_CT_MXFP8;
    if (is_int ? !CHECK_DT(c, we, HC_DT_I8) : !CHECK_DT(c, we, HC_DT_F8_E4M3, HC_DT_F8_E5M2))
        return;
    if (we->t->ndim != 2) {
        PROBLEM(c, we->name, "shape", "tensor '%s': weight must be 2-D", we->name);
        return;
    }
    uint64_t N = we->t->shape[0], K = we->t->shape[1], sn, sk, gn, gk;
    if (mx) {
        if (K % 32) {
            PROBLEM(c, we->name, "divisible", "tensor '%s': MX needs K divisible by 32, K=%llu",
                    we->name, (unsigned long long)K);
            return;
        }
        sn = N, sk = K / 32, gn = 1, gk = 32;
    } else if (m->scheme.fmt == HC_FMT_FP8_SCALE_INV) {
        fp8_grid(&m->scheme, N, K, &sn, &sk, &gn, &gk);
    } else if (!ct_grid(c, N, K, &sn, &sk, &gn, &gk)) {
        return;
    }
    const uint8_t *d = hc__dec_data(c, we);
    if (!is_int || m->scheme.bits == 8) /* fp8 bytes as they are, int8 with the sign bit flipped */
        q->packed = d, q->packed_row_bytes = K, q->packed_xor = is_int ? 0x80 : 0;
    if (!hc__dec_alloc_q(c, 1, N, K, sn, sk)) return;
    q->gn = gn, q->gk = gk, q->bits = m->scheme.bits;
    if (is_int) {
        int b = m->scheme.bits, lo = -(1 << (b - 1)), hi = (1 << (b - 1)) - 1;
        uint64_t out = 0;
        q->kind = HC_Q_INT;
        q->zero_const = 1 << (b - 1);
        for (uint64_t i = 0; i < N * K; i++) {
            int v = (int8_t)d[i];
            if (v < lo || v > hi) out++;
            if (q->codes) q->codes[i] = (uint8_t)(v + q->zero_const);
        }
        if (out) {
            hc__findings_add(c->f, HC_SEV_ERROR, we->name, "code range", out, NULL, 0,
                            "tensor '%s': code range: %llu values outside [%d, %d] for %d bits",
                            we->name, (unsigned long long)out, lo, hi, b);
            c->bad = true;
            return;
        }
    } else {
        q->kind = we->t->dtype == HC_DT_F8_E5M2 ? HC_Q_FP8_E5M2 : HC_Q_FP8_E4M3;
        uint64_t nan = 0;
        for (uint64_t i = 0; i < N * K; i++)
            nan += q->kind == HC_Q_FP8_E4M3 ? (d[i] & 0x7F) == 0x7F : (d[i] & 0x7C) == 0x7C;
        if (nan) {
            hc__findings_add(c->f, HC_SEV_ERROR, we->name, "weight NaN", nan, NULL, 0,
                            "tensor '%s': %llu weights are %s codes", we->name,
                            (unsigned long long)nan,
                            q->kind == HC_Q_FP8_E4M3 ? "E4M3 NaN" : "E5M2 NaN/inf");
            c->bad = true;
            return;
        }
        if (q->codes) memcpy(q->codes, d, N * K);
    }
    if (m->scheme.fmt == HC_FMT_FP8_SCALE_INV) {
        if (!fp8_scales(c, se)) return;
    } else if (mx) {
        if (!hc__dec_check_shape(c, se, 2, (uint64_t[]){sn, sk}, "scale shape")) return;
        hc__dec_read_scales(c, se, mx, sn * sk, q->scales);
    } else if (!ct_scales(c, se, false)) {
        return;
    }
    if (is_int && !m->scheme.symmetric) {
        const hc_ck_entry *ze = hc__dec_need(c, HC_ROLE_ZERO, "weight_zero_point");
        if (!ze || (m->scheme.strategy != HC_STRAT_TENSOR &&
                    !hc__dec_check_shape(c, ze, 2, (uint64_t[]){sn, sk}, "zero point shape")))
            return;
        q->zeros = malloc(sn * sk * sizeof *q->zeros);
        for (uint64_t i = 0; q->zeros && i < sn * sk; i++) {
            double z;
            hc__read_scalar(hc__dec_data(c, ze), ze->t->dtype, i, &z);
            q->zeros[i] = (int32_t)z + q->zero_const;
        }
    }
    if (m->t[HC_ROLE_GIDX]) hc__dec_read_gidx(c, K, sk);
}

/* FP4 codes two per byte, element 2j in the low nibble. */
void hc__dec_ct_fp4(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    bool nv = m->scheme.fmt == HC_FMT_CT_NVFP4;
    const hc_ck_entry *we = hc__dec_need(c, HC_ROLE_WEIGHT, "weight_packed");
    const hc_ck_entry *se = hc__dec_need(c, HC_ROLE_SCALE, "weight_scale");
    const hc_ck_entry *ge = nv ? hc__dec_need(c, HC_ROLE_GSCALE, "weight_global_scale") : NULL;
    if (c->bad || !CHECK_DT(c, we, HC_DT_U8)) return;
    if (we->t->ndim != 2) {
        PROBLEM(c, we->name, "shape", "tensor '%s': weight_packed must be 2-D", we->name);
        return;
    }
    uint64_t N = we->t->shape[0], K = we->t->shape[1] * 2, gs = nv ? 16 : 32;
    const hc_ck_entry *sh = m->t[HC_ROLE_SHAPE];
    if (sh && sh->t->numel == 2) {
        double dn, dk;
        hc__read_scalar(hc__dec_data(c, sh), sh->t->dtype, 0, &dn);
        hc__read_scalar(hc__dec_data(c, sh), sh->t->dtype, 1, &dk);
        if (dn != (double)N || dk != (double)K) {
            PROBLEM(c, sh->name, "weight_shape", "tensor '%s': weight_shape [%.0f, %.0f] "
                    "disagrees with weight_packed [%llu, %llu/2]", sh->name, dn, dk,
                    (unsigned long long)N, (unsigned long long)K);
            return;
        }
    }
    if (K % gs) {
        PROBLEM(c, we->name, "divisible", "tensor '%s': K=%llu is not divisible by the %s group "
                "of %llu", we->name, (unsigned long long)K, nv ? "NVFP4" : "MXFP4",
                (unsigned long long)gs);
        return;
    }
    q->packed = hc__dec_data(c, we), q->packed_row_bytes = K / 2;
    if (!hc__dec_alloc_q(c, 1, N, K, N, K / gs)) return;
    q->gn = 1, q->gk = gs, q->kind = HC_Q_FP4, q->bits = 4;
    if (q->codes) hc__dec_unpack_nibbles(hc__dec_data(c, we), N * K / 2, q->codes);
    if (nv ? !CHECK_DT(c, se, HC_DT_F8_E4M3) : !CHECK_DT(c, se, HC_DT_U8, HC_DT_F8_E8M0)) return;
    if (!hc__dec_check_shape(c, se, 2, (uint64_t[]){N, K / gs}, "scale shape")) return;
    hc__dec_read_scales(c, se, !nv, N * K / gs, q->scales);
    const int *v = m->scheme.ct_version;
    if (!nv && v[0] == 0 && v[1] == 13) { /* 0.13.x wrote exponents two too low */
        for (uint64_t i = 0; i < N * K / gs; i++) q->scales[i] *= 4;
        snprintf(q->quirks, sizeof q->quirks, "mxfp4 scale x4 (compressed-tensors 0.13.x)");
    }
    if (nv) {
        if (!CHECK_DT(c, ge, HC_DT_F32, HC_DT_BF16, HC_DT_F16) || ge->t->numel != 1) return;
        hc__read_scalar(hc__dec_data(c, ge), ge->t->dtype, 0, &q->global_div);
        if (hc__scale_class_of(q->global_div) >= 0) { /* the scale-sanity rule (scales.c) */
            PROBLEM(c, ge->name, "global scale", "tensor '%s': global scale %g must be finite "
                    "and > 0", ge->name, q->global_div);
            return;
        }
    }
}

