/* dequant.c: the effective float32 weights of one module of a checkpoint (hc_dequant,
 * include/hconvert.h): the configuration refusals that make a checkpoint or a module
 * unreadable, the decode, and a per-expert MoE layer stacked into [E, N, K]. The CLI's
 * `dequant` and the bindings call it; it prints nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "hconvert.h"
#include "quant.h"

/* A configuration refusal that makes the whole checkpoint unreadable (formats/ marks them),
 * or NULL. */
static const char *checkpoint_refusal(const hc_model *md) {
    for (size_t i = 0; i < md->config_findings.n; i++)
        if (md->config_findings.v[i].severity == HC_SEV_ERROR &&
            md->config_findings.v[i].whole_checkpoint)
            return md->config_findings.v[i].message;
    return NULL;
}

/* One warning more for the result; out of memory drops the warning, not the result. */
static void add_warning(hc_dequant_result *r, const char *msg) {
    char *w = hc__strdup(msg ? msg : "");
    char **v = w ? realloc(r->warnings, (r->nwarnings + 1) * sizeof *v) : NULL;
    if (!v) {
        free(w);
        return;
    }
    r->warnings = v;
    v[r->nwarnings++] = w;
}

/* Decodes one module into float32 (out allocated); shape into shape/nd; the decoder's
 * warnings appended to r's. */
static hc_status dequant_module(const hc_model *md, const hc_module *m, float **out,
                                uint64_t *shape, int *nd, hc_dequant_result *r, hc_err *err) {
    hc_qtensor q = {0};
    hc_findings f = {0};
    *out = NULL;
    for (size_t i = 0; i < md->config_findings.n; i++) {
        const hc_finding *x = &md->config_findings.v[i];
        if (x->severity == HC_SEV_ERROR && !strcmp(x->tensor, m->name))
            return hc__fail(err, HC_UNSUPPORTED, "%s", x->message);
    }
    hc_status st = hc__module_decode(md, m, 0, &q, &f, err);
    if (st) {
        hc__err_clear(err);
        st = hc__fail(err, HC_INVALID, "%s", f.n ? f.v[0].message : "cannot decode");
        hc__findings_free(&f);
        return st;
    }
    for (size_t i = 0; i < f.n; i++) add_warning(r, f.v[i].message);
    hc__findings_free(&f);
    uint64_t numel = hc__qtensor_numel(&q);
    *out = malloc((numel ? numel : 1) * sizeof **out);
    if (!*out) {
        hc__qtensor_free(&q);
        return hc__fail(err, HC_NOMEM, "out of memory for %llu values", (unsigned long long)numel);
    }
    hc__qtensor_dequant(&q, *out);
    if (q.kind == HC_Q_PLAIN) {
        *nd = q.ndim;
        memcpy(shape, q.plain_shape, sizeof q.plain_shape);
    } else if (q.ndim == 3) {
        *nd = 3, shape[0] = q.E, shape[1] = q.N, shape[2] = q.K;
    } else {
        *nd = 2, shape[0] = q.N, shape[1] = q.K;
    }
    hc__qtensor_free(&q);
    return HC_OK;
}

/* A per-expert MoE layer named without its expert id, stacked into [E, N, K]. HC_NOTFOUND
 * when no module has that name. */
