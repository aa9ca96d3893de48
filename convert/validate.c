/* validate.c: the validation pass. Modules are decoded one at a time (OpenMP across modules,
 * results kept in module order so the report is the same for any thread count), checked,
 * summarised and freed, so memory stays near the largest module. */
#include "validate.h"

#include <cjson/cJSON.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "families.h"
#include "jsonutil.h"
#include "moe.h"
#include "quant.h"

#define MAX_FAM 8
#define MAX_TP 8
#define OUTLIER_RATIO 1e4 /* a scale this far from its tensor's median is flagged */

typedef struct {
    hc_findings f;
    bool decoded, quantized;
    hc_qkind kind;
    int bits;
    uint64_t E, N, K, gn, gk;
    bool zeros, gidx;
    double global_div;
    uint64_t bytes;
    char role;
    struct mod_caps *caps; /* quantized modules only: most of a checkpoint's tensors are not */
} mod_result;

/* What kernels and tensor-parallel cuts a quantized module gets. */
typedef struct mod_caps {
    const hc_family *fam[MAX_FAM];
    size_t nfam;
    char why[128];
    hc_tp_plan plan[MAX_TP];
} mod_caps;

/* The k-th smallest of v (reordered in place), by quickselect: linear time on average, where
 * a sort of every scale of a big model would dominate validate. */
static double select_kth(double *v, uint64_t n, uint64_t k) {
    uint64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        uint64_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j], v[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else break;
    }
    return v[k];
}

/* Scales that break the sanity rule (hc__scale_census_of) by class, and outliers; fused
 * experts name the experts hit. */
static void check_scales(const hc_module *m, const hc_qtensor *q, hc_findings *f) {
    const hc_ck_entry *se = m->t[HC_ROLE_SCALE];
    if (!se || q->kind == HC_Q_PLAIN) return;
    uint64_t per = q->sn * q->sk, total = q->E * per;
    uint64_t cnt[HC_SCALE_CLASSES] = {0};
    int *ex[HC_SCALE_CLASSES];
    size_t nex[HC_SCALE_CLASSES] = {0};
    for (int r = 0; r < HC_SCALE_CLASSES; r++) ex[r] = calloc(q->E ? q->E : 1, sizeof(int));
    double *pos = malloc((total ? total : 1) * sizeof *pos);
    uint64_t npos = 0;
    for (uint64_t e = 0; e < q->E; e++) {
        hc_scale_census c0;
        hc__scale_census_of(q, e * per, per, pos ? pos + npos : NULL, &c0);
        if (pos) npos += c0.nsane;
        for (int r = 0; r < HC_SCALE_CLASSES; r++)
            if (c0.count[r]) {
                cnt[r] += c0.count[r];
                if (ex[r] && q->E > 1) ex[r][nex[r]++] = (int)e;
            }
    }
    const char *code = q->scale_dtype == HC_DT_F8_E8M0   ? " (E8M0 0xFF)"
                       : q->scale_dtype == HC_DT_F8_E4M3 ? " (E4M3 NaN code 0x7F/0xFF)"
                                                         : "";
    for (int r = 0; r < HC_SCALE_CLASSES; r++) {
        if (!cnt[r]) continue;
        char exs[256] = "";
        for (size_t i = 0; i < nex[r]; i++)
            snprintf(exs + strlen(exs), sizeof exs - strlen(exs), "%s%d", i ? ", " : "; experts ",
                     ex[r][i]);
        const char *rule = hc__scale_class_names[r];
        hc__findings_add(f, HC_SEV_ERROR, se->name, rule, cnt[r], ex[r], nex[r],
                        "tensor '%s': %llu of %llu scales are %s%s%s", se->name,
                        (unsigned long long)cnt[r], (unsigned long long)total, rule,
                        r == HC_SCALE_NAN ? code : "", exs);
    }
    if (pos && npos > 2) {
        double med = select_kth(pos, npos, npos / 2), lo = pos[0], hi = pos[0];
        uint64_t out = 0;
        for (uint64_t i = 0; i < npos; i++) {
            out += pos[i] > med * OUTLIER_RATIO || pos[i] < med / OUTLIER_RATIO;
            lo = pos[i] < lo ? pos[i] : lo;
            hi = pos[i] > hi ? pos[i] : hi;
        }
        if (out)
            hc__findings_add(f, HC_SEV_WARNING, se->name, "outlier", out, NULL, 0,
                            "tensor '%s': %llu scales are outliers, more than %g times from the "
                            "median %g (largest %g, smallest %g)", se->name,
                            (unsigned long long)out, OUTLIER_RATIO, med, hi, lo);
    }
    free(pos);
    for (int r = 0; r < HC_SCALE_CLASSES; r++) free(ex[r]);
}

