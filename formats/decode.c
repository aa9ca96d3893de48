/* decode.c: one decoder per storage format, each producing the canonical quantized tensor
 * (quant.h) from a module's tensors. Layout facts: ../shared/docs/FORMATS.md. Structural
 * problems (shapes, packed widths, divisibility, g_idx range) are reported as findings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "quant.h"

typedef struct {
    const hc_model *md;
    const hc_module *m;
    hc_findings *f;
    hc_qtensor *q;
    bool bad;
    bool codes; /* unpack the codes (not needed to validate) */
} dctx;

#define PROBLEM(c, tensor, rule, ...)                                                \
    do {                                                                             \
        hc_findings_add((c)->f, HC_SEV_ERROR, tensor, rule, 0, NULL, 0, __VA_ARGS__); \
        (c)->bad = true;                                                             \
    } while (0)

static const void *tdata(const dctx *c, const hc_ck_entry *e) { return hc_ckpt_data(c->md->ck, e); }

/* The tensor of a role, or a finding naming what is missing. */
static const hc_ck_entry *need(dctx *c, hc_role r, const char *what) {
    const hc_ck_entry *e = c->m->t[r];
    if (!e) PROBLEM(c, c->m->name, "missing tensor", "module '%s' (%s): missing %s tensor",
                    c->m->name, hc_fmt_name(c->m->scheme.fmt), what);
    return e;
}

static bool check_dtype(dctx *c, const hc_ck_entry *e, const hc_dtype *ok, size_t nok) {
    for (size_t i = 0; i < nok; i++)
        if (e->t->dtype == ok[i]) return true;
    PROBLEM(c, e->name, "dtype", "tensor '%s': dtype %s is not valid for %s", e->name,
            hc_dtype_name(e->t->dtype), hc_fmt_name(c->m->scheme.fmt));
    return false;
}
#define CHECK_DT(c, e, ...) \
    check_dtype(c, e, (const hc_dtype[]){__VA_ARGS__}, sizeof((const hc_dtype[]){__VA_ARGS__}) / sizeof(hc_dtype))

/* Checks a tensor's shape; rule names the check for the report, ctx (or NULL) the
 * configuration the expected shape follows from. */
static bool check_shape_ctx(dctx *c, const hc_ck_entry *e, int ndim, const uint64_t *want,
                            const char *rule, const char *ctx) {
    bool ok = e->t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = e->t->shape[d] == want[d];
    if (!ok) {
        char got[128] = "", exp[128] = "";
        for (int d = 0; d < e->t->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", d ? ", " : "",
                     (unsigned long long)e->t->shape[d]);
        for (int d = 0; d < ndim; d++)
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%s%llu", d ? ", " : "",
                     (unsigned long long)want[d]);
        PROBLEM(c, e->name, rule, "tensor '%s': %s: shape is [%s], expected [%s]%s%s%s", e->name,
                rule, got, exp, ctx ? " (" : "", ctx ? ctx : "", ctx ? ")" : "");
    }
    return ok;
}

static bool check_shape(dctx *c, const hc_ck_entry *e, int ndim, const uint64_t *want,
                        const char *rule) {
    return check_shape_ctx(c, e, ndim, want, rule, NULL);
}

static bool alloc_q(dctx *c, uint64_t E, uint64_t N, uint64_t K, uint64_t sn, uint64_t sk) {
    hc_qtensor *q = c->q;
    uint64_t n, ns;
    if (!hc_mul_u64(E, N, &n) || !hc_mul_u64(n, K, &n) || !hc_mul_u64(E, sn, &ns) ||
        !hc_mul_u64(ns, sk, &ns) || n > (1ull << 40) || ns > (1ull << 40)) {
        PROBLEM(c, c->m->name, "size", "module '%s': element count overflows", c->m->name);
        return false;
    }
    q->E = E, q->N = N, q->K = K, q->sn = sn, q->sk = sk;
    q->codes = c->codes ? malloc(n ? n : 1) : NULL;
    q->scales = malloc((ns ? ns : 1) * sizeof(double));
    if ((c->codes && !q->codes) || !q->scales) {
        PROBLEM(c, c->m->name, "memory", "module '%s': out of memory", c->m->name);
        return false;
    }
    return true;
}

/* Reads n scale values (any float dtype, E4M3, or E8M0 when e8m0) into out. */
static void read_scales(const dctx *c, const hc_ck_entry *e, bool e8m0, uint64_t n, double *out) {
    const uint8_t *d = tdata(c, e);
    if (e8m0) {
        for (uint64_t i = 0; i < n; i++) out[i] = hc_e8m0(d[i]);
    } else if (e->t->dtype == HC_DT_BF16) { /* the common case, without a switch per value */
        for (uint64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)(d[2 * i] | d[2 * i + 1] << 8) << 16;
            float f;
            memcpy(&f, &u, 4);
            out[i] = f;
        }
    } else {
        for (uint64_t i = 0; i < n; i++) hc_read_scalar(d, e->t->dtype, i, &out[i]);
    }
    c->q->scale_dtype = e8m0 ? HC_DT_F8_E8M0 : e->t->dtype;
}

