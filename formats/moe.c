/* moe.c: MoE layers across modules. Every projection of a per-expert layer must hold every
 * expert id in [0, E) (E from the config), every expert of a projection the same shape and
 * scheme, and the layer its router and, where the config says there is one, its shared
 * expert. Used by validate and by convert, which refuses what validate rejects. */
#include "moe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

#define MAX_LISTED 256  /* expert ids one finding lists; its count holds them all */
#define MAX_NAMED 4     /* module names one message spells out */
#define MAX_EXPERTS (1 << 20)

/* A number of the config (or of its text_config, for multimodal wrappers). */
typedef struct {
    char field[48]; /* where it was found, e.g. "num_experts", "text_config.n_routed_experts" */
    double v;       /* NAN when absent */
} cfg_value;

static cfg_value config_value(const hc_ckpt *ck, const char *const *keys, size_t nkeys) {
    cfg_value r = {"", NAN};
    const cJSON *cfg = ck->config;
    const cJSON *tc = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "text_config") : NULL;
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *o = pass ? tc : cfg;
        for (size_t k = 0; cJSON_IsObject(o) && k < nkeys; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
            if (!v || cJSON_IsNull(v)) continue;
            snprintf(r.field, sizeof r.field, "%s%s", pass ? "text_config." : "", keys[k]);
            r.v = cJSON_IsNumber(v) ? v->valuedouble : -1; /* present, not a number */
            return r;
        }
    }
    return r;
}

/* The routed expert count, 0 when the config gives none it can be held to. */
static int config_experts(const hc_ckpt *ck, char *field, size_t field_len) {
    static const char *const keys[] = {"num_experts", "num_local_experts", "n_routed_experts",
                                       "moe_num_experts"};
    cfg_value c = config_value(ck, keys, sizeof keys / sizeof keys[0]);
    snprintf(field, field_len, "%s", c.field);
    if (c.v >= 1 && c.v <= MAX_EXPERTS && c.v == floor(c.v)) return (int)c.v;
    return 0;
}

