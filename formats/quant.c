/* quant.c: element decoders (fp4, fp8, e8m0, f16, bf16), the canonical tensor's dequant and
 * the findings list shared by every decoder and by validate. */
#include "quant.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hc__fmt_name(hc_fmt f) {
    switch (f) {
#define HC_FMT_STR(n, s) \
    case HC_FMT_##n: return s;
        HC_FMT_MAP(HC_FMT_STR)
#undef HC_FMT_STR
    }
    return "?";
}

void hc__qtensor_free(hc_qtensor *q) {
    if (!q) return;
    free(q->codes);
    free(q->plain);
    free(q->scales);
    free(q->zeros);
    free(q->g_idx);
    memset(q, 0, sizeof *q);
}

uint64_t hc__qtensor_numel(const hc_qtensor *q) {
    if (q->kind == HC_Q_PLAIN) {
        uint64_t n = 1;
        for (int d = 0; d < q->ndim; d++) n *= q->plain_shape[d];
        return n;
    }
    return q->E * q->N * q->K;
}

double hc__qtensor_value(const hc_qtensor *q, uint64_t e, uint64_t n, uint64_t k) {
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
    case HC_Q_FP4: return q->global_div != 0 ? hc__fp4_e2m1(u) * (s / q->global_div)
                                             : hc__fp4_e2m1(u) * s;
    case HC_Q_FP8_E4M3: return q->scale_divides ? hc__fp8_e4m3(u) / s : hc__fp8_e4m3(u) * s;
    case HC_Q_FP8_E5M2: return q->scale_divides ? hc__fp8_e5m2(u) / s : hc__fp8_e5m2(u) * s;
    case HC_Q_PLAIN: break;
    }
    return NAN;
}

void hc__qtensor_dequant(const hc_qtensor *q, float *out) {
    if (q->kind == HC_Q_PLAIN) {
        uint64_t n = hc__qtensor_numel(q);
        for (uint64_t i = 0; i < n; i++) out[i] = (float)q->plain[i];
        return;
    }
    for (uint64_t e = 0; e < q->E; e++)
        for (uint64_t n = 0; n < q->N; n++)
            for (uint64_t k = 0; k < q->K; k++)
                out[(e * q->N + n) * q->K + k] = (float)hc__qtensor_value(q, e, n, k);
}

/* Room for need findings: the array holds the power of two at or above n (0 for none), so a
 * report of many findings grows geometrically (adding one at a time was quadratic). */
static size_t pow2_at_least(size_t n) {
    size_t c = 1;
    while (c < n && c <= SIZE_MAX / 2) c *= 2;
    return n ? c : 0;
}
static bool findings_reserve(hc_findings *f, size_t need) {
    if (need <= pow2_at_least(f->n)) return true;
    size_t cap = pow2_at_least(need);
    if (cap < need || cap > SIZE_MAX / sizeof *f->v) return false;
    hc_finding *v = realloc(f->v, cap * sizeof *v);
    if (!v) return false;
    f->v = v;
    return true;
}

void hc__findings_add(hc_findings *f, hc_severity sev, const char *tensor, const char *rule,
                     uint64_t count, const int *experts, size_t nexperts, const char *fmt, ...) {
    if (!findings_reserve(f, f->n + 1)) return;
    hc_finding *v = f->v;
    hc_finding *x = &v[f->n];
    memset(x, 0, sizeof *x);
    x->severity = sev;
    x->tensor = hc__strdup(tensor ? tensor : "");
    x->rule = hc__strdup(rule ? rule : "");
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

void hc__findings_append(hc_findings *dst, hc_findings *src) {
    if (!src->n) return;
    if (!findings_reserve(dst, dst->n + src->n)) {
        hc__findings_free(src);
        return;
    }
    memcpy(dst->v + dst->n, src->v, src->n * sizeof *dst->v);
    dst->n += src->n;
    free(src->v);
    src->v = NULL;
    src->n = 0;
}

void hc__finding_clear(hc_finding *x) {
    free(x->tensor);
    free(x->rule);
    free(x->experts);
    free(x->message);
    memset(x, 0, sizeof *x);
}

void hc__findings_free(hc_findings *f) {
    for (size_t i = 0; i < f->n; i++) hc__finding_clear(&f->v[i]);
    free(f->v);
    f->v = NULL;
    f->n = 0;
}

size_t hc__findings_errors(const hc_findings *f) {
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) n += f->v[i].severity == HC_SEV_ERROR;
    return n;
}