static void check_zeros(const hc_module *m, const hc_qtensor *q, hc_findings *f) {
    if (q->kind != HC_Q_INT || !q->zeros) return;
    int32_t hi = (1 << q->bits) - 1;
    uint64_t out = 0, n = q->E * q->sn * q->sk;
    for (uint64_t i = 0; i < n; i++) out += q->zeros[i] < 0 || q->zeros[i] > hi;
    const hc_ck_entry *ze = m->t[HC_ROLE_ZERO];
    if (out)
        hc__findings_add(f, HC_SEV_WARNING, ze ? ze->name : m->name, "zero point range", out, NULL,
                        0, "tensor '%s': %llu zero points lie outside the %d-bit code range "
                        "[0, %d]", ze ? ze->name : m->name, (unsigned long long)out, q->bits, hi);
}

static void analyse(const hc_model *md, size_t i, const unsigned *tps, int ntp, mod_result *r) {
    const hc_module *m = &md->m[i];
    if (m->unresolved) return; /* one configuration finding says why, not one per module */
    hc_qtensor q;
    hc_err err = {0};
    hc_status st = hc__module_decode(md, m, HC_DECODE_NO_CODES, &q, &r->f, &err);
    hc__module_release(md, m);
    if (st != HC_OK) return;
    r->decoded = true;
    r->quantized = q.kind != HC_Q_PLAIN;
    r->kind = q.kind, r->bits = q.bits, r->E = q.E, r->N = q.N, r->K = q.K, r->gn = q.gn,
    r->gk = q.gk, r->zeros = q.zeros != NULL, r->gidx = q.g_idx != NULL,
    r->global_div = q.global_div;
    if (r->quantized) r->caps = calloc(1, sizeof *r->caps);
    if (r->quantized && !r->caps) r->quantized = false; /* out of memory: reported as unknown */
    if (r->quantized) {
        check_scales(m, &q, &r->f);
        check_zeros(m, &q, &r->f);
        mod_caps *k = r->caps;
        k->nfam = hc__families_for(m, &q, k->fam, MAX_FAM, k->why, sizeof k->why);
        r->bytes = hc__module_bytes(&q);
        r->role = hc__tp_role(m->name);
        for (int t = 0; t < ntp; t++) hc__tp_shard(&q, r->role, tps[t], k->fam[0], &k->plan[t]);
    }
    hc__qtensor_free(&q);
}

/* Per-expert findings with the same layer key and rule become one finding naming the experts:
 * every expert finding sorted once by (layer key, rule, severity, module), each run merged
 * into its first (n log n; a scan of the later modules for each finding was quadratic). */
typedef struct {
    const hc_module *m;
    size_t i, k;
    hc_finding *x;
    char *what; /* the message with the module's name as its layer key: what is alike */
} expert_finding;

/* What two experts' findings must share to be merged: the message with the module's name
 * as its layer key and every run of digits as '#' (counts and expert ids differ, the finding
 * is the same: "2 of 512 scales are NaN" and "3 of 512 ..." merge, "missing weight_shape" and
 * "missing weight_scale" do not). A copy, or NULL. */
static char *message_as_layer(const char *msg, const char *name, const char *key) {
    const char *at = msg ? strstr(msg, name) : NULL;
    if (!msg) return NULL;
    char *m = at ? hc__asprintf("%.*s%s%s", (int)(at - msg), msg, key, at + strlen(name))
                 : hc__strdup(msg);
    char *w = m;
    for (const char *r = m; m && *r; r++)
        if (*r < '0' || *r > '9') *w++ = *r;
        else if (w == m || w[-1] != '#') *w++ = '#';
    if (m) *w = 0;
    return m;
}