void hc__join_ids(const int *v, size_t n, char *out, size_t cap) {
    out[0] = 0;
    for (size_t i = 0; i < n && strlen(out) + 16 < cap; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%d", i ? ", " : "", v[i]);
}

int hc__moe_member_cmp(const void *a, const void *b) {
    const hc_module *x = *(const hc_module *const *)a, *y = *(const hc_module *const *)b;
    int r = strcmp(x->moe_key, y->moe_key);
    return r ? r : (x->expert > y->expert) - (x->expert < y->expert);
}

/* Length of "<prefix>.experts" in a MoE key "<prefix>.experts.*<rest>". */
static size_t layer_len(const char *key) { return (size_t)(strstr(key, ".experts.*") - key) + 8; }

/* The ids of [lo, hi) absent from the sorted have[0..n): the first cap into out; returns how
 * many there are. Linear in n (not in hi - lo): a hostile expert count costs nothing. */
static uint64_t absent_range(const int *have, size_t n, int lo, int hi, int *out, size_t cap,
                             size_t *nout) {
    uint64_t in = 0;
    int next = lo;
    *nout = 0;
    for (size_t i = 0; i <= n; i++) {
        int until = i < n ? have[i] : hi;
        if (until > hi) until = hi;
        for (int e = next; e < until && *nout < cap; e++) out[(*nout)++] = e;
        if (i < n && have[i] >= lo && have[i] < hi) in++, next = have[i] + 1;
        if (until >= hi) break;
    }
    return (uint64_t)(hi - lo) - in;
}

/* The ids of sorted a[] absent from sorted b[] (first cap into out); returns how many. */
static uint64_t absent_list(const int *a, size_t na, const int *b, size_t nb, int *out,
                            size_t cap, size_t *nout) {
    uint64_t cnt = 0;
    *nout = 0;
    for (size_t i = 0, j = 0; i < na; i++) {
        while (j < nb && b[j] < a[i]) j++;
        if (j < nb && b[j] == a[i]) continue;
        cnt++;
        if (*nout < cap) out[(*nout)++] = a[i];
    }
    return cnt;
}

/* "config.json num_experts = 8", or how the count was found instead. */
static void count_note(const char *field, int E, int cfgE, char *out, size_t cap) {
    if (cfgE) snprintf(out, cap, "config.json %s = %d", field, E);
    else if (field[0]) snprintf(out, cap, "config.json %s is not a positive integer: %d counted "
                                "from the highest id", field, E);
    else snprintf(out, cap, "config.json gives no expert count (num_experts, num_local_experts, "
                  "n_routed_experts): %d counted from the highest id", E);
}

/* One finding per projection whose experts do not cover the layer's. */
static void check_projection(const hc_module *const *v, size_t n, const int *ids, size_t nids,
                             const char *note, int *bad, hc_findings *f) {
    const hc_module *m = v[0];
    size_t ll = layer_len(m->moe_key);
    int *have = malloc((n ? n : 1) * sizeof *have);
    if (!have) return;
    for (size_t i = 0; i < n; i++) have[i] = v[i]->expert;
    size_t nb;
    uint64_t cnt = absent_list(ids, nids, have, n, bad, MAX_LISTED, &nb);
    free(have);
    if (!cnt) return;
    const char *rest = m->moe_key + ll + 2; /* after ".experts.*" */
    char names[2048] = "", *first = hc__asprintf("%.*s.%d%s", (int)ll, m->moe_key, bad[0], rest);
    for (size_t i = 0; i < nb && i < MAX_NAMED; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%.*s.%d%s'",
                 i ? ", " : "", (int)ll, m->moe_key, bad[i], rest);
    if (cnt > MAX_NAMED)
        snprintf(names + strlen(names), sizeof names - strlen(names), " and %llu more",
                 (unsigned long long)(cnt - MAX_NAMED));
    hc__findings_add(f, HC_SEV_ERROR, first, "missing", cnt, bad, nb,
                    "MoE layer '%.*s': %s %s missing, though %s other projections are present "
                    "(%s; every expert needs every projection)", (int)ll, m->moe_key, names,
                    cnt == 1 ? "is" : "are", cnt == 1 ? "its" : "their", note);
    free(first);
}

/* A per-expert layer: v[0..n) sorted by key then expert, all of one "<prefix>.experts". */
static void check_layer_experts(const hc_module *const *v, size_t n, int cfgE,
                                const char *field, int *ids, int *bad, hc_findings *f) {
    size_t ll = layer_len(v[0]->moe_key), nids = 0;
    for (size_t i = 0; i < n; i++) ids[nids++] = v[i]->expert;
    qsort(ids, nids, sizeof *ids, hc__cmp_int);
    size_t u = 0;
    for (size_t k = 0; k < nids; k++)
        if (!u || ids[u - 1] != ids[k]) ids[u++] = ids[k];
    nids = u;
    int E = cfgE ? cfgE : ids[nids - 1] + 1;
    char note[256], s[1200];
    count_note(field, E, cfgE, note, sizeof note);
    size_t nb;
    uint64_t cnt = absent_range(ids, nids, 0, E, bad, MAX_LISTED, &nb);
    char *layer = strndup(v[0]->moe_key, ll);
    if (!layer) return;
    if (cnt) {
        hc__join_ids(bad, nb, s, sizeof s);
        hc__findings_add(f, HC_SEV_ERROR, layer, "missing", cnt, bad, nb,
                        "MoE layer '%s': %llu of %d experts missing (experts %s%s; %s)", layer,
                        (unsigned long long)cnt, E, s, cnt > nb ? ", ..." : "", note);
    }
    size_t hi = 0;
    while (hi < nids && ids[hi] < E) hi++;
    if (hi < nids) {
        size_t nl = nids - hi < MAX_LISTED ? nids - hi : MAX_LISTED;
        hc__join_ids(ids + hi, nl, s, sizeof s);
        hc__findings_add(f, HC_SEV_ERROR, layer, "expert id", nids - hi, ids + hi, nl,
                        "MoE layer '%s': expert ids %s are outside 0..%d (%s)", layer, s, E - 1,
                        note);
    }
    free(layer);
    /* each projection against the ids the layer has in range */
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && !strcmp(v[b]->moe_key, v[a]->moe_key); b++) {}
        check_projection(v + a, b - a, ids, hi, note, bad, f);
    }
}

