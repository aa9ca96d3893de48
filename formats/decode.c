/* decode.c: hc__module_decode, which dispatches a module to its format's decoder
 * (decode_ct.c: compressed-tensors and fp8 weight_scale_inv; decode_gptq.c: GPTQ, AWQ and
 * gpt-oss), the readers every decoder shares (decode_int.h), and the unquantized and tiled
 * (container) modules. Each decoder produces the canonical quantized tensor (quant.h); layout
 * facts: ../shared/docs/FORMATS.md. Structural problems (shapes, packed widths, divisibility,
 * g_idx range) are reported as findings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_int.h"
#include "layout.h"

/* The tensor of a role, or a finding naming what is missing. */
const hc_ck_entry *hc__dec_need(dctx *c, hc_role r, const char *what) {
    const hc_ck_entry *e = c->m->t[r];
    if (!e) PROBLEM(c, c->m->name, "missing tensor", "module '%s' (%s): missing %s tensor",
                    c->m->name, hc__fmt_name(c->m->scheme.fmt), what);
    return e;
}

bool hc__dec_check_dtype(dctx *c, const hc_ck_entry *e, const hc_dtype *ok, size_t nok) {
    for (size_t i = 0; i < nok; i++)
        if (e->t->dtype == ok[i]) return true;
    PROBLEM(c, e->name, "dtype", "tensor '%s': dtype %s is not valid for %s", e->name,
            hc_dtype_name(e->t->dtype), hc__fmt_name(c->m->scheme.fmt));
    return false;
}

/* Checks a tensor's shape; rule names the check for the report, ctx (or NULL) the
 * configuration the expected shape follows from. */
bool hc__dec_check_shape_ctx(dctx *c, const hc_ck_entry *e, int ndim, const uint64_t *want,
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

bool hc__dec_check_shape(dctx *c, const hc_ck_entry *e, int ndim, const uint64_t *want,
                         const char *rule) {
    return hc__dec_check_shape_ctx(c, e, ndim, want, rule, NULL);
}

bool hc__dec_alloc_q(dctx *c, uint64_t E, uint64_t N, uint64_t K, uint64_t sn, uint64_t sk) {
    hc_qtensor *q = c->q;
    uint64_t n, ns;
    if (!hc__mul_u64(E, N, &n) || !hc__mul_u64(n, K, &n) || !hc__mul_u64(E, sn, &ns) ||
        !hc__mul_u64(ns, sk, &ns) || n > (1ull << 40) || ns > (1ull << 40)) {
        PROBLEM(c, c->m->name, "size", "module '%s': element count overflows", c->m->name);
        return false;
    }
    q->E = E, q->N = N, q->K = K, q->sn = sn, q->sk = sk;
    /* the decoders set q->packed first: the natural-order view may stand in for the codes */
    bool codes = !(c->flags & HC_DECODE_NO_CODES) &&
                 !((c->flags & HC_DECODE_CODES_UNPACKED) && q->packed);
    q->codes = codes ? malloc(n ? n : 1) : NULL;
    q->scales = malloc((ns ? ns : 1) * sizeof(double));
    if ((codes && !q->codes) || !q->scales) {
        PROBLEM(c, c->m->name, "memory", "module '%s': out of memory", c->m->name);
        return false;
    }
    return true;
}

/* Reads n scale values (any float dtype, E4M3, or E8M0 when e8m0) into out. */
void hc__dec_read_scales(const dctx *c, const hc_ck_entry *e, bool e8m0, uint64_t n, double *out) {
    const uint8_t *d = hc__dec_data(c, e);
    if (e8m0) {
        for (uint64_t i = 0; i < n; i++) out[i] = hc__e8m0(d[i]);
    } else if (e->t->dtype == HC_DT_BF16) { /* the common case, without a switch per value */
        for (uint64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)(d[2 * i] | d[2 * i + 1] << 8) << 16;
            float f;
            memcpy(&f, &u, 4);
            out[i] = f;
        }
    } else {
        for (uint64_t i = 0; i < n; i++) hc__read_scalar(d, e->t->dtype, i, &out[i]);
    }
    c->q->scale_dtype = e8m0 ? HC_DT_F8_E8M0 : e->t->dtype;
}

/* Field k of a packed row, in one of the two compressed-tensors / GPTQ bit layouts:
 * fields: 32/b fields per word, low first, unused high bits (old compressed-tensors, GPTQ b|32);
 * stream: a low-bit-first bitstream where fields may straddle words. */
unsigned hc__dec_field_words(const void *d, uint64_t base, uint64_t stride, uint64_t k, int b) {
    unsigned per = 32u / (unsigned)b;
    uint32_t w = hc__dec_word32(d, base + (k / per) * stride);
    return (w >> (b * (k % per))) & ((1u << b) - 1);
}
unsigned hc__dec_field_stream(const void *d, uint64_t base, uint64_t stride, uint64_t k, int b) {
    uint64_t bit = k * (uint64_t)b, wi = bit / 32;
    unsigned off = (unsigned)(bit % 32);
    uint64_t v = hc__dec_word32(d, base + wi * stride) >> off;
    if (off + (unsigned)b > 32) v |= (uint64_t)hc__dec_word32(d, base + (wi + 1) * stride) << (32 - off);
    return (unsigned)(v & ((1u << b) - 1));
}