static int cmp_expert_finding(const void *a, const void *b) {
    const expert_finding *p = a, *q = b;
    int r = strcmp(p->m->moe_key, q->m->moe_key);
    if (!r) r = strcmp(p->x->rule, q->x->rule);
    if (!r) r = strcmp(p->what, q->what);
    if (!r) r = (int)p->x->severity - (int)q->x->severity;
    if (!r) r = p->i < q->i ? -1 : p->i > q->i ? 1 : p->k < q->k ? -1 : p->k > q->k;
    return r;
}

static void merge_run(expert_finding *v, size_t n) {
    hc_finding *x = v[0].x;
    size_t others = 0;
    for (size_t r = 1; r < n; r++) others += v[r].i != v[0].i;
    int *ids = malloc((others + 1) * sizeof *ids);
    if (!ids) return;
    free(x->experts);
    x->experts = ids;
    x->experts[0] = v[0].m->expert;
    x->nexperts = 1;
    for (size_t r = 1; r < n; r++) {
        if (v[r].i == v[0].i) { /* the same module's own findings stay apart, each its own */
            int *one = malloc(sizeof *one);
            if (!one) continue;
            free(v[r].x->experts);
            v[r].x->experts = one, one[0] = v[r].m->expert, v[r].x->nexperts = 1;
            continue;
        }
        x->experts[x->nexperts++] = v[r].m->expert;
        x->count += v[r].x->count;
        v[r].x->rule[0] = 0; /* consumed */
    }
    if (x->nexperts > 1) {
        char s[256], *msg = NULL;
        qsort(x->experts, x->nexperts, sizeof *x->experts, hc__cmp_int); /* 2 before 10 */
        hc__join_ids(x->experts, x->nexperts, s, sizeof s);
        if (asprintf(&msg, "%s; the same in experts %s of '%s' (%llu in all)", x->message, s,
                     v[0].m->moe_key, (unsigned long long)x->count) >= 0) {
            free(x->message);
            x->message = msg;
        }
    }
}