static uint32_t word32(const void *d, uint64_t i) {
    uint32_t w;
    memcpy(&w, (const unsigned char *)d + 4 * i, 4);
    return w;
}

/* Field k of a packed row, in one of the two compressed-tensors / GPTQ bit layouts:
 * fields: 32/b fields per word, low first, unused high bits (old compressed-tensors, GPTQ b|32);
 * stream: a low-bit-first bitstream where fields may straddle words. */
static unsigned field_words(const void *d, uint64_t base, uint64_t stride, uint64_t k, int b) {
    unsigned per = 32u / (unsigned)b;
    uint32_t w = word32(d, base + (k / per) * stride);
    return (w >> (b * (k % per))) & ((1u << b) - 1);
}
static unsigned field_stream(const void *d, uint64_t base, uint64_t stride, uint64_t k, int b) {
    uint64_t bit = k * (uint64_t)b, wi = bit / 32;
    unsigned off = (unsigned)(bit % 32);
    uint64_t v = word32(d, base + wi * stride) >> off;
    if (off + (unsigned)b > 32) v |= (uint64_t)word32(d, base + (wi + 1) * stride) << (32 - off);
    return (unsigned)(v & ((1u << b) - 1));
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Unpacks N rows of W words each into K codes per row. Widths that divide 32 take a word at
 * a time (both layouts agree there); others walk the chosen layout field by field. */
static void unpack_rows(const void *d, uint64_t N, uint64_t W, uint64_t K, int b, bool stream,
                        uint8_t *out) {
    unsigned per = 32u / (unsigned)b, mask = (1u << b) - 1;
    for (uint64_t n = 0; n < N; n++) {
        uint8_t *o = out + n * K;
        if (32 % b == 0) {
            for (uint64_t w = 0; w < W; w++) {
                uint32_t v = word32(d, n * W + w);
                uint64_t k0 = w * per, kn = k0 + per < K ? per : K - k0;
                for (unsigned i = 0; i < kn; i++, v >>= b) o[k0 + i] = (uint8_t)(v & mask);
            }
        } else {
            for (uint64_t k = 0; k < K; k++)
                o[k] = (uint8_t)(stream ? field_stream(d, n * W, 1, k, b)
                                        : field_words(d, n * W, 1, k, b));
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
        *sn = N, *sk = cdiv(K, gs), *gn = 1, *gk = gs;
        return true;
    }
    case HC_STRAT_BLOCK:
        *sn = cdiv(N, s->block[0]), *sk = cdiv(K, s->block[1]);
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
    } else if (!check_shape(c, se, 2, (uint64_t[]){q->sn, q->sk}, "scale shape")) {
        return false;
    }
    read_scales(c, se, e8m0, q->sn * q->sk, q->scales);
    return true;
}

static bool read_gidx(dctx *c, uint64_t K, uint64_t G) {
    const hc_ck_entry *ge = c->m->t[HC_ROLE_GIDX];
    if (!ge) return true;
    if (!CHECK_DT(c, ge, HC_DT_I32, HC_DT_I64) || !check_shape(c, ge, 1, &K, "g_idx shape"))
        return false;
    int32_t *g = malloc((K ? K : 1) * sizeof *g);
    if (!g) return false;
    uint64_t bad = 0, neg = 0, trivial = 1;
    for (uint64_t k = 0; k < K; k++) {
        double v;
        hc_read_scalar(tdata(c, ge), ge->t->dtype, k, &v);
        if (v == -1) neg++;
        else if (v < 0 || v >= (double)G) bad++;
        g[k] = (int32_t)v;
        trivial &= (uint64_t)g[k] == k / c->q->gk;
    }
    if (bad) {
        hc_findings_add(c->f, HC_SEV_ERROR, ge->name, "g_idx range", bad, NULL, 0,
                        "tensor '%s': g_idx range: %llu of %llu entries are outside [0, %llu)",
                        ge->name, (unsigned long long)bad, (unsigned long long)K,
                        (unsigned long long)G);
        c->bad = true;
        free(g);
        return false;
    }
    if (neg || trivial) free(g); /* -1 entries mean "no g_idx"; k / gs needs none */
    else c->q->g_idx = g;
    return true;
}

/* Whether any 4-bit field of n packed words is 0 (the code -8 of symmetric int4), at memory
 * speed: a word has a zero nibble iff (w - 0x11111111) & ~w & 0x88888888. */
static bool words_have_zero_nibble(const void *d, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint32_t w = word32(d, i);
        if ((w - 0x11111111u) & ~w & 0x88888888u) return true;
    }
    return false;
}

static int codes_min(const uint8_t *codes, uint64_t n) {
    int m = 255;
    for (uint64_t i = 0; i < n; i++) m = codes[i] < m ? codes[i] : m;
    return n ? m : -1;
}

/* Two FP4 codes per byte, element 2j in the low nibble. */
static void unpack_nibbles(const uint8_t *d, uint64_t nbytes, uint8_t *out) {
    for (uint64_t i = 0; i < nbytes; i++) {
        out[2 * i] = d[i] & 15;
        out[2 * i + 1] = d[i] >> 4;
    }
}