bool hc__dec_read_gidx(dctx *c, uint64_t K, uint64_t G) {
    const hc_ck_entry *ge = c->m->t[HC_ROLE_GIDX];
    if (!ge) return true;
    if (!CHECK_DT(c, ge, HC_DT_I32, HC_DT_I64) || !hc__dec_check_shape(c, ge, 1, &K, "g_idx shape"))
        return false;
    int32_t *g = malloc((K ? K : 1) * sizeof *g);
    if (!g) return false;
    uint64_t bad = 0, neg = 0, trivial = 1;
    for (uint64_t k = 0; k < K; k++) {
        double v;
        hc__read_scalar(hc__dec_data(c, ge), ge->t->dtype, k, &v);
        if (v == -1) neg++;
        else if (v < 0 || v >= (double)G) bad++;
        g[k] = (int32_t)v;
        trivial &= (uint64_t)g[k] == k / c->q->gk;
    }
    if (bad) {
        hc__findings_add(c->f, HC_SEV_ERROR, ge->name, "g_idx range", bad, NULL, 0,
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
bool hc__dec_words_have_zero_nibble(const void *d, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint32_t w = hc__dec_word32(d, i);
        if ((w - 0x11111111u) & ~w & 0x88888888u) return true;
    }
    return false;
}

/* Two FP4 codes per byte, element 2j in the low nibble. */
void hc__dec_unpack_nibbles(const uint8_t *d, uint64_t nbytes, uint8_t *out) {
    for (uint64_t i = 0; i < nbytes; i++) {
        out[2 * i] = d[i] & 15;
        out[2 * i + 1] = d[i] >> 4;
    }
}

/* A tiled module of a container: every value through the runtime's layout decoder (the path
 * the CPU executor takes), columns put back in source order, as plain float64 values. */
static void decode_tiles(dctx *c) {
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = c->m->t[HC_ROLE_WEIGHT];
    hc_tile_params p;
    cJSON *j = cJSON_Parse(we->info->layout_params);
    hc_err perr = {0};
    hc_status st = hc__tile_params_parse(j, we->info->layout, &p, we->name, &perr);
    cJSON_Delete(j);
    if (st) {
        PROBLEM(c, we->name, "layout", "%s", perr.msg);
        return;
    }
    const int32_t *perm = NULL;
    if (p.perm) {
        char *pn = hc__asprintf("%s.perm", c->m->name);
        const hc_ck_entry *pe = pn ? hc__ckpt_find(c->md->ck, pn) : NULL;
        free(pn);
        if (!pe || pe->t->dtype != HC_DT_I32 || pe->t->numel != p.K) {
            PROBLEM(c, we->name, "perm", "module '%s': the act-order permutation '%s.perm' is "
                    "missing or not I32 [%llu]", c->m->name, c->m->name, (unsigned long long)p.K);
            return;
        }
        perm = hc__ckpt_data(c->md->ck, pe);
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
    const uint8_t *d = hc__dec_data(c, we);
    hc_core_params cp;
    hc__tile_core_params(&p, &cp);
    for (uint64_t e = 0; e < p.E; e++)
        for (uint64_t n = 0; n < p.N; n++)
            for (uint64_t kp = 0; kp < p.K; kp++) {
                const uint8_t *chunk = d + hc__tile_offset(&p, e, n / HC_TILE_N, kp / HC_TILE_K);
                uint64_t k = perm ? (uint64_t)perm[kp] : kp;
                q->plain[(e * p.N + n) * p.K + k] =
                    hc__core_value(&cp, chunk, (unsigned)(n % HC_TILE_N), (unsigned)(kp % HC_TILE_K));
            }
}

static void decode_plain(dctx *c) {
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = hc__dec_need(c, HC_ROLE_WEIGHT, "weight");
    if (c->bad) return;
    double v;
    if (!hc__read_scalar(hc__dec_data(c, we), we->t->dtype, 0, &v) && we->t->numel) {
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
        hc__read_scalar(hc__dec_data(c, we), we->t->dtype, i, &q->plain[i]);
}

void hc__module_release(const hc_model *md, const hc_module *m) {
    for (int r = 0; r < HC_ROLE_COUNT; r++)
        if (m->t[r]) hc__ckpt_release(md->ck, m->t[r]);
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

hc_status hc__module_decode(const hc_model *md, const hc_module *m, unsigned flags, hc_qtensor *q,
                           hc_findings *f, hc_err *err) {
    memset(q, 0, sizeof *q);
    q->ndim = 2;
    q->fmt = m->scheme.fmt;
    q->code_min = -1;
    dctx c = {.md = md, .m = m, .f = f, .q = q, .flags = flags};
    if (m->conflict) { /* already reported when the modules were formed */
        hc__qtensor_free(q);
        return hc__fail(err, HC_INVALID, "module '%s' has two tensors in one role", m->name);
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
        hc__qtensor_free(q);
        return hc__fail(err, HC_INVALID, "module '%s' cannot be decoded (see the findings)",
                       m->name);
    }
    switch (scheme_sane(&c) ? m->scheme.fmt : (hc_fmt)-1) {
    case HC_FMT_PLAIN: decode_plain(&c); break;
    case HC_FMT_CT_PACK: hc__dec_ct_pack(&c); break;
    case HC_FMT_CT_INT:
    case HC_FMT_CT_FLOAT:
    case HC_FMT_CT_MXFP8:
    case HC_FMT_FP8_SCALE_INV: hc__dec_ct_unpacked(&c); break;
    case HC_FMT_CT_NVFP4:
    case HC_FMT_CT_MXFP4: hc__dec_ct_fp4(&c); break;
    case HC_FMT_GPTQ: hc__dec_gptq(&c); break;
    case HC_FMT_AWQ: hc__dec_awq(&c); break;
    case HC_FMT_GPTOSS_MXFP4: hc__dec_gptoss(&c); break;
    case HC_FMT_TILES: decode_tiles(&c); break;
    }
    if (c.bad) {
        hc__qtensor_free(q);
        return hc__fail(err, HC_INVALID, "module '%s' cannot be decoded (see the findings)",
                       m->name);
    }
    return HC_OK;
}
