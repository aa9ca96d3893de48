/* quant.c: element decoders (fp4, fp8, e8m0, f16, bf16), the canonical tensor's dequant and
 * the findings list shared by every decoder and by validate. */
#include "quant.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hc_fmt_name(hc_fmt f) {
    switch (f) {
#define HC_FMT_STR(n, s) \
    case HC_FMT_##n: return s;
        HC_FMT_MAP(HC_FMT_STR)
#undef HC_FMT_STR
    }
    return "?";
}

double hc_fp4_e2m1(unsigned code) {
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    double v = mag[code & 7];
    return (code & 8) ? -v : v;
}

double hc_fp8_e4m3(unsigned b) {
    unsigned e = (b >> 3) & 15, m = b & 7;
    double s = (b & 0x80) ? -1.0 : 1.0;
    if (e == 15 && m == 7) return NAN;
    if (e == 0) return s * ldexp((double)m, -9); /* subnormal: m/8 * 2^-6 */
    return s * ldexp(1.0 + (double)m / 8.0, (int)e - 7);
}

double hc_fp8_e5m2(unsigned b) {
    unsigned e = (b >> 2) & 31, m = b & 3;
    double s = (b & 0x80) ? -1.0 : 1.0;
    if (e == 31) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, -16);
    return s * ldexp(1.0 + (double)m / 4.0, (int)e - 15);
}

double hc_e8m0(unsigned b) { return (b & 0xFF) == 0xFF ? NAN : ldexp(1.0, (int)(b & 0xFF) - 127); }

static double half_to_double(uint16_t h) {
    unsigned e = (h >> 10) & 31, m = h & 1023;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 31) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, -24);
    return s * ldexp(1.0 + (double)m / 1024.0, (int)e - 15);
}

bool hc_read_scalar(const void *data, hc_dtype dt, uint64_t i, double *out) {
    const unsigned char *p = data;
    switch (dt) {
    case HC_DT_F32: {
        float f;
        memcpy(&f, p + 4 * i, 4);
        *out = f;
        return true;
    }
    case HC_DT_F64: memcpy(out, p + 8 * i, 8); return true;
    case HC_DT_F16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        *out = half_to_double(h);
        return true;
    }
    case HC_DT_BF16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        *out = f;
        return true;
    }
    case HC_DT_F8_E4M3: *out = hc_fp8_e4m3(p[i]); return true;
    case HC_DT_F8_E5M2: *out = hc_fp8_e5m2(p[i]); return true;
    case HC_DT_F8_E8M0: *out = hc_e8m0(p[i]); return true;
    case HC_DT_U8:
    case HC_DT_BOOL: *out = p[i]; return true;
    case HC_DT_I8: *out = (int8_t)p[i]; return true;
    case HC_DT_I16: {
        int16_t v;
        memcpy(&v, p + 2 * i, 2);
        *out = v;
        return true;
    }
    case HC_DT_U16: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        *out = v;
        return true;
    }
    case HC_DT_I32: {
        int32_t v;
        memcpy(&v, p + 4 * i, 4);
        *out = v;
        return true;
    }
    case HC_DT_U32: {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        *out = v;
        return true;
    }
    case HC_DT_I64: {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        *out = (double)v;
        return true;
    }
    case HC_DT_U64: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        *out = (double)v;
        return true;
    }
    default: return false;
    }
}

void hc_qtensor_free(hc_qtensor *q) {
    if (!q) return;
    free(q->codes);
    free(q->plain);
    free(q->scales);
    free(q->zeros);
    free(q->g_idx);
    memset(q, 0, sizeof *q);
}

uint64_t hc_qtensor_numel(const hc_qtensor *q) {
    if (q->kind == HC_Q_PLAIN) {
        uint64_t n = 1;
        for (int d = 0; d < q->ndim; d++) n *= q->plain_shape[d];
        return n;
    }
    return q->E * q->N * q->K;
}

double hc_qtensor_value(const hc_qtensor *q, uint64_t e, uint64_t n, uint64_t k) {
    uint64_t i = (e * q->N + n) * q->K + k;
    if (q->kind == HC_Q_PLAIN) return q->plain[i];
    uint64_t g = q->g_idx ? (uint64_t)q->g_idx[e * q->K + k] : k / q->gk;
    uint64_t si = (e * q->sn + n / q->gn) * q->sk + g;
    double s = q->scales[si];
    unsigned u = q->codes[i];
    switch (q->kind) {
    case HC_Q_INT: {
        double z = q->zeros ? (double)q->zeros[si] : (double)q->zero_const;
        return ((double)u - z) * s;
    }
    case HC_Q_FP4: return q->global_div != 0 ? hc_fp4_e2m1(u) * (s / q->global_div)
                                             : hc_fp4_e2m1(u) * s;
    case HC_Q_FP8_E4M3: return hc_fp8_e4m3(u) * s;
    case HC_Q_FP8_E5M2: return hc_fp8_e5m2(u) * s;
    case HC_Q_PLAIN: break;
    }
    return NAN;
}

void hc_qtensor_dequant(const hc_qtensor *q, float *out) {
    if (q->kind == HC_Q_PLAIN) {
        uint64_t n = hc_qtensor_numel(q);
        for (uint64_t i = 0; i < n; i++) out[i] = (float)q->plain[i];
        return;
    }
    for (uint64_t e = 0; e < q->E; e++)
        for (uint64_t n = 0; n < q->N; n++)
            for (uint64_t k = 0; k < q->K; k++)
                out[(e * q->N + n) * q->K + k] = (float)hc_qtensor_value(q, e, n, k);
}

void hc_findings_add(hc_findings *f, hc_severity sev, const char *tensor, const char *rule,
                     uint64_t count, const int *experts, size_t nexperts, const char *fmt, ...) {
    hc_finding *v = realloc(f->v, (f->n + 1) * sizeof *v);
    if (!v) return;
    f->v = v;
    hc_finding *x = &v[f->n];
    memset(x, 0, sizeof *x);
    x->severity = sev;
    x->tensor = hc_strdup(tensor ? tensor : "");
    x->rule = hc_strdup(rule ? rule : "");
    x->count = count;
    if (nexperts) {
        x->experts = malloc(nexperts * sizeof *x->experts);
        if (x->experts) {
            memcpy(x->experts, experts, nexperts * sizeof *x->experts);
            x->nexperts = nexperts;
        }
    }
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&x->message, fmt, ap) < 0) x->message = NULL;
    va_end(ap);
    f->n++;
}

void hc_findings_append(hc_findings *dst, hc_findings *src) {
    if (!src->n) return;
    hc_finding *v = realloc(dst->v, (dst->n + src->n) * sizeof *v);
    if (!v) {
        hc_findings_free(src);
        return;
    }
    memcpy(v + dst->n, src->v, src->n * sizeof *v);
    dst->v = v;
    dst->n += src->n;
    free(src->v);
    src->v = NULL;
    src->n = 0;
}

void hc_finding_clear(hc_finding *x) {
    free(x->tensor);
    free(x->rule);
    free(x->experts);
    free(x->message);
    memset(x, 0, sizeof *x);
}

void hc_findings_free(hc_findings *f) {
    for (size_t i = 0; i < f->n; i++) hc_finding_clear(&f->v[i]);
    free(f->v);
    f->v = NULL;
    f->n = 0;
}

size_t hc_findings_errors(const hc_findings *f) {
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) n += f->v[i].severity == HC_SEV_ERROR;
    return n;
}
