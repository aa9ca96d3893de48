/* moe_layers.c: each MoE layer's structure (contract/moe_record.h) derived from a model's
 * modules and config, for convert to record in the container: which layers are gate, up (or
 * gpt-oss's fused, interleaved gate_up), down; E; the activation; the router and the shared
 * expert. Naming follows ../shared/docs/FORMATS.md sections 5 and 6. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"
#include "moe.h"

/* gpt-oss's SwiGLU: alpha is a constant of the model code (GptOssExperts), the limit the
 * config's swiglu_limit (7.0 in every released config, the default here). */
#define GPTOSS_ALPHA 1.702
#define GPTOSS_LIMIT 7.0

/* The projections of an expert, by the name after the expert id (Qwen/DeepSeek, Mixtral). */
static const struct {
    const char *rest;
    int role; /* 0 gate, 1 up, 2 down */
} projections[] = {
    {".gate_proj", 0}, {".up_proj", 1}, {".down_proj", 2}, {".w1", 0}, {".w3", 1}, {".w2", 2},
};

/* A key of the config or, for multimodal wrappers, of its text_config. */
static const cJSON *config_item(const hc_ckpt *ck, const char *key) {
    const cJSON *v = ck->config ? cJSON_GetObjectItemCaseSensitive(ck->config, key) : NULL;
    const cJSON *tc = ck->config ? cJSON_GetObjectItemCaseSensitive(ck->config, "text_config")
                                 : NULL;
    return v ? v : cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, key) : NULL;
}

/* The activation of the experts: gpt-oss's clamped SwiGLU for fused gpt-oss layers, else the
 * config's hidden_act when it is SiLU (absent: SiLU, the default of every MoE family above);
 * false for any other. */
static bool activation(const hc_ckpt *ck, bool gptoss, hc_moe_layer_info *l) {
    if (gptoss) {
        const cJSON *lim = config_item(ck, "swiglu_limit");
        l->activation = HC_MOE_SWIGLU_CLAMP;
        l->alpha = GPTOSS_ALPHA;
        l->limit = cJSON_IsNumber(lim) && isfinite(lim->valuedouble) && lim->valuedouble > 0
                       ? lim->valuedouble : GPTOSS_LIMIT;
        return true;
    }
    const cJSON *act = config_item(ck, "hidden_act");
    l->activation = HC_MOE_SILU;
    return !act || (cJSON_IsString(act) && (!strcmp(act->valuestring, "silu") ||
                                            !strcmp(act->valuestring, "swish")));
}

static char *module_named(const hc_model *md, const char *a, const char *b) {
    char *s = hc__asprintf("%s%s", a, b);
    if (s && hc__model_find(md, s)) return s;
    free(s);
    return NULL;
}

/* Router and shared expert of the block l->name; false without a router. */
static bool block_parts(const hc_model *md, hc_moe_layer_info *l) {
    char *r = module_named(md, l->name, ".gate");
    l->router = r ? r : module_named(md, l->name, ".router");
    static const char *const shared[] = {".shared_expert.", ".shared_experts."};
    for (size_t s = 0; s < 2 && !l->shared_gate; s++) {
        char *p = hc__asprintf("%s%s", l->name, shared[s]);
        char *g = p ? module_named(md, p, "gate_proj") : NULL;
        char *u = p ? module_named(md, p, "up_proj") : NULL;
        char *d = p ? module_named(md, p, "down_proj") : NULL;
        if (g && u && d) {
            l->shared_gate = g, l->shared_up = u, l->shared_down = d;
            l->shared_expert_gate = module_named(md, l->name, ".shared_expert_gate");
        } else {
            free(g), free(u), free(d);
        }
        free(p);
    }
    return l->router != NULL;
}

/* A per-expert layer: v[0..n) sorted by key, one "<block>.experts"; ll the length of that. */
static bool per_expert_layer(const hc_model *md, const hc_module *const *v, size_t n, size_t ll,
                             hc_moe_layer_info *l) {
    int maxe = 0;
    l->layout = HC_MOE_PER_EXPERT;
    if (!(l->name = strndup(v[0]->moe_key, ll - 8))) return false; /* less ".experts" */
    for (size_t i = 0; i < n; i++) {
        const char *rest = v[i]->moe_key + ll + 2; /* after ".experts.*" */
        if (v[i]->expert > maxe) maxe = v[i]->expert;
        if (i && !strcmp(v[i]->moe_key, v[i - 1]->moe_key)) continue;
        size_t p = 0;
        while (p < sizeof projections / sizeof projections[0] && strcmp(rest, projections[p].rest))
            p++;
        if (p == sizeof projections / sizeof projections[0]) return false; /* not a projection */
        const char **slot = projections[p].role == 0 ? &l->gate
                            : projections[p].role == 1 ? &l->up : &l->down;
        if (*slot || !(*slot = hc__strdup(v[i]->moe_key))) return false;
    }
    l->experts = (uint32_t)maxe + 1;
    return l->gate && l->up && l->down && activation(md->ck, false, l) && block_parts(md, l);
}