/* ---------------- compressed-tensors ---------------- */

static void ct_layout(const dctx *c, uint64_t width, uint64_t count, int b, bool *stream) {
    const int *v = c->m->scheme.ct_version;
    bool known = v[0] || v[1] || v[2];
    if (known) *stream = v[0] > 0 || v[1] >= 18;
    else *stream = width == cdiv(count * (uint64_t)b, 32); /* the data decides */
}

static void decode_ct_pack(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    int b = m->scheme.bits;
    const hc_ck_entry *we = need(c, HC_ROLE_WEIGHT, "weight_packed");
    const hc_ck_entry *sh = need(c, HC_ROLE_SHAPE, "weight_shape");
    const hc_ck_entry *se = need(c, HC_ROLE_SCALE, "weight_scale");
    if (c->bad || !CHECK_DT(c, we, HC_DT_I32) || !CHECK_DT(c, sh, HC_DT_I64, HC_DT_I32)) return;
    if (we->t->ndim != 2 || sh->t->numel != 2) {
        PROBLEM(c, we->name, "shape", "module '%s': weight_packed must be 2-D and weight_shape "
                "hold 2 values", m->name);
        return;
    }
    double dn, dk;
    hc_read_scalar(tdata(c, sh), sh->t->dtype, 0, &dn);
    hc_read_scalar(tdata(c, sh), sh->t->dtype, 1, &dk);
    uint64_t N = we->t->shape[0], W = we->t->shape[1];
    if (dn != (double)N || dk < 0 || dk > 1e12) {
        PROBLEM(c, sh->name, "weight_shape", "tensor '%s': weight_shape [%.0f, %.0f] disagrees "
                "with weight_packed's %llu rows", sh->name, dn, dk, (unsigned long long)N);
        return;
    }
    uint64_t K = (uint64_t)dk;
    bool stream;
    ct_layout(c, W, K, b, &stream);
    uint64_t wantW = stream ? cdiv(K * (uint64_t)b, 32) : cdiv(K, 32u / (unsigned)b);
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
    if (!ct_grid(c, N, K, &sn, &sk, &gn, &gk) || !alloc_q(c, 1, N, K, sn, sk)) return;
    q->gn = gn, q->gk = gk, q->kind = HC_Q_INT, q->bits = b;
    if (stream && b % 2) snprintf(q->quirks, sizeof q->quirks, "bitstream layout (>= 0.18.0)");
    if (q->codes) unpack_rows(tdata(c, we), N, W, K, b, stream, q->codes);
    if (b == 4 || b == 8) q->packed = tdata(c, we), q->packed_row_bytes = W * 4; /* both layouts agree */
    if (q->codes) q->code_min = codes_min(q->codes, N * K);
    else if (b == 4 && K % 8 == 0) q->code_min = words_have_zero_nibble(tdata(c, we), N * W) ? 0 : 1;
    if (!ct_scales(c, se, false)) return;
    q->zero_const = 1 << (b - 1);
    if (!m->scheme.symmetric) {
        const hc_ck_entry *ze = need(c, HC_ROLE_ZERO, "weight_zero_point");
        if (!ze) return;
        q->zeros = malloc(sn * sk * sizeof *q->zeros);
        if (!q->zeros) return;
        if (m->scheme.strategy == HC_STRAT_TENSOR) {
            double z;
            hc_read_scalar(tdata(c, ze), ze->t->dtype, 0, &z);
            q->zeros[0] = (int32_t)z + q->zero_const;
        } else {
            uint64_t Wz = stream ? cdiv(N * (uint64_t)b, 32) : cdiv(N, 32u / (unsigned)b);
            if (!CHECK_DT(c, ze, HC_DT_I32) || !check_shape(c, ze, 2, (uint64_t[]){Wz, sk},
                                                          "zero point shape"))
                return;
            const void *zd = tdata(c, ze);
            for (uint64_t g = 0; g < sk; g++)
                for (uint64_t n = 0; n < N; n++)
                    q->zeros[n * sk + g] = (int32_t)(stream ? field_stream(zd, g, sk, n, b)
                                                            : field_words(zd, g, sk, n, b));
        }
    }
    if (m->scheme.actorder || m->t[HC_ROLE_GIDX]) read_gidx(c, K, sk);
}

/* The scale grid of quant_method fp8 (model.c resolve_fp8): blocks, one scale per output row
 * (GPTQModel "row") or one for the tensor. */