static void merge_expert_findings(const hc_model *md, mod_result *res, hc_findings *out) {
    size_t nf = 0;
    for (size_t i = 0; i < md->n; i++)
        if (md->m[i].expert >= 0) nf += res[i].f.n;
    expert_finding *v = malloc((nf ? nf : 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; v && i < md->n; i++)
        for (size_t k = 0; md->m[i].expert >= 0 && k < res[i].f.n; k++)
            if (res[i].f.v[k].rule[0]) {
                hc_finding *x = &res[i].f.v[k];
                char *w = message_as_layer(x->message, md->m[i].name, md->m[i].moe_key);
                if (w) v[n++] = (expert_finding){&md->m[i], i, k, x, w};
            }
    if (v) qsort(v, n, sizeof *v, cmp_expert_finding);
    for (size_t a = 0, b; v && a < n; a = b) {
        for (b = a + 1; b < n && !strcmp(v[b].m->moe_key, v[a].m->moe_key) &&
                        !strcmp(v[b].x->rule, v[a].x->rule) && !strcmp(v[b].what, v[a].what) &&
                        v[b].x->severity == v[a].x->severity;
             b++)
            ;
        merge_run(v + a, b - a);
    }
    for (size_t a = 0; v && a < n; a++) free(v[a].what);
    free(v);
    for (size_t i = 0; i < md->n; i++) {
        const hc_module *m = &md->m[i];
        /* move the surviving findings out */
        for (size_t k = 0; k < res[i].f.n; k++) {
            hc_finding *x = &res[i].f.v[k];
            if (!x->rule[0] && m->expert >= 0) {
                hc__finding_clear(x);
                continue;
            }
            hc_findings one = {.v = malloc(sizeof *x), .n = 1};
            if (!one.v) continue;
            one.v[0] = *x;
            hc__findings_append(out, &one);
        }
        free(res[i].f.v);
        res[i].f.v = NULL;
        res[i].f.n = 0;
    }
}

/* NVFP4 gate and up projections of one MLP must share a global scale to be fused. */
static void check_gate_up(const hc_model *md, const mod_result *res, hc_findings *f) {
    static const char *const pairs[][2] = {{"gate_proj", "up_proj"}, {"w1", "w3"}};
    for (size_t i = 0; i < md->n; i++) {
        if (res[i].global_div == 0) continue;
        const char *name = md->m[i].name;
        for (size_t p = 0; p < 2; p++) {
            size_t nl = strlen(name), gl = strlen(pairs[p][0]);
            if (nl <= gl || strcmp(name + nl - gl, pairs[p][0]) || name[nl - gl - 1] != '.')
                continue;
            char *up = hc__asprintf("%.*s%s", (int)(nl - gl), name, pairs[p][1]);
            const hc_module *u = up ? hc__model_find(md, up) : NULL;
            if (u) {
                const mod_result *ru = &res[u - md->m];
                if (ru->global_div != 0 && ru->global_div != res[i].global_div) {
                    const hc_ck_entry *g = md->m[i].t[HC_ROLE_GSCALE];
                    hc__findings_add(f, HC_SEV_WARNING, g ? g->name : name, "global scale", 0,
                                    NULL, 0,
                                    "tensor '%s': global scale %g differs from %s's %g: a fused "
                                    "gate/up kernel needs one; convert keeps them apart",
                                    g ? g->name : name, res[i].global_div, up, ru->global_div);
                }
            }
            free(up);
        }
    }
}

/* ---- report ---- */

static const char *kind_name(hc_qkind k) {
    static const char *const n[] = {"plain", "int", "fp4", "fp8_e4m3", "fp8_e5m2"};
    return n[k];
}

typedef struct {
    size_t first, count;
    uint64_t bytes;
} klass;

/* The same tensor-parallel outcome at every size (act-order cuts differ per module). */
static bool same_tp(const mod_result *x, const mod_result *y) {
    for (int t = 0; t < MAX_TP; t++)
        if (x->caps->plan[t].regroup != y->caps->plan[t].regroup ||
            x->caps->plan[t].gpu != y->caps->plan[t].gpu ||
            x->caps->plan[t].group_aligned != y->caps->plan[t].group_aligned)
            return false;
    return true;
}

/* Modules that share format, kind, bits, groups, shape, TP role and TP outcome form one class. */
static bool same_class(const hc_model *md, const mod_result *res, size_t a, size_t b) {
    const mod_result *x = &res[a], *y = &res[b];
    return same_tp(x, y) && x->kind == y->kind && x->bits == y->bits && x->E == y->E && x->N == y->N &&
           x->K == y->K && x->gk == y->gk && x->gn == y->gn && x->role == y->role &&
           x->zeros == y->zeros && x->gidx == y->gidx && x->caps->nfam == y->caps->nfam &&
           md->m[a].scheme.fmt == md->m[b].scheme.fmt;
}

static cJSON *finding_json(const hc_finding *x) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "severity", x->severity == HC_SEV_ERROR ? "error" : "warning");
    cJSON_AddStringToObject(o, "tensor", x->tensor);
    cJSON_AddStringToObject(o, "rule", x->rule);
    cJSON_AddNumberToObject(o, "count", (double)x->count);
    if (x->nexperts) {
        cJSON *e = cJSON_AddArrayToObject(o, "experts");
        for (size_t i = 0; i < x->nexperts; i++) cJSON_AddItemToArray(e, cJSON_CreateNumber(x->experts[i]));
    } else {
        cJSON_AddNullToObject(o, "experts");
    }
    cJSON_AddStringToObject(o, "message", x->message ? x->message : "");
    return o;
}

/* A class of modules with a GPU family whose tensor-parallel slice the GPU kernels cannot run. */
static bool loses_gpu(const mod_result *x, const hc_tp_plan *p) {
    return x->caps->nfam > 1 && !p->gpu;
}