/* The same projection of every expert: one shape and one scheme (the first decoded decides). */
static void check_alike(const hc_model *md, const hc_module *const *v, size_t n,
                        const hc_moe_shape *res, int *bad, hc_findings *f) {
    const hc_moe_shape *ref = NULL;
    const hc_scheme *rs = NULL;
    size_t nb = 0;
    uint64_t cnt = 0;
    for (size_t i = 0; i < n; i++) {
        const hc_moe_shape *r = &res[v[i] - md->m];
        const hc_scheme *s = &v[i]->scheme;
        if (!r->decoded) continue;
        if (!ref) {
            ref = r, rs = s;
            continue;
        }
        if (r->N != ref->N || r->K != ref->K || r->kind != ref->kind || r->bits != ref->bits ||
            r->gk != ref->gk || s->fmt != rs->fmt || s->symmetric != rs->symmetric ||
            s->strategy != rs->strategy || s->scale_inverse != rs->scale_inverse) {
            cnt++;
            if (nb < MAX_LISTED) bad[nb++] = v[i]->expert;
        }
    }
    if (!cnt) return;
    char s[1200];
    hc__join_ids(bad, nb, s, sizeof s);
    hc__findings_add(f, HC_SEV_ERROR, v[0]->moe_key, "shape", cnt, bad, nb,
                    "MoE layer '%s': experts %s differ in shape or scheme from the others ([%llu, "
                    "%llu], %d-bit, group %llu, %s)", v[0]->moe_key, s,
                    (unsigned long long)ref->N, (unsigned long long)ref->K, ref->bits,
                    (unsigned long long)ref->gk, hc__fmt_name(rs->fmt));
}

/* Whether the module "<p><a><b>" exists (out of memory: assumed to, no false finding). */
static bool has_module(const hc_model *md, const char *p, size_t pl, const char *a,
                       const char *b) {
    char *name = hc__asprintf("%.*s%s%s", (int)pl, p, a, b);
    bool r = !name || hc__model_find(md, name) != NULL;
    free(name);
    return r;
}

/* Whether the module "<p><a>" exists or one under it, "<p><a>.*" (HunYuan-MoE-V1's router
 * is "mlp.gate.wg"). md->m is sorted by name, so the first name not below "<p><a>." is the
 * only one to look at. Out of memory: assumed to, no false finding. */
static bool has_module_or_under(const hc_model *md, const char *p, size_t pl, const char *a) {
    char *dotted = hc__asprintf("%.*s%s.", (int)pl, p, a);
    if (!dotted) return true;
    size_t dl = strlen(dotted), lo = 0, hi = md->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(md->m[mid].name, dotted) < 0) lo = mid + 1;
        else hi = mid;
    }
    bool r = lo < md->n && !strncmp(md->m[lo].name, dotted, dl);
    free(dotted);
    return r || has_module(md, p, pl, a, "");
}

/* Router and shared expert of the layer "<p>" (its experts under "<p>.experts"). */
static void check_layer_parts(const hc_model *md, const char *p, size_t pl, hc_findings *f) {
    static const char *const moe_blocks[] = {".mlp", ".block_sparse_moe", ".feed_forward"};
    static const struct {
        const char *field, *sub;
        const char *const parts[4];
    } shared[] = {
        {"shared_expert_intermediate_size", ".shared_expert", /* Qwen2-MoE, Qwen3-Next */
         {".gate_proj", ".up_proj", ".down_proj", "_gate"}},
        {"n_shared_experts", ".shared_experts", /* DeepSeek-V2/V3, GLM-4.5 */
         {".gate_proj", ".up_proj", ".down_proj", NULL}},
    };
    char *layer = strndup(p, pl);
    if (!layer) return;
    bool block = false;
    for (size_t i = 0; i < sizeof moe_blocks / sizeof moe_blocks[0]; i++) {
        size_t bl = strlen(moe_blocks[i]);
        block |= pl >= bl && !strncmp(p + pl - bl, moe_blocks[i], bl);
    }
    if (block && !has_module_or_under(md, p, pl, ".gate") &&
        !has_module_or_under(md, p, pl, ".router")) {
        char *gate = hc__asprintf("%s.gate", layer);
        hc__findings_add(f, HC_SEV_ERROR, gate, "router", 0, NULL, 0,
                        "MoE layer '%s': no router (neither '%s.gate' nor '%s.router', nor a "
                        "module under them): its experts cannot be chosen", layer, layer, layer);
        free(gate);
    }
    for (size_t s = 0; s < sizeof shared / sizeof shared[0]; s++) {
        const char *const key[] = {shared[s].field};
        cfg_value c = config_value(md->ck, key, 1);
        if (!(c.v > 0)) continue;
        char names[2048] = "", *first = NULL;
        size_t nmiss = 0;
        for (size_t k = 0; k < 4 && shared[s].parts[k]; k++) {
            if (has_module(md, p, pl, shared[s].sub, shared[s].parts[k])) continue;
            if (!nmiss++) first = hc__asprintf("%s%s%s", layer, shared[s].sub, shared[s].parts[k]);
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%s%s%s'",
                     nmiss > 1 ? ", " : "", layer, shared[s].sub, shared[s].parts[k]);
        }
        if (nmiss)
            hc__findings_add(f, HC_SEV_ERROR, first, "shared expert", nmiss, NULL, 0,
                            "MoE layer '%s': shared expert %s %s missing (config.json %s = %g "
                            "says the layer has one)", layer, names, nmiss == 1 ? "is" : "are",
                            c.field, c.v);
        free(first);
    }
    free(layer);
}