static void fp8_grid(const hc_scheme *s, uint64_t N, uint64_t K, uint64_t *sn, uint64_t *sk,
                     uint64_t *gn, uint64_t *gk) {
    if (s->strategy == HC_STRAT_BLOCK) {
        *sn = cdiv(N, s->block[0]), *sk = cdiv(K, s->block[1]);
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
        ok = se->t->numel == 1 || check_shape_ctx(c, se, 1, (uint64_t[]){1}, "scale shape", ctx);
    else if (s->strategy == HC_STRAT_CHANNEL && se->t->ndim == 2 && se->t->shape[1] == 1)
        ok = check_shape_ctx(c, se, 2, (uint64_t[]){q->sn, 1}, "scale shape", ctx);
    else if (s->strategy == HC_STRAT_CHANNEL)
        ok = check_shape_ctx(c, se, 1, (uint64_t[]){q->sn}, "scale shape", ctx);
    else
        ok = check_shape_ctx(c, se, 2, (uint64_t[]){q->sn, q->sk}, "scale shape", ctx);
    if (!ok) return false;
    read_scales(c, se, false, q->sn * q->sk, q->scales);
    q->scale_divides = s->scale_inverse;
    if (s->scale_inverse)
        snprintf(q->quirks, sizeof q->quirks, "weight_scale_inv divides (weight_scale_semantics "
                 "'inverse')");
    return true;
}

/* Unpacked integer or fp8 weights [N, K] with strategy scales. */
static void decode_ct_unpacked(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = need(c, HC_ROLE_WEIGHT, "weight");
    const hc_ck_entry *se = need(c, HC_ROLE_SCALE, "weight_scale");
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
    if (!alloc_q(c, 1, N, K, sn, sk)) return;
    q->gn = gn, q->gk = gk, q->bits = m->scheme.bits;
    const uint8_t *d = tdata(c, we);
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
        if (b == 8) q->packed = d, q->packed_row_bytes = K, q->packed_xor = 0x80;
        if (out) {
            hc_findings_add(c->f, HC_SEV_ERROR, we->name, "code range", out, NULL, 0,
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
            hc_findings_add(c->f, HC_SEV_ERROR, we->name, "weight NaN", nan, NULL, 0,
                            "tensor '%s': %llu weights are %s codes", we->name,
                            (unsigned long long)nan,
                            q->kind == HC_Q_FP8_E4M3 ? "E4M3 NaN" : "E5M2 NaN/inf");
            c->bad = true;
            return;
        }
        if (q->codes) memcpy(q->codes, d, N * K);
        q->packed = d, q->packed_row_bytes = K;
    }
    if (m->scheme.fmt == HC_FMT_FP8_SCALE_INV) {
        if (!fp8_scales(c, se)) return;
    } else if (mx) {
        if (!check_shape(c, se, 2, (uint64_t[]){sn, sk}, "scale shape")) return;
        read_scales(c, se, mx, sn * sk, q->scales);
    } else if (!ct_scales(c, se, false)) {
        return;
    }
    if (is_int && !m->scheme.symmetric) {
        const hc_ck_entry *ze = need(c, HC_ROLE_ZERO, "weight_zero_point");
        if (!ze || (m->scheme.strategy != HC_STRAT_TENSOR &&
                    !check_shape(c, ze, 2, (uint64_t[]){sn, sk}, "zero point shape")))
            return;
        q->zeros = malloc(sn * sk * sizeof *q->zeros);
        for (uint64_t i = 0; q->zeros && i < sn * sk; i++) {
            double z;
            hc_read_scalar(tdata(c, ze), ze->t->dtype, i, &z);
            q->zeros[i] = (int32_t)z + q->zero_const;
        }
    }
    if (m->t[HC_ROLE_GIDX]) read_gidx(c, K, sk);
}

/* FP4 codes two per byte, element 2j in the low nibble. */
static void decode_ct_fp4(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    bool nv = m->scheme.fmt == HC_FMT_CT_NVFP4;
    const hc_ck_entry *we = need(c, HC_ROLE_WEIGHT, "weight_packed");
    const hc_ck_entry *se = need(c, HC_ROLE_SCALE, "weight_scale");
    const hc_ck_entry *ge = nv ? need(c, HC_ROLE_GSCALE, "weight_global_scale") : NULL;
    if (c->bad || !CHECK_DT(c, we, HC_DT_U8)) return;
    if (we->t->ndim != 2) {
        PROBLEM(c, we->name, "shape", "tensor '%s': weight_packed must be 2-D", we->name);
        return;
    }
    uint64_t N = we->t->shape[0], K = we->t->shape[1] * 2, gs = nv ? 16 : 32;
    const hc_ck_entry *sh = m->t[HC_ROLE_SHAPE];
    if (sh && sh->t->numel == 2) {
        double dn, dk;
        hc_read_scalar(tdata(c, sh), sh->t->dtype, 0, &dn);
        hc_read_scalar(tdata(c, sh), sh->t->dtype, 1, &dk);
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
    if (!alloc_q(c, 1, N, K, N, K / gs)) return;
    q->gn = 1, q->gk = gs, q->kind = HC_Q_FP4, q->bits = 4;
    if (q->codes) unpack_nibbles(tdata(c, we), N * K / 2, q->codes);
    q->packed = tdata(c, we), q->packed_row_bytes = K / 2;
    if (nv ? !CHECK_DT(c, se, HC_DT_F8_E4M3) : !CHECK_DT(c, se, HC_DT_U8, HC_DT_F8_E8M0)) return;
    if (!check_shape(c, se, 2, (uint64_t[]){N, K / gs}, "scale shape")) return;
    read_scales(c, se, !nv, N * K / gs, q->scales);
    const int *v = m->scheme.ct_version;
    if (!nv && v[0] == 0 && v[1] == 13) { /* 0.13.x wrote exponents two too low */
        for (uint64_t i = 0; i < N * K / gs; i++) q->scales[i] *= 4;
        snprintf(q->quirks, sizeof q->quirks, "mxfp4 scale x4 (compressed-tensors 0.13.x)");
    }
    if (nv) {
        if (!CHECK_DT(c, ge, HC_DT_F32, HC_DT_BF16, HC_DT_F16) || ge->t->numel != 1) return;
        hc_read_scalar(tdata(c, ge), ge->t->dtype, 0, &q->global_div);
        if (!isfinite(q->global_div) || q->global_div <= 0) {
            PROBLEM(c, ge->name, "global scale", "tensor '%s': global scale %g must be finite "
                    "and > 0", ge->name, q->global_div);
            return;
        }
    }
}

/* ---------------- GPTQ, AWQ ---------------- */

/* GPTQ and AWQ store scales [G, N]; the canonical grid is [N, G]. Also makes room for the
 * zero points, which both formats always carry. */
static bool scales_by_group_rows(dctx *c, const hc_ck_entry *se, uint64_t G, uint64_t N) {
    hc_qtensor *q = c->q;
    uint64_t cnt = G * N > 0 ? G * N : 1;
    double *tmp = malloc(cnt * sizeof *tmp);
    q->zeros = malloc(cnt * sizeof *q->zeros);
    if (!tmp || !q->zeros) {
        free(tmp);
        PROBLEM(c, c->m->name, "memory", "module '%s': out of memory", c->m->name);
        return false;
    }
    read_scales(c, se, false, G * N, tmp);
    for (uint64_t g = 0; g < G; g++)
        for (uint64_t n = 0; n < N; n++) q->scales[n * G + g] = tmp[g * N + n];
    free(tmp);
    return true;
}

/* GPTQ field i of a line of words (first word at base, next words stride apart): 32/b
 * fields per word, or for 3 bits runs of 32 fields in 3 words as a low-bit-first bitstream. */
static unsigned gptq_field(const void *d, uint64_t base, uint64_t stride, uint64_t i, int b) {
    if (b != 3) return field_words(d, base, stride, i, b);
    return field_stream(d, base + (i / 32) * 3 * stride, stride, i % 32, 3);
}

/* GPTQ v1 zero points, from the stored words into zeros [N][G]. GPTQModel writes v1 by
 * subtracting, from each whole qzeros word, the word with a 1 in every b-bit field
 * (0x11111111 at 4 bits), so a zero of 0 borrows from the next field (the top field's borrow
 * leaves the word, mod 2^32), and reads v1 by adding that word back: the sum's fields are the
 * zeros, in range by construction. "field + 1" agrees only where no field of the word was 0.
 * 3-bit fields straddle words, so no word constant applies: GPTQModel shifts each field,
 * z = (field + 1) mod 8, and so does this. */
static void gptq_v1_zeros(const void *zd, uint64_t G, uint64_t N, uint64_t zc, int b,
                          int32_t *zeros) {
    unsigned mask = (1u << b) - 1;
    if (b == 3) {
        for (uint64_t g = 0; g < G; g++)
            for (uint64_t n = 0; n < N; n++)
                zeros[n * G + g] = (int32_t)((gptq_field(zd, g * zc, 1, n, 3) + 1) & mask);
        return;
    }
    unsigned per = 32u / (unsigned)b;
    uint32_t ones = 0xFFFFFFFFu / mask; /* a 1 in every field: 0x55555555, 0x11111111, 0x01010101 */
    for (uint64_t g = 0; g < G; g++)
        for (uint64_t j = 0; j < zc; j++) {
            uint32_t w = word32(zd, g * zc + j) + ones; /* unsigned: wraps as GPTQModel's int32 */
            for (unsigned i = 0; i < per && j * per + i < N; i++)
                zeros[(j * per + i) * G + g] = (int32_t)((w >> (b * i)) & mask);
        }
}

static void decode_gptq(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    int b = m->scheme.bits;
    const hc_ck_entry *we = need(c, HC_ROLE_WEIGHT, "qweight");
    const hc_ck_entry *se = need(c, HC_ROLE_SCALE, "scales");
    const hc_ck_entry *ze = need(c, HC_ROLE_ZERO, "qzeros");
    if (c->bad || !CHECK_DT(c, we, HC_DT_I32) || !CHECK_DT(c, ze, HC_DT_I32) ||
        !CHECK_DT(c, se, HC_DT_F16, HC_DT_BF16, HC_DT_F32))
        return;
    if (we->t->ndim != 2 || (b == 3 && we->t->shape[0] % 3)) {
        PROBLEM(c, we->name, "shape", "tensor '%s': qweight must be 2-D (3-bit: rows a multiple "
                "of 3)", we->name);
        return;
    }
    uint64_t rows = we->t->shape[0], N = we->t->shape[1];
    uint64_t K = b == 3 ? rows / 3 * 32 : rows * (32u / (unsigned)b);
    uint64_t gs = m->scheme.group_size > 0 ? (uint64_t)m->scheme.group_size : K;
    uint64_t G = cdiv(K, gs);
    if (!check_shape(c, se, 2, (uint64_t[]){G, N}, "scales shape")) return;
    /* qzeros rows hold N fields in whole words (3-bit: whole runs of 32) */
    unsigned run = b == 3 ? 32u : 32u / (unsigned)b;
    uint64_t zc = b == 3 ? N / 32 * 3 : N / run;
    if (N % run) {
        PROBLEM(c, ze->name, "qzeros shape", "tensor '%s': qzeros shape: N=%llu columns do not "
                "fill whole %s (a multiple of %u)", ze->name, (unsigned long long)N,
                b == 3 ? "3-bit runs" : "words", run);
        return;
    }
    if (!check_shape(c, ze, 2, (uint64_t[]){G, zc}, "qzeros shape")) return;
    if (!alloc_q(c, 1, N, K, N, G)) return;
    q->gn = 1, q->gk = gs, q->kind = HC_Q_INT, q->bits = b;
    const void *d = tdata(c, we);
    for (uint64_t n = 0; q->codes && n < N; n++)
        for (uint64_t k = 0; k < K; k++) q->codes[n * K + k] = (uint8_t)gptq_field(d, n, N, k, b);
    if (b == 4) /* each word is 8 consecutive K codes of one column, low nibble first */
        q->packed = d, q->packed_row_bytes = K / 2, q->packed_col_stride = N;
    if (q->codes) q->code_min = codes_min(q->codes, N * K);
    else if (b == 4) q->code_min = words_have_zero_nibble(d, rows * N) ? 0 : 1;
    if (!scales_by_group_rows(c, se, G, N)) return;
    /* zero fields (v2: z; v1: below). A symmetric checkpoint tells the truth by its data. */
    const void *zd = tdata(c, ze);
    bool v2 = m->scheme.gptq_v2;
    uint64_t at_half = 0, at_half_m1 = 0;
    unsigned half = 1u << (b - 1);
    for (uint64_t g = 0; g < G; g++)
        for (uint64_t n = 0; n < N; n++) {
            unsigned f = gptq_field(zd, g * zc, 1, n, b); /* packed along N in row g */
            q->zeros[n * G + g] = (int32_t)f;
            at_half += f == half;
            at_half_m1 += f == half - 1;
        }
    if (m->scheme.symmetric && !v2 && at_half == G * N) {
        hc_findings_add(c->f, HC_SEV_WARNING, ze->name, "v2 zero points", 0, NULL, 0,
                        "tensor '%s': checkpoint_format says gptq (v1) but every zero field is "
                        "%u, the gptq_v2 symmetric value; reading them as v2", ze->name, half);
        v2 = true;
    } else if (m->scheme.symmetric && v2 && at_half_m1 == G * N) {
        hc_findings_add(c->f, HC_SEV_WARNING, ze->name, "v1 zero points", 0, NULL, 0,
                        "tensor '%s': checkpoint_format says gptq_v2 but every zero field is "
                        "%u, the v1 symmetric value; reading them as v1", ze->name, half - 1);
        v2 = false;
    }
    if (!v2) gptq_v1_zeros(zd, G, N, zc, b, q->zeros);
    snprintf(q->quirks, sizeof q->quirks, "zero points %s", v2 ? "gptq_v2 (z)"
             : b == 3 ? "gptq v1 (field + 1 mod 8)" : "gptq v1 (whole-word add)");
    read_gidx(c, K, G);
}

static void decode_awq(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = need(c, HC_ROLE_WEIGHT, "qweight");
    const hc_ck_entry *se = need(c, HC_ROLE_SCALE, "scales");
    const hc_ck_entry *ze = need(c, HC_ROLE_ZERO, "qzeros");
    if (c->bad || !CHECK_DT(c, we, HC_DT_I32) || !CHECK_DT(c, ze, HC_DT_I32) ||
        !CHECK_DT(c, se, HC_DT_F16, HC_DT_BF16, HC_DT_F32))
        return;
    if (we->t->ndim != 2) {
        PROBLEM(c, we->name, "shape", "tensor '%s': qweight must be 2-D", we->name);
        return;
    }
    uint64_t K = we->t->shape[0], N = we->t->shape[1] * 8;
    uint64_t gs = m->scheme.group_size > 0 ? (uint64_t)m->scheme.group_size : K;
    if (gs == 0 || K % gs) {
        PROBLEM(c, we->name, "divisible", "tensor '%s': K=%llu is not divisible by group_size "
                "%llu", we->name, (unsigned long long)K, (unsigned long long)gs);
        return;
    }
    uint64_t G = K / gs;
    if (!check_shape(c, se, 2, (uint64_t[]){G, N}, "scales shape") ||
        !check_shape(c, ze, 2, (uint64_t[]){G, N / 8}, "qzeros shape"))
        return;
    if (!alloc_q(c, 1, N, K, N, G)) return;
    q->gn = 1, q->gk = gs, q->kind = HC_Q_INT, q->bits = 4;
    static const unsigned nib[8] = {0, 4, 1, 5, 2, 6, 3, 7}; /* column j%8 -> nibble */
    const void *d = tdata(c, we), *zd = tdata(c, ze);
    for (uint64_t k = 0; q->codes && k < K; k++)
        for (uint64_t n = 0; n < N; n++)
            q->codes[n * K + k] = (uint8_t)((word32(d, k * (N / 8) + n / 8) >> (4 * nib[n % 8])) & 15);
    if (!scales_by_group_rows(c, se, G, N)) return;
    for (uint64_t g = 0; g < G; g++)
        for (uint64_t n = 0; n < N; n++)
            q->zeros[n * G + g] = (int32_t)((word32(zd, g * (N / 8) + n / 8) >> (4 * nib[n % 8])) & 15);
}

/* ---------------- gpt-oss fused MXFP4 experts ---------------- */

static void decode_gptoss(dctx *c) {
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = need(c, HC_ROLE_WEIGHT, "_blocks");
    const hc_ck_entry *se = need(c, HC_ROLE_SCALE, "_scales");
    if (c->bad || !CHECK_DT(c, we, HC_DT_U8) || !CHECK_DT(c, se, HC_DT_U8, HC_DT_F8_E8M0)) return;
    if (we->t->ndim != 4 || we->t->shape[3] != 16) {
        PROBLEM(c, we->name, "shape", "tensor '%s': blocks must be [E, out, in/32, 16]", we->name);
        return;
    }
    uint64_t E = we->t->shape[0], R = we->t->shape[1], C = we->t->shape[2];
    if (!check_shape(c, se, 3, (uint64_t[]){E, R, C}, "scales shape")) return;
    if (!alloc_q(c, E, R, C * 32, R, C)) return;
    q->gn = 1, q->gk = 32, q->kind = HC_Q_FP4, q->bits = 4, q->ndim = 3;
    if (q->codes) unpack_nibbles(tdata(c, we), E * R * C * 16, q->codes);
    q->packed = tdata(c, we), q->packed_row_bytes = C * 16;
    read_scales(c, se, true, E * R * C, q->scales);
}

/* A tiled module of a container: every value through the runtime's layout decoder (the path
 * the CPU executor takes), columns put back in source order, as plain float64 values. */
static void decode_tiles(dctx *c) {
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = c->m->t[HC_ROLE_WEIGHT];
    hc_tile_params p;
    cJSON *j = cJSON_Parse(we->info->layout_params);
    hc_err perr = {0};
    hc_status st = hc_tile_params_parse(j, we->info->layout, &p, we->name, &perr);
    cJSON_Delete(j);
    if (st) {
        PROBLEM(c, we->name, "layout", "%s", perr.msg);
        return;
    }
    const int32_t *perm = NULL;
    if (p.perm) {
        char *pn = hc_asprintf("%s.perm", c->m->name);
        const hc_ck_entry *pe = pn ? hc_ckpt_find(c->md->ck, pn) : NULL;
        free(pn);
        if (!pe || pe->t->dtype != HC_DT_I32 || pe->t->numel != p.K) {
            PROBLEM(c, we->name, "perm", "module '%s': the act-order permutation '%s.perm' is "
                    "missing or not I32 [%llu]", c->m->name, c->m->name, (unsigned long long)p.K);
            return;
        }
        perm = hc_ckpt_data(c->md->ck, pe);
        for (uint64_t k = 0; k < p.K; k++)
            if (perm[k] < 0 || (uint64_t)perm[k] >= p.K) {
                PROBLEM(c, pe->name, "perm", "tensor '%s': entry %llu is out of range", pe->name,
                        (unsigned long long)k);
                return;
            }
    }
    q->kind = HC_Q_PLAIN;
    q->E = p.E, q->N = p.N, q->K = p.K;
    q->ndim = p.E > 1 ? 3 : 2;
    uint64_t dims[3] = {p.E, p.N, p.K};
    memcpy(q->plain_shape, p.E > 1 ? dims : dims + 1, (size_t)q->ndim * sizeof(uint64_t));
    uint64_t numel = p.E * p.N * p.K;
    q->plain = malloc((numel > 0 ? numel : 1) * sizeof(double));
    if (!q->plain) {
        PROBLEM(c, we->name, "memory", "tensor '%s': out of memory", we->name);
        return;
    }
    const uint8_t *d = tdata(c, we);
    hc_core_params cp;
    hc_tile_core_params(&p, &cp);
    for (uint64_t e = 0; e < p.E; e++)
        for (uint64_t n = 0; n < p.N; n++)
            for (uint64_t kp = 0; kp < p.K; kp++) {
                const uint8_t *chunk = d + hc_tile_offset(&p, e, n / HC_TILE_N, kp / HC_TILE_K);
                uint64_t k = perm ? (uint64_t)perm[kp] : kp;
                q->plain[(e * p.N + n) * p.K + k] =
                    hc_core_value(&cp, chunk, (unsigned)(n % HC_TILE_N), (unsigned)(kp % HC_TILE_K));
            }
}

static void decode_plain(dctx *c) {
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = need(c, HC_ROLE_WEIGHT, "weight");
    if (c->bad) return;
    double v;
    if (!hc_read_scalar(tdata(c, we), we->t->dtype, 0, &v) && we->t->numel) {
        PROBLEM(c, we->name, "dtype", "tensor '%s': dtype %s cannot be read as numbers",
                we->name, hc_dtype_name(we->t->dtype));
        return;
    }
    q->kind = HC_Q_PLAIN;
    q->ndim = we->t->ndim;
    memcpy(q->plain_shape, we->t->shape, sizeof q->plain_shape);
    q->E = 1;
    q->N = we->t->ndim >= 2 ? we->t->shape[0] : 1;
    q->K = we->t->ndim >= 1 ? we->t->numel / (q->N ? q->N : 1) : 1;
    q->plain = malloc((we->t->numel ? we->t->numel : 1) * sizeof(double));
    if (!q->plain) {
        PROBLEM(c, we->name, "memory", "tensor '%s': out of memory", we->name);
        return;
    }
    for (uint64_t i = 0; i < we->t->numel; i++)
        hc_read_scalar(tdata(c, we), we->t->dtype, i, &q->plain[i]);
}

void hc_module_release(const hc_model *md, const hc_module *m) {
    for (int r = 0; r < HC_ROLE_COUNT; r++)
        if (m->t[r]) hc_ckpt_release(md->ck, m->t[r]);
}

/* The scheme's numbers, whatever the config said: refuse what would divide by zero or shift
 * out of range before any decoder runs. */
static bool scheme_sane(dctx *c) {
    const hc_scheme *s = &c->m->scheme;
    if (s->fmt == HC_FMT_PLAIN || s->fmt == HC_FMT_TILES) return true;
    if (s->bits < 1 || s->bits > 8) {
        PROBLEM(c, c->m->name, "scheme", "module '%s': %d-bit codes are not supported (1..8)",
                c->m->name, s->bits);
        return false;
    }
    bool grouped = s->strategy == HC_STRAT_GROUP || s->strategy == HC_STRAT_TENSOR_GROUP ||
                   s->fmt == HC_FMT_GPTQ || s->fmt == HC_FMT_AWQ;
    if (grouped && s->group_size <= 0 && !(s->fmt == HC_FMT_GPTQ && s->group_size == -1)) {
        PROBLEM(c, c->m->name, "scheme", "module '%s': group_size %lld is not valid", c->m->name,
                (long long)s->group_size);
        return false;
    }
    if (s->strategy == HC_STRAT_BLOCK && (s->block[0] == 0 || s->block[1] == 0)) {
        PROBLEM(c, c->m->name, "scheme", "module '%s': block sizes must be positive", c->m->name);
        return false;
    }
    return true;
}

hc_status hc_module_decode(const hc_model *md, const hc_module *m, unsigned flags, hc_qtensor *q,
                           hc_findings *f, hc_err *err) {
    memset(q, 0, sizeof *q);
    q->ndim = 2;
    q->fmt = m->scheme.fmt;
    q->code_min = -1;
    dctx c = {.md = md, .m = m, .f = f, .q = q, .codes = !(flags & HC_DECODE_NO_CODES)};
    if (m->conflict) { /* already reported when the modules were formed */
        hc_qtensor_free(q);
        return hc_fail(err, HC_INVALID, "module '%s' has two tensors in one role", m->name);
    }
    if (m->unresolved) { /* its tensors are not numbers as stored: never read them as such */
        const char *why = "see the configuration findings";
        for (size_t i = 0; i < md->config_findings.n; i++)
            if (md->config_findings.v[i].severity == HC_SEV_ERROR && md->config_findings.v[i].message) {
                why = md->config_findings.v[i].message;
                break;
            }
        PROBLEM(&c, m->name, "scheme", "module '%s' carries quantized tensors but has no "
                "quantization scheme: %s", m->name, why);
        hc_qtensor_free(q);
        return hc_fail(err, HC_INVALID, "module '%s' cannot be decoded (see the findings)",
                       m->name);
    }
    switch (scheme_sane(&c) ? m->scheme.fmt : (hc_fmt)-1) {
    case HC_FMT_PLAIN: decode_plain(&c); break;
    case HC_FMT_CT_PACK: decode_ct_pack(&c); break;
    case HC_FMT_CT_INT:
    case HC_FMT_CT_FLOAT:
    case HC_FMT_CT_MXFP8:
    case HC_FMT_FP8_SCALE_INV: decode_ct_unpacked(&c); break;
    case HC_FMT_CT_NVFP4:
    case HC_FMT_CT_MXFP4: decode_ct_fp4(&c); break;
    case HC_FMT_GPTQ: decode_gptq(&c); break;
    case HC_FMT_AWQ: decode_awq(&c); break;
    case HC_FMT_GPTOSS_MXFP4: decode_gptoss(&c); break;
    case HC_FMT_TILES: decode_tiles(&c); break;
    }
    if (c.bad) {
        hc_qtensor_free(q);
        return hc_fail(err, HC_INVALID, "module '%s' cannot be decoded (see the findings)",
                       m->name);
    }
    return HC_OK;
}