static void report(FILE *out, const hc_validate_opts *o, const char *src, const hc_model *md,
                   const mod_result *res, const hc_findings *f, const klass *kl, size_t nk,
                   const unsigned *tps, int ntp, int moe_layers) {
    size_t nq = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < md->n; i++) nq += res[i].quantized, bytes += res[i].bytes;
    size_t nerr = hc__findings_errors(f);
    if (o->json) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "source", src);
        if (md->quant_method[0]) cJSON_AddStringToObject(r, "quant_method", md->quant_method);
        else cJSON_AddNullToObject(r, "quant_method");
        cJSON *s = cJSON_AddObjectToObject(r, "summary");
        cJSON_AddNumberToObject(s, "modules", (double)md->n);
        cJSON_AddNumberToObject(s, "quantized", (double)nq);
        cJSON_AddNumberToObject(s, "moe_layers", moe_layers);
        cJSON_AddNumberToObject(s, "errors", (double)nerr);
        cJSON_AddNumberToObject(s, "warnings", (double)(f->n - nerr));
        cJSON_AddNumberToObject(s, "quantized_bytes", (double)bytes);
        cJSON *fa = cJSON_AddArrayToObject(r, "findings");
        for (size_t i = 0; i < f->n; i++) cJSON_AddItemToArray(fa, finding_json(&f->v[i]));
        cJSON *ca = cJSON_AddArrayToObject(r, "capability");
        for (size_t c = 0; c < nk; c++) {
            const mod_result *x = &res[kl[c].first];
            const hc_module *m = &md->m[kl[c].first];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "example", m->name);
            cJSON_AddNumberToObject(e, "modules", (double)kl[c].count);
            cJSON_AddStringToObject(e, "format", hc__fmt_name(m->scheme.fmt));
            cJSON_AddStringToObject(e, "kind", kind_name(x->kind));
            cJSON_AddNumberToObject(e, "bits", x->bits);
            cJSON_AddNumberToObject(e, "experts", (double)x->E);
            cJSON_AddNumberToObject(e, "n", (double)x->N);
            cJSON_AddNumberToObject(e, "k", (double)x->K);
            cJSON_AddNumberToObject(e, "group_k", (double)x->gk);
            cJSON_AddNumberToObject(e, "group_n", (double)x->gn);
            cJSON_AddBoolToObject(e, "zero_points", x->zeros);
            cJSON_AddBoolToObject(e, "act_order", x->gidx);
            cJSON *ka = cJSON_AddArrayToObject(e, "kernels");
            for (size_t k = 0; k < x->caps->nfam; k++) {
                cJSON *kk = cJSON_CreateObject();
                cJSON_AddStringToObject(kk, "family", x->caps->fam[k]->name);
                cJSON_AddStringToObject(kk, "activations", x->caps->fam[k]->activations);
                cJSON_AddNumberToObject(kk, "pad_n", (double)((x->N + x->caps->fam[k]->n_multiple - 1) /
                                                               x->caps->fam[k]->n_multiple *
                                                               x->caps->fam[k]->n_multiple));
                cJSON_AddNumberToObject(kk, "pad_k", (double)((x->K + x->caps->fam[k]->k_multiple - 1) /
                                                               x->caps->fam[k]->k_multiple *
                                                               x->caps->fam[k]->k_multiple));
                cJSON_AddItemToArray(ka, kk);
            }
            if (x->caps->why[0]) cJSON_AddStringToObject(e, "gpu_unavailable", x->caps->why);
            else cJSON_AddNullToObject(e, "gpu_unavailable");
            cJSON_AddNumberToObject(e, "bytes", (double)kl[c].bytes);
            cJSON_AddItemToArray(ca, e);
        }
        cJSON *ta = cJSON_AddArrayToObject(r, "tensor_parallel");
        for (int t = 0; t < ntp; t++) {
            cJSON *te = cJSON_CreateObject();
            cJSON_AddNumberToObject(te, "tp", tps[t]);
            bool even = true, aligned = true;
            cJSON *sa = cJSON_AddArrayToObject(te, "shards");
            for (size_t c = 0; c < nk; c++) {
                const mod_result *x = &res[kl[c].first];
                const hc_tp_plan *p = &x->caps->plan[t];
                even &= p->splits;
                aligned &= p->group_aligned;
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "example", md->m[kl[c].first].name);
                cJSON_AddNumberToObject(e, "modules", (double)kl[c].count);
                cJSON_AddStringToObject(e, "split", p->role == 'c' ? "column" : p->role == 'r' ? "row"
                                                                                       : "replicated");
                cJSON_AddNumberToObject(e, "shard_n", (double)p->shard_n);
                cJSON_AddNumberToObject(e, "shard_k", (double)p->shard_k);
                cJSON_AddBoolToObject(e, "even", p->splits);
                cJSON_AddBoolToObject(e, "group_aligned", p->group_aligned);
                if (p->regroup) cJSON_AddNumberToObject(e, "regroup_to", (double)p->regroup);
                else cJSON_AddNullToObject(e, "regroup_to");
                cJSON_AddNumberToObject(e, "pad_n", (double)p->pad_n);
                cJSON_AddNumberToObject(e, "pad_k", (double)p->pad_k);
                cJSON_AddBoolToObject(e, "gpu", p->gpu);
                cJSON_AddItemToArray(sa, e);
            }
            cJSON_AddBoolToObject(te, "all_even", even);
            cJSON_AddBoolToObject(te, "all_group_aligned", aligned);
            cJSON_AddItemToArray(ta, te);
        }
        char *txt = cJSON_Print(r);
        if (txt) fprintf(out, "%s\n", txt);
        free(txt);
        cJSON_Delete(r);
        return;
    }
    char esc[2048];
    fprintf(out, "validate: %s (%s)\n", hc__escape(src, esc, sizeof esc),
            md->quant_method[0] ? md->quant_method : "unquantized");
    fprintf(out, "modules: %zu, %zu quantized (%.3f MB), %d MoE layer%s\n", md->n, nq,
            (double)bytes / 1e6, moe_layers, moe_layers == 1 ? "" : "s");
    fprintf(out, "findings: %zu error%s, %zu warning%s\n", nerr, nerr == 1 ? "" : "s",
            f->n - nerr, f->n - nerr == 1 ? "" : "s");
    for (size_t i = 0; i < f->n; i++)
        fprintf(out, "  %-7s %s\n", f->v[i].severity == HC_SEV_ERROR ? "error" : "warning",
                hc__escape(f->v[i].message ? f->v[i].message : "", esc, sizeof esc));
    if (nk) fprintf(out, "kernels (per class of modules):\n");
    for (size_t c = 0; c < nk; c++) {
        const mod_result *x = &res[kl[c].first];
        const hc_module *m = &md->m[kl[c].first];
        char elem[32], grp[64], ex[32] = "";
        if (x->E > 1) snprintf(ex, sizeof ex, "%llu x ", (unsigned long long)x->E);
        if (x->kind == HC_Q_INT) snprintf(elem, sizeof elem, "int%d", x->bits);
        else snprintf(elem, sizeof elem, "%s", kind_name(x->kind));
        if (x->gn > 1) snprintf(grp, sizeof grp, "block %llux%llu", (unsigned long long)x->gn,
                                (unsigned long long)x->gk);
        else if (x->gk >= x->K) snprintf(grp, sizeof grp, "per channel");
        else snprintf(grp, sizeof grp, "group %llu", (unsigned long long)x->gk);
        fprintf(out, "  %s (%zu): %s, %s, [%s%llu, %llu], %s%s%s:",
                hc__escape(m->name, esc, sizeof esc), kl[c].count, hc__fmt_name(m->scheme.fmt),
                elem, ex, (unsigned long long)x->N, (unsigned long long)x->K,
                grp, x->zeros ? ", zero points" : "", x->gidx ? ", act-order" : "");
        for (size_t k = 0; k < x->caps->nfam; k++)
            fprintf(out, " %s/%s", x->caps->fam[k]->name, x->caps->fam[k]->activations);
        if (x->caps->why[0]) fprintf(out, " (%s)", x->caps->why);
        fputc('\n', out);
    }
    for (int t = 0; t < ntp; t++) {
        size_t col = 0, row = 0, uneven = 0, regroup = 0, nogpu = 0;
        uint64_t waste = 0;
        for (size_t c = 0; c < nk; c++) {
            const mod_result *x = &res[kl[c].first];
            const hc_tp_plan *p = &x->caps->plan[t];
            col += p->role == 'c' ? kl[c].count : 0;
            row += p->role == 'r' ? kl[c].count : 0;
            uneven += p->splits ? 0 : kl[c].count;
            regroup += p->regroup ? kl[c].count : 0;
            nogpu += loses_gpu(x, p) ? kl[c].count : 0;
            waste += kl[c].count * (p->pad_n * p->pad_k - p->shard_n * p->shard_k) *
                     (uint64_t)x->bits / 8 * x->E;
        }
        fprintf(out, "tp %u: %zu column-parallel, %zu row-parallel; %zu uneven split%s; %zu "
                "need lossless regrouping; padding %.3f MB per rank", tps[t], col, row, uneven,
                uneven == 1 ? "" : "s", regroup, (double)waste / 1e6);
        if (nogpu) fprintf(out, "; %zu lose the GPU kernels (scale groups under 16 columns)", nogpu);
        fputc('\n', out);
        for (size_t c = 0; c < nk; c++) {
            const hc_tp_plan *p = &res[kl[c].first].caps->plan[t];
            if (p->regroup || !p->splits)
                fprintf(out, "  %s: %s split to [%llu, %llu]%s, group %llu -> %llu%s\n",
                        md->m[kl[c].first].name, p->role == 'c' ? "column" : "row",
                        (unsigned long long)p->shard_n, (unsigned long long)p->shard_k,
                        p->splits ? "" : " (uneven: the last rank is padded)",
                        (unsigned long long)res[kl[c].first].gk, (unsigned long long)p->regroup,
                        loses_gpu(&res[kl[c].first], p) ? " (CPU executor only)" : "");
        }
    }
}