/* Fused layers (gpt-oss: one module holds all experts): count them, hold the leading dimension
 * to the config, check their router. */
static void check_fused(const hc_model *md, int cfgE, const char *field, hc_findings *f,
                        int *layers) {
    const char *prev = NULL;
    size_t prev_len = 0;
    for (size_t i = 0; i < md->n; i++) {
        const hc_module *m = &md->m[i];
        const char *p = m->fused ? strstr(m->name, ".experts.") : NULL;
        if (!p) continue;
        size_t pl = (size_t)(p - m->name);
        const hc_ck_entry *w = m->t[HC_ROLE_WEIGHT];
        if (cfgE && w && w->t->ndim >= 1 && w->t->shape[0] != (uint64_t)cfgE)
            hc__findings_add(f, HC_SEV_ERROR, w->name,
                            w->t->shape[0] < (uint64_t)cfgE ? "missing" : "expert id", 0, NULL, 0,
                            "tensor '%s': holds %llu experts, config.json %s = %d", w->name,
                            (unsigned long long)w->t->shape[0], field, cfgE);
        /* md->m is sorted by name and every name starting "<prefix>.experts." has its first
         * ".experts." at the same place, so a layer's fused modules follow one another among
         * the fused ones: the previous one alone tells whether the layer was counted (a scan
         * of all earlier modules made 80k fused tensors take 46 s) */
        bool seen = prev && prev_len == pl && !strncmp(prev, m->name, pl);
        prev = m->name, prev_len = pl;
        if (seen) continue;
        (*layers)++;
        check_layer_parts(md, m->name, pl, f);
    }
}

void hc__model_check_moe(const hc_model *md, const hc_moe_shape *res, hc_findings *f, int *layers) {
    char field[48];
    int cfgE = config_experts(md->ck, field, sizeof field);
    *layers = 0;
    check_fused(md, cfgE, field, f, layers);
    size_t n = 0;
    const hc_module **v = malloc((md->n ? md->n : 1) * sizeof *v);
    int *ids = malloc((md->n ? md->n : 1) * sizeof *ids);
    int *bad = malloc(MAX_LISTED * sizeof *bad);
    if (!v || !ids || !bad) goto out;
    for (size_t i = 0; i < md->n; i++)
        if (md->m[i].expert >= 0) v[n++] = &md->m[i];
    qsort(v, n, sizeof *v, hc__moe_member_cmp);
    /* a layer is a run of keys sharing "<prefix>.experts.*"; a projection a run of one key */
    for (size_t a = 0, b; a < n; a = b) {
        size_t ll = layer_len(v[a]->moe_key);
        for (b = a; b < n && !strncmp(v[b]->moe_key, v[a]->moe_key, ll + 2); b++) {}
        (*layers)++;
        check_layer_experts(v + a, b - a, cfgE, field, ids, bad, f);
        for (size_t c = a, d; c < b; c = d) {
            for (d = c; d < b && !strcmp(v[d]->moe_key, v[c]->moe_key); d++) {}
            check_alike(md, v + c, d - c, res, bad, f);
        }
        check_layer_parts(md, v[a]->moe_key, ll - 8, f);
    }
out:
    free(v);
    free(ids);
    free(bad);
}