/* A fused layer (gpt-oss): the modules "<block>.experts.{gate_up_proj,down_proj}" from v. */
static bool fused_layer(const hc_model *md, const hc_module *m, size_t pl, hc_moe_layer_info *l) {
    l->layout = HC_MOE_FUSED;
    l->gate_up_order = HC_MOE_INTERLEAVED; /* FORMATS.md section 5: row 2i gate_i, 2i+1 up_i */
    if (!(l->name = strndup(m->name, pl))) return false;
    static const char *const parts[] = {".experts.gate_up_proj", ".experts.down_proj"};
    for (int p = 0; p < 2; p++) {
        char *nm = hc__asprintf("%s%s", l->name, parts[p]);
        const hc_module *x = nm ? hc__model_find(md, nm) : NULL;
        const hc_ck_entry *w = x && x->fused ? x->t[HC_ROLE_WEIGHT] : NULL;
        const hc_ck_entry *b = x ? x->t[HC_ROLE_BIAS] : NULL;
        if (!w || w->t->ndim < 1 || w->t->shape[0] < 1 || w->t->shape[0] > HC_MOE_MAX_EXPERTS) {
            free(nm);
            return false;
        }
        *(p ? &l->down : &l->gate_up) = nm;
        l->experts = (uint32_t)w->t->shape[0];
        if (b && !(*(p ? &l->down_bias : &l->gate_up_bias) = hc__strdup(b->name))) return false;
    }
    return activation(md->ck, true, l) && block_parts(md, l);
}

/* Appends *l to the array (or frees it when keep is false). */
static hc_status push(hc_moe_layer_info **v, size_t *n, size_t *cap, hc_moe_layer_info *l,
                      bool keep, hc_err *err) {
    if (!keep) {
        hc__moe_layer_clear(l);
        return HC_OK;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        hc_moe_layer_info *nv = realloc(*v, nc * sizeof *nv);
        if (!nv) return hc__fail(err, HC_NOMEM, "out of memory");
        *v = nv, *cap = nc;
    }
    (*v)[(*n)++] = *l;
    memset(l, 0, sizeof *l);
    return HC_OK;
}

hc_status hc__model_moe_layers(const hc_model *md, hc_moe_layer_info **out, size_t *nout,
                               hc_err *err) {
    hc_moe_layer_info *v = NULL, l = {0};
    size_t n = 0, cap = 0, nm = 0;
    hc_status st = HC_OK;
    *out = NULL, *nout = 0;
    const hc_module **mv = malloc((md->n ? md->n : 1) * sizeof *mv);
    if (!mv) return hc__fail(err, HC_NOMEM, "out of memory");
    /* fused layers: md->m is sorted by name, so a block's fused modules follow one another */
    for (size_t i = 0; i < md->n && !st; i++) {
        const hc_module *m = &md->m[i];
        const char *p = m->fused ? strstr(m->name, ".experts.") : NULL;
        if (!p) continue;
        size_t pl = (size_t)(p - m->name);
        if (n && !strncmp(v[n - 1].name, m->name, pl) && !v[n - 1].name[pl]) continue;
        st = push(&v, &n, &cap, &l, fused_layer(md, m, pl, &l), err);
    }
    for (size_t i = 0; i < md->n; i++)
        if (md->m[i].expert >= 0) mv[nm++] = &md->m[i];
    qsort(mv, nm, sizeof *mv, hc__moe_member_cmp);
    for (size_t a = 0, b; a < nm && !st; a = b) {
        size_t ll = (size_t)(strstr(mv[a]->moe_key, ".experts.*") - mv[a]->moe_key) + 8;
        for (b = a; b < nm && !strncmp(mv[b]->moe_key, mv[a]->moe_key, ll + 2); b++) {}
        st = push(&v, &n, &cap, &l, per_expert_layer(md, mv + a, b - a, ll, &l), err);
    }
    free(mv);
    if (n) qsort(v, n, sizeof *v, hc__cmp_name);
    if (!st && n > HC_MOE_MAX_LAYERS)
        st = hc__fail(err, HC_UNSUPPORTED, "%zu MoE layers, more than the %u a container records",
                      n, HC_MOE_MAX_LAYERS);
    if (st) {
        hc__moe_layer_clear(&l);
        hc__moe_record_free(v, n);
        return st;
    }
    *out = v, *nout = n;
    return HC_OK;
}
