/* model.c: groups a checkpoint's tensors into modules (weight + scales + zero points + ...),
 * finds the quantization config and hands it to the resolver of its quant_method (scheme_*.c),
 * which sets each module's scheme; then marks what no scheme explains. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"
#include "scheme_int.h"

static const struct {
    const char *suffix;
    hc_role role;
} suffix_roles[] = {
    {"weight_packed", HC_ROLE_WEIGHT}, {"weight", HC_ROLE_WEIGHT},
    {"qweight", HC_ROLE_WEIGHT},       {"weight_scale", HC_ROLE_SCALE},
    {"weight_scale_inv", HC_ROLE_SCALE}, {"scales", HC_ROLE_SCALE},
    {"weight_zero_point", HC_ROLE_ZERO}, {"qzeros", HC_ROLE_ZERO},
    {"weight_g_idx", HC_ROLE_GIDX},    {"g_idx", HC_ROLE_GIDX},
    {"weight_shape", HC_ROLE_SHAPE},   {"weight_global_scale", HC_ROLE_GSCALE},
    {"bias", HC_ROLE_BIAS},            {"input_scale", HC_ROLE_OTHER},
    {"input_global_scale", HC_ROLE_OTHER}, {"input_zero_point", HC_ROLE_OTHER},
    {"output_scale", HC_ROLE_OTHER},   {"k_scale", HC_ROLE_OTHER},
    {"v_scale", HC_ROLE_OTHER},
};

static const char *const role_names[HC_ROLE_COUNT] = {"weight", "scale", "zero point", "g_idx",
                                                      "weight_shape", "global scale", "bias",
                                                      "other"};

/* Splits a tensor name into module and role. gpt-oss fused experts use "_blocks",
 * "_scales" and "_bias" on the module name itself. */
static void split_name(const char *name, bool gptoss, char **module, hc_role *role, bool *fused) {
    *fused = false;
    const char *dot = strrchr(name, '.');
    if (gptoss && dot && strstr(name, ".experts.")) {
        static const struct {
            const char *s;
            hc_role r;
        } fs[] = {{"_blocks", HC_ROLE_WEIGHT}, {"_scales", HC_ROLE_SCALE}, {"_bias", HC_ROLE_BIAS}};
        for (size_t i = 0; i < 3; i++)
            if (hc__ends_with(dot + 1, fs[i].s)) {
                *module = strndup(name, strlen(name) - strlen(fs[i].s));
                *role = fs[i].r;
                *fused = true;
                return;
            }
    }
    if (dot)
        for (size_t i = 0; i < sizeof suffix_roles / sizeof suffix_roles[0]; i++)
            if (strcmp(dot + 1, suffix_roles[i].suffix) == 0) {
                *module = strndup(name, (size_t)(dot - name));
                *role = suffix_roles[i].role;
                return;
            }
    *module = hc__strdup(name); /* a tensor of its own, e.g. e_score_correction_bias */
    *role = HC_ROLE_WEIGHT;
}

typedef struct {
    char *mod;
    hc_role role;
    bool fused;
    const hc_ck_entry *e;
} pair_t;

static int cmp_pair(const void *a, const void *b) {
    const pair_t *x = a, *y = b;
    int r = strcmp(x->mod, y->mod);
    return r ? r : strcmp(x->e->name, y->e->name);
}

const hc_module *hc__model_find(const hc_model *m, const char *name) {
    return hc__find_by_name(m->m, m->n, sizeof *m->m, name);
}

static int cmp_expert(const void *a, const void *b) {
    return (*(const hc_module *const *)a)->expert - (*(const hc_module *const *)b)->expert;
}

size_t hc__model_experts(const hc_model *m, const char *stacked, const hc_module **out,
                        size_t cap) {
    const char *p = strstr(stacked, ".experts.");
    if (!p) return 0;
    char *key = hc__asprintf("%.*s.experts.*.%s", (int)(p - stacked), stacked, p + 9);
    size_t n = 0;
    for (size_t i = 0; key && i < m->n && n < cap; i++)
        if (m->m[i].moe_key && !strcmp(m->m[i].moe_key, key)) out[n++] = &m->m[i];
    free(key);
    qsort(out, n, sizeof *out, cmp_expert);
    return n;
}

/* "<prefix>.experts.<J>.<rest>": expert J of the MoE layer "<prefix>.experts.*.<rest>". */
static void moe_membership(hc_module *m) {
    m->expert = -1;
    const char *p = strstr(m->name, ".experts.");
    if (!p || m->fused) return;
    const char *j = p + 9, *e = j;
    while (isdigit((unsigned char)*e)) e++;
    if (e == j || (*e != '.' && *e != 0) || e - j > 6) return;
    m->expert = atoi(j);
    m->moe_key = hc__asprintf("%.*s.experts.*%s", (int)(p - m->name), m->name, e);
}