hc_status hc__validate(const char *src, const hc_validate_opts *o, FILE *out, size_t *errors,
                      hc_err *err) {
    hc_ckpt *ck = NULL;
    hc_model *md = NULL;
    mod_result *res = NULL;
    klass *kl = NULL;
    hc_findings all = {0};
    *errors = 0;
    HC_TRY(hc__ckpt_open_opts(src, &o->ckpt, &ck, err));
    hc_status st = hc__ckpt_map(ck, err);
    if (!st) st = hc__model_open(ck, &md, err);
    if (st) goto out;
    unsigned tps[MAX_TP] = {1, 2, 4, 8};
    int ntp = 4;
    if (o->ntp > 0) {
        ntp = o->ntp > MAX_TP ? MAX_TP : o->ntp;
        memcpy(tps, o->tp, (size_t)ntp * sizeof *tps);
    }
    res = calloc(md->n ? md->n : 1, sizeof *res);
    kl = calloc(md->n ? md->n : 1, sizeof *kl);
    if (!res || !kl) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    int threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    size_t done = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t i = 0; i < md->n; i++) {
        analyse(md, i, tps, ntp, &res[i]);
        if (o->progress) {
/* unnamed: a named critical is a global symbol the shared library would export */
#pragma omp critical
            {
                done++;
                fprintf(stderr, "\rvalidating: %zu / %zu modules%s", done, md->n,
                        done == md->n ? "\n" : "");
            }
        }
    }
    for (size_t i = 0; i < ck->nwarnings; i++)
        hc__findings_add(&all, HC_SEV_WARNING, "", "checkpoint", 0, NULL, 0, "%s", ck->warnings[i]);
    hc__findings_append(&all, &md->config_findings);
    int moe_layers = 0;
    hc_moe_shape *shapes = calloc(md->n ? md->n : 1, sizeof *shapes);
    for (size_t i = 0; shapes && i < md->n; i++)
        shapes[i] = (hc_moe_shape){res[i].decoded, res[i].kind, res[i].bits, res[i].N, res[i].K,
                                   res[i].gk};
    if (shapes) hc__model_check_moe(md, shapes, &all, &moe_layers);
    free(shapes);
    check_gate_up(md, res, &all);
    merge_expert_findings(md, res, &all);
    size_t nk = 0;
    for (size_t i = 0; i < md->n; i++) {
        if (!res[i].quantized) continue;
        size_t c = 0;
        while (c < nk && !same_class(md, res, kl[c].first, i)) c++;
        if (c == nk) kl[nk++] = (klass){.first = i};
        kl[c].count++;
        kl[c].bytes += res[i].bytes;
    }
    report(out, o, src, md, res, &all, kl, nk, tps, ntp, moe_layers);
    *errors = hc__findings_errors(&all);
out:
    if (res)
        for (size_t i = 0; md && i < md->n; i++) hc__findings_free(&res[i].f), free(res[i].caps);
    hc__findings_free(&all);
    free(res);
    free(kl);
    hc__model_free(md);
    hc__ckpt_close(ck);
    return st;
}
