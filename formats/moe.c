/* moe.c: MoE layers across modules: every expert present (against the config's expert
 * count) and every expert of a layer with the same shape and scheme. Used by validate and
 * by convert, which refuses what validate rejects. */
#include "moe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

static int config_experts(const hc_ckpt *ck) {
    static const char *const keys[] = {"num_experts", "num_local_experts", "n_routed_experts",
                                       "moe_num_experts"};
    const cJSON *cfg = ck->config;
    const cJSON *tc = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "text_config") : NULL;
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *o = pass ? tc : cfg;
        for (size_t k = 0; o && k < sizeof keys / sizeof keys[0]; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
            if (cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < 1e6)
                return (int)v->valuedouble;
        }
    }
    return 0;
}

static int cmp_int(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

void hc_join_ids(const int *v, size_t n, char *out, size_t cap) {
    out[0] = 0;
    for (size_t i = 0; i < n && strlen(out) + 16 < cap; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%d", i ? ", " : "", v[i]);
}

/* Layer prefix of a MoE key "<prefix>.experts.*.<rest>" -> "<prefix>.experts". */
static size_t layer_len(const char *key) { return (size_t)(strstr(key, ".experts.*") - key) + 8; }

void hc_model_check_moe(const hc_model *md, const hc_moe_shape *res, hc_findings *f, int *layers) {
    int E = config_experts(md->ck);
    *layers = 0;
    /* fused (gpt-oss) layers: one per distinct "<prefix>.experts." */
    for (size_t i = 0; i < md->n; i++) {
        const char *p = md->m[i].fused ? strstr(md->m[i].name, ".experts.") : NULL;
        bool seen = false;
        for (size_t j = 0; p && j < i && !seen; j++) {
            const char *q = md->m[j].fused ? strstr(md->m[j].name, ".experts.") : NULL;
            seen = q && q - md->m[j].name == p - md->m[i].name &&
                   !strncmp(md->m[j].name, md->m[i].name, (size_t)(p - md->m[i].name));
        }
        if (p && !seen) (*layers)++;
    }
    bool *done = calloc(md->n ? md->n : 1, 1);
    int *ids = malloc((md->n ? md->n : 1) * sizeof *ids);
    int *bad = malloc((md->n ? md->n : 1) * sizeof *bad);
    if (!done || !ids || !bad) goto out;
    /* per layer: the union of expert ids over all its keys */
    for (size_t i = 0; i < md->n; i++) {
        const hc_module *m = &md->m[i];
        if (m->expert < 0 || done[i]) continue;
        size_t ll = layer_len(m->moe_key);
        size_t n = 0;
        for (size_t j = i; j < md->n; j++) {
            const hc_module *o = &md->m[j];
            if (o->expert < 0 || strncmp(o->moe_key, m->moe_key, ll) || o->moe_key[ll] != '.')
                continue;
            ids[n++] = o->expert;
        }
        qsort(ids, n, sizeof *ids, cmp_int);
        size_t u = 0;
        for (size_t k = 0; k < n; k++)
            if (!u || ids[u - 1] != ids[k]) ids[u++] = ids[k];
        int want = E > 0 ? E : ids[u - 1] + 1;
        size_t nm = 0;
        for (int e = 0, k = 0; e < want; e++) {
            while ((size_t)k < u && ids[k] < e) k++;
            if ((size_t)k >= u || ids[k] != e) bad[nm++] = e;
        }
        (*layers)++;
        if (nm) {
            char s[256];
            hc_join_ids(bad, nm, s, sizeof s);
            hc_findings_add(f, HC_SEV_ERROR, "", "missing", nm, bad, nm,
                            "MoE layer '%.*s': %zu of %d experts missing (experts %s)%s", (int)ll,
                            m->moe_key, nm, want, s, E > 0 ? "" : " (count from the highest id)");
            hc_finding *x = &f->v[f->n - 1];
            free(x->tensor);
            x->tensor = strndup(m->moe_key, ll);
        }
        for (size_t j = i; j < md->n; j++) { /* the whole layer is counted now */
            const hc_module *o = &md->m[j];
            if (o->expert >= 0 && !strncmp(o->moe_key, m->moe_key, ll) && o->moe_key[ll] == '.')
                done[j] = true;
        }
    }
    /* shape/scheme consistency within each key: compare with the first decoded expert */
    memset(done, 0, md->n);
    for (size_t i = 0; i < md->n; i++) {
        const hc_module *m = &md->m[i];
        if (m->expert < 0 || done[i]) continue;
        const hc_moe_shape *ref = NULL;
        size_t nb = 0;
        for (size_t j = i; j < md->n; j++) {
            const hc_module *o = &md->m[j];
            if (o->expert < 0 || strcmp(o->moe_key, m->moe_key)) continue;
            done[j] = true;
            const hc_moe_shape *r = &res[j];
            if (!r->decoded) continue;
            if (!ref) {
                ref = r;
                continue;
            }
            if (r->N != ref->N || r->K != ref->K || r->kind != ref->kind || r->bits != ref->bits ||
                r->gk != ref->gk || o->scheme.fmt != m->scheme.fmt)
                bad[nb++] = o->expert;
        }
        if (nb && ref) {
            char s[256];
            hc_join_ids(bad, nb, s, sizeof s);
            hc_findings_add(f, HC_SEV_ERROR, m->moe_key, "shape", nb, bad, nb,
                            "MoE layer '%s': experts %s differ in shape or scheme from the "
                            "others ([%llu, %llu], %d-bit, group %llu)", m->moe_key, s,
                            (unsigned long long)ref->N, (unsigned long long)ref->K, ref->bits,
                            (unsigned long long)ref->gk);
        }
    }
out:
    free(done);
    free(ids);
    free(bad);
}