static bool is_float_dtype(hc_dtype d) {
    return d == HC_DT_F16 || d == HC_DT_BF16 || d == HC_DT_F32 || d == HC_DT_F64;
}

/* A module carries quantized tensors when it has a scale or a packed/integer/fp8 weight. */
bool hc__module_carries_quant(const hc_module *m) {
    if (m->fused || m->t[HC_ROLE_SCALE] || m->t[HC_ROLE_ZERO] || m->t[HC_ROLE_SHAPE]) return true;
    const hc_ck_entry *w = m->t[HC_ROLE_WEIGHT];
    return w && !is_float_dtype(w->t->dtype) && strstr(w->name, "packed");
}

/* Finds the quantization config: config.json's quantization_config, else the legacy files. */
static const cJSON *quant_config(const hc_ckpt *ck, char method[32], const char **cfgname) {
    const cJSON *qc = ck->config ? cJSON_GetObjectItemCaseSensitive(ck->config,
                                                                     "quantization_config")
                                 : NULL;
    *cfgname = "config.json quantization_config";
    if (!cJSON_IsObject(qc) && ck->quant_config) {
        qc = ck->quant_config;
        *cfgname = ck->quant_config_name;
    }
    method[0] = 0;
    if (!cJSON_IsObject(qc)) return NULL;
    const char *qm = hc__json_str(qc, "quant_method");
    if (qm) snprintf(method, 32, "%s", qm);
    else if (cJSON_GetObjectItemCaseSensitive(qc, "w_bit")) snprintf(method, 32, "awq");
    else if (cJSON_GetObjectItemCaseSensitive(qc, "bits")) snprintf(method, 32, "gptq");
    return qc;
}

/* Modules whose quantized tensors no resolved scheme explains are refused by the decoder,
 * never read as unquantized numbers; when no configuration error says why, one finding does. */
static void mark_unresolved(hc_model *md, const char *cfgname) {
    size_t n = 0;
    const char *first = NULL;
    for (size_t i = 0; i < md->n; i++) {
        hc_module *m = &md->m[i];
        if (m->scheme.fmt != HC_FMT_PLAIN || !hc__module_carries_quant(m)) continue;
        m->unresolved = true;
        if (!n++) first = m->name;
    }
    if (n && !hc__findings_errors(&md->config_findings))
        hc__findings_add(&md->config_findings, HC_SEV_ERROR, first, "no scheme", n, NULL, 0,
                        "%zu module%s carr%s quantized tensors that %s does not describe "
                        "(first: '%s')", n, n == 1 ? "" : "s", n == 1 ? "ies" : "y", cfgname,
                        first);
}

static int cmp_finding_msg(const void *a, const void *b) {
    const hc_finding *x = *(const hc_finding *const *)a, *y = *(const hc_finding *const *)b;
    int r = strcmp(x->message ? x->message : "", y->message ? y->message : "");
    return r ? r : (x > y) - (x < y); /* the first of equal messages sorts first */
}

/* A config group's problem is found once per module that uses it: report it once, keeping
 * the order of first appearance (sorted, so a million modules cost n log n). */
static void dedup_findings(hc_findings *cf) {
    size_t n = cf->n;
    hc_finding **p = malloc((n ? n : 1) * sizeof *p);
    bool *drop = calloc(n ? n : 1, sizeof *drop);
    if (!p || !drop) goto out;
    for (size_t i = 0; i < n; i++) p[i] = &cf->v[i];
    qsort(p, n, sizeof *p, cmp_finding_msg);
    for (size_t i = 1; i < n; i++)
        drop[p[i] - cf->v] = p[i - 1]->message && p[i]->message &&
                             !strcmp(p[i - 1]->message, p[i]->message);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (drop[i]) hc__finding_clear(&cf->v[i]);
        else cf->v[kept++] = cf->v[i];
    }
    cf->n = kept;
out:
    free(p);
    free(drop);
}