static hc_status dequant_stacked(const hc_model *md, const char *name, float **out,
                                 uint64_t *shape, int *nd, hc_dequant_result *r, hc_err *err) {
    const hc_module **ex = malloc((md->n ? md->n : 1) * sizeof *ex);
    if (!ex) return hc__fail(err, HC_NOMEM, "out of memory");
    size_t E = hc__model_experts(md, name, ex, md->n);
    hc_status st = HC_OK;
    *out = NULL;
    for (size_t e = 0; e < E && !st; e++) {
        if (ex[e]->expert != (int)e) {
            st = hc__fail(err, HC_INVALID, "MoE layer '%s': expert %zu is missing", name, e);
            break;
        }
        float *v = NULL;
        uint64_t sh[HC_MAX_DIMS], bytes;
        int n = 0;
        st = dequant_module(md, ex[e], &v, sh, &n, r, err);
        if (st) break;
        if (e == 0) {
            *nd = 3, shape[0] = E, shape[1] = sh[0], shape[2] = sh[1];
            if (n != 2)
                st = hc__fail(err, HC_INVALID, "MoE layer '%s': experts are not 2-D", name);
            else if (!hc__mul_u64(E, sh[0], &bytes) || !hc__mul_u64(bytes, sh[1], &bytes) ||
                     !hc__mul_u64(bytes, sizeof **out, &bytes) || bytes >= SIZE_MAX)
                st = hc__fail(err, HC_INVALID, "MoE layer '%s': %zu experts of [%llu, %llu] "
                             "overflow the address space", name, E, (unsigned long long)sh[0],
                             (unsigned long long)sh[1]);
            else if (!(*out = malloc((size_t)bytes + 1)))
                st = hc__fail(err, HC_NOMEM, "MoE layer '%s': out of memory", name);
        } else if (n != 2 || sh[0] != shape[1] || sh[1] != shape[2]) {
            st = hc__fail(err, HC_INVALID, "MoE layer '%s': expert %zu is [%llu, %llu], expert 0 "
                         "[%llu, %llu]", name, e, (unsigned long long)sh[0],
                         (unsigned long long)sh[1], (unsigned long long)shape[1],
                         (unsigned long long)shape[2]);
        }
        if (!st) memcpy(*out + e * shape[1] * shape[2], v, shape[1] * shape[2] * sizeof *v);
        free(v);
    }
    free(ex);
    if (!E) st = hc__fail(err, HC_NOTFOUND, "not found");
    if (st) free(*out), *out = NULL;
    return st;
}

hc_status hc_dequant(const char *src, const char *name, const hc_dequant_opts *o,
                     hc_dequant_result *r, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_ckpt *ck = NULL;
    hc_model *md = NULL;
    hc_ckpt_opts co = {0};
    memset(r, 0, sizeof *r);
    if (o) co.max_extract_bytes = o->max_extract_bytes, co.max_extract_ratio = o->max_extract_ratio;
    hc_status st = hc__ckpt_open_opts(src, &co, &ck, &err);
    if (!st) st = hc__ckpt_map(ck, &err);
    if (!st) st = hc__model_open(ck, &md, &err);
    const char *refusal = st ? NULL : checkpoint_refusal(md);
    if (refusal) st = hc__fail(&err, HC_UNSUPPORTED, "%s", refusal);
    if (st) goto out;
    const hc_module *m = hc__model_find(md, name);
    if (m) {
        st = dequant_module(md, m, &r->values, r->shape, &r->ndim, r, &err);
    } else {
        st = dequant_stacked(md, name, &r->values, r->shape, &r->ndim, r, &err);
        if (st == HC_NOTFOUND) {
            char esc[512];
            hc__err_clear(&err);
            st = hc__fail(&err, HC_NOTFOUND, "module '%s' is not in '%s' (NAME is the module name "
                         "before the quantization suffix, or a MoE layer's name without the "
                         "expert id; 'hconvert inspect --tensors' lists the tensors)",
                         hc__escape(name, esc, sizeof esc), src);
        }
    }
out:
    if (st) {
        free(r->values);
        r->values = NULL;
        r->ndim = 0;
    }
    if (msg && msg_len) snprintf(msg, msg_len, "%s", st ? err.msg : "");
    hc__model_free(md);
    hc__ckpt_close(ck);
    return st;
}

void hc_dequant_free(hc_dequant_result *r) {
    if (!r) return;
    free(r->values);
    for (size_t i = 0; i < r->nwarnings; i++) free(r->warnings[i]);
    free(r->warnings);
    memset(r, 0, sizeof *r);
}