hc_status hc__model_open(hc_ckpt *ck, hc_model **out, hc_err *err) {
    *out = NULL;
    hc_model *md = calloc(1, sizeof *md);
    if (!md) return hc__fail(err, HC_NOMEM, "out of memory");
    md->ck = ck;
    const char *cfgname;
    const cJSON *qc = quant_config(ck, md->quant_method, &cfgname);
    bool gptoss = !strcmp(md->quant_method, "mxfp4");
    md->m = calloc(ck->nentries ? ck->nentries : 1, sizeof *md->m);
    if (!md->m) {
        hc__model_free(md);
        return hc__fail(err, HC_NOMEM, "out of memory");
    }
    /* entries are sorted by tensor name, which is not module order ("a.b.x" sorts after
     * "a.b_c.x"), so collect (module, role) pairs, sort them by module, then merge */
    pair_t *pv = calloc(ck->nentries ? ck->nentries : 1, sizeof *pv);
    if (!pv) {
        hc__model_free(md);
        return hc__fail(err, HC_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ck->nentries; i++) {
        pv[i].e = &ck->entries[i];
        split_name(ck->entries[i].name, gptoss, &pv[i].mod, &pv[i].role, &pv[i].fused);
        if (!pv[i].mod) {
            for (size_t j = 0; j < i; j++) free(pv[j].mod);
            free(pv);
            hc__model_free(md);
            return hc__fail(err, HC_NOMEM, "out of memory");
        }
    }
    qsort(pv, ck->nentries, sizeof *pv, cmp_pair);
    for (size_t i = 0; i < ck->nentries; i++) {
        if (md->n == 0 || strcmp(md->m[md->n - 1].name, pv[i].mod) != 0) {
            md->m[md->n].name = pv[i].mod;
            md->n++;
        } else {
            free(pv[i].mod);
        }
        pv[i].mod = NULL;
        hc_module *m = &md->m[md->n - 1];
        m->fused |= pv[i].fused;
        if (m->t[pv[i].role] && pv[i].role != HC_ROLE_OTHER) {
            m->conflict = true;
            hc__findings_add(&md->config_findings, HC_SEV_ERROR, m->name, "two tensors", 0, NULL,
                            0, "module '%s' has two %s tensors: '%s' and '%s'", m->name,
                            role_names[pv[i].role], m->t[pv[i].role]->name, pv[i].e->name);
            continue;
        }
        m->t[pv[i].role] = pv[i].e;
    }
    free(pv);
    qsort(md->m, md->n, sizeof *md->m, hc__cmp_name);
    for (size_t i = 0; i < md->n; i++) moe_membership(&md->m[i]);
    const char *qm = md->quant_method;
    const cJSON *raw = cJSON_GetObjectItemCaseSensitive(ck->config, "quantization_config");
    if (!hc__cfg_typed(&md->config_findings, "config.json", "quantization_config", raw,
                       T_NULL | T_OBJ, "an object") ||
        !hc__cfg_field_typed(&md->config_findings, cfgname, "", qc, "quant_method",
                             T_NULL | T_STR, "a string")) {
        /* refused: nothing resolved */
    } else if (!qc) {
        for (size_t i = 0; i < md->n; i++)
            if (hc__module_carries_quant(&md->m[i])) {
                hc__findings_add(&md->config_findings, HC_SEV_ERROR, md->m[i].name,
                                "no quantization_config", 0, NULL, 0,
                                "module '%s' carries quantized tensors but config.json has no "
                                "quantization_config", md->m[i].name);
                break;
            }
    } else if (!strcmp(qm, "compressed-tensors")) {
        hc__resolve_ct(md, qc, cfgname);
    } else if (!strcmp(qm, "gptq")) {
        hc__resolve_gptq(md, qc, cfgname);
    } else if (!strcmp(qm, "awq")) {
        hc__resolve_awq(md, qc, cfgname);
    } else if (!strcmp(qm, "mxfp4")) {
        hc__resolve_gptoss(md);
    } else if (!strcmp(qm, "fp8")) {
        hc__resolve_fp8(md, qc, cfgname);
    } else {
        size_t first = md->config_findings.n;
        hc__findings_add(&md->config_findings, HC_SEV_ERROR, cfgname, "quant_method", 0, NULL, 0,
                        "%s: quant_method '%s' is not supported (compressed-tensors, gptq, awq, "
                        "mxfp4, fp8 are)", cfgname, qm[0] ? qm : "(none)");
        hc__findings_mark_checkpoint(&md->config_findings, first);
    }
    /* modules a container holds in a tile layout: read through the runtime's layout code */
    for (size_t i = 0; i < md->n; i++) {
        const hc_ck_entry *w = md->m[i].t[HC_ROLE_WEIGHT];
        if (w && w->info && strcmp(w->info->layout, "source")) {
            memset(&md->m[i].scheme, 0, sizeof md->m[i].scheme);
            md->m[i].scheme.fmt = HC_FMT_TILES;
        }
    }
    mark_unresolved(md, qc ? cfgname : "config.json");
    dedup_findings(&md->config_findings);
    *out = md;
    return HC_OK;
}

void hc__model_free(hc_model *md) {
    if (!md) return;
    for (size_t i = 0; i < md->n; i++) {
        free(md->m[i].name);
        free(md->m[i].moe_key);
    }
    free(md->m);
    hc__findings_free(&md->config_findings);
    free(md);
}
