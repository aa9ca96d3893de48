/* moe_record.c: the "moe_layers" record of the container header: one table of its name fields
 * drives writing, parsing and freeing, so writer and reader cannot drift apart; the rules
 * against the tensor table are stated here once for whoever holds a table (the reader at
 * open). */
#include "moe_record.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

/* The name fields: JSON key, place in the struct, whether the name is per expert (one '*'
 * in a per-expert layer). */
static const struct {
    const char *key;
    size_t off;
    bool expert;
} fields[] = {
    {"name", offsetof(hc_moe_layer_info, name), false},
    {"gate", offsetof(hc_moe_layer_info, gate), true},
    {"up", offsetof(hc_moe_layer_info, up), true},
    {"gate_up", offsetof(hc_moe_layer_info, gate_up), true},
    {"down", offsetof(hc_moe_layer_info, down), true},
    {"gate_up_bias", offsetof(hc_moe_layer_info, gate_up_bias), true},
    {"down_bias", offsetof(hc_moe_layer_info, down_bias), true},
    {"router", offsetof(hc_moe_layer_info, router), false},
    {"shared_gate", offsetof(hc_moe_layer_info, shared_gate), false},
    {"shared_up", offsetof(hc_moe_layer_info, shared_up), false},
    {"shared_down", offsetof(hc_moe_layer_info, shared_down), false},
    {"shared_expert_gate", offsetof(hc_moe_layer_info, shared_expert_gate), false},
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static const char **field(hc_moe_layer_info *l, size_t i) {
    return (const char **)((char *)l + fields[i].off);
}
static const char *field_c(const hc_moe_layer_info *l, size_t i) {
    return *(const char *const *)((const char *)l + fields[i].off);
}

void hc__moe_layer_clear(hc_moe_layer_info *l) {
    for (size_t f = 0; f < NFIELDS; f++) free((void *)*field(l, f));
    memset(l, 0, sizeof *l);
}

void hc__moe_record_free(hc_moe_layer_info *v, size_t n) {
    for (size_t i = 0; v && i < n; i++) hc__moe_layer_clear(&v[i]);
    free(v);
}

cJSON *hc__moe_record_json(const hc_moe_layer_info *v, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        const hc_moe_layer_info *l = &v[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(a, o)) {
            cJSON_Delete(o);
            cJSON_Delete(a);
            return NULL;
        }
        bool ok = cJSON_AddStringToObject(o, "name", l->name) &&
                  cJSON_AddNumberToObject(o, "experts", l->experts) &&
                  cJSON_AddStringToObject(o, "layout",
                                          l->layout == HC_MOE_FUSED ? "fused" : "per_expert");
        for (size_t f = 1; ok && f < NFIELDS; f++)
            if (field_c(l, f)) ok = cJSON_AddStringToObject(o, fields[f].key, field_c(l, f));
        if (ok && l->gate_up)
            ok = cJSON_AddStringToObject(o, "gate_up_order", l->gate_up_order == HC_MOE_INTERLEAVED
                                                                 ? "interleaved" : "stacked");
        cJSON *act = ok ? cJSON_AddObjectToObject(o, "activation") : NULL;
        ok = act && cJSON_AddStringToObject(act, "kind", l->activation == HC_MOE_SWIGLU_CLAMP
                                                              ? "swiglu_clamp" : "silu");
        if (ok && l->activation == HC_MOE_SWIGLU_CLAMP)
            ok = cJSON_AddNumberToObject(act, "alpha", l->alpha) &&
                 cJSON_AddNumberToObject(act, "limit", l->limit);
        if (!ok) {
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static size_t stars(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += *s == '*';
    return n;
}

/* One layer's fields; `at` names it for messages ("moe_layers[3]" until its name is read). */
static hc_status parse_layer(const cJSON *o, hc_moe_layer_info *l, size_t idx, hc_err *err) {
    char at[HC_MOE_NAME_MAX + 64];
    snprintf(at, sizeof at, "moe_layers[%zu]", idx);
    if (!cJSON_IsObject(o)) return hc__fail(err, HC_INVALID, "%s is not an object", at);
    if (hc__json_duplicate_key(o)) return hc__fail(err, HC_INVALID, "%s has a duplicate key", at);
    for (size_t f = 0; f < NFIELDS; f++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, fields[f].key);
        if (!v) continue;
        if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) > HC_MOE_NAME_MAX)
            return hc__fail(err, HC_INVALID, "%s: \"%s\" must be a non-empty string of at most "
                           "%u bytes", at, fields[f].key, HC_MOE_NAME_MAX);
        if (!(*field(l, f) = hc__strdup(v->valuestring)))
            return hc__fail(err, HC_NOMEM, "out of memory");
        if (f == 0) snprintf(at, sizeof at, "MoE layer '%s'", l->name);
    }
    if (!l->name) return hc__fail(err, HC_INVALID, "%s: \"name\" is missing", at);
    uint64_t E;
    if (!hc__json_u64(cJSON_GetObjectItemCaseSensitive(o, "experts"), &E) || E < 1 ||
        E > HC_MOE_MAX_EXPERTS)
        return hc__fail(err, HC_INVALID, "%s: \"experts\" must be an integer in [1, %u]", at,
                       HC_MOE_MAX_EXPERTS);
    l->experts = (uint32_t)E;
    const char *lay = hc__json_str(o, "layout");
    if (!lay || (strcmp(lay, "per_expert") && strcmp(lay, "fused")))
        return hc__fail(err, HC_INVALID, "%s: \"layout\" must be \"per_expert\" or \"fused\"", at);
    l->layout = strcmp(lay, "fused") ? HC_MOE_PER_EXPERT : HC_MOE_FUSED;
    if (!l->down || !l->router)
        return hc__fail(err, HC_INVALID, "%s: \"down\" and \"router\" are required", at);
    if (!l->gate_up == !(l->gate && l->up) || (l->gate_up && (l->gate || l->up)))
        return hc__fail(err, HC_INVALID, "%s: either \"gate\" and \"up\" or \"gate_up\" names the "
                       "first projection, not both and not one alone", at);
    const char *ord = hc__json_str(o, "gate_up_order");
    if (l->gate_up != NULL) {
        if (!ord || (strcmp(ord, "interleaved") && strcmp(ord, "stacked")))
            return hc__fail(err, HC_INVALID, "%s: \"gate_up_order\" must be \"interleaved\" or "
                           "\"stacked\"", at);
        l->gate_up_order = strcmp(ord, "stacked") ? HC_MOE_INTERLEAVED : HC_MOE_STACKED;
    } else if (cJSON_GetObjectItemCaseSensitive(o, "gate_up_order")) {
        return hc__fail(err, HC_INVALID, "%s: \"gate_up_order\" without \"gate_up\"", at);
    }
    if (l->gate_up_bias && !l->gate_up)
        return hc__fail(err, HC_INVALID, "%s: \"gate_up_bias\" without \"gate_up\"", at);
    bool per = l->layout == HC_MOE_PER_EXPERT;
    for (size_t f = 0; f < NFIELDS; f++) {
        const char *s = field_c(l, f);
        size_t want = per && fields[f].expert ? 1 : 0;
        if (s && stars(s) != want)
            return hc__fail(err, HC_INVALID, "%s: \"%s\" '%s' must hold %s", at, fields[f].key, s,
                           want ? "exactly one '*' (the expert id of a per-expert layer)"
                                : "no '*' (it names one layer)");
    }
    int shared = !!l->shared_gate + !!l->shared_up + !!l->shared_down;
    if ((shared != 0 && shared != 3) || (l->shared_expert_gate && !shared))
        return hc__fail(err, HC_INVALID, "%s: a shared expert needs all of \"shared_gate\", "
                       "\"shared_up\", \"shared_down\" (and \"shared_expert_gate\" only with them)",
                       at);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "activation");
    const char *kind = cJSON_IsObject(act) ? hc__json_str(act, "kind") : NULL;
    if (!kind || hc__json_duplicate_key(act) ||
        (strcmp(kind, "silu") && strcmp(kind, "swiglu_clamp")))
        return hc__fail(err, HC_INVALID, "%s: \"activation\" must be an object whose \"kind\" is "
                       "\"silu\" or \"swiglu_clamp\"", at);
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(act, "alpha");
    const cJSON *li = cJSON_GetObjectItemCaseSensitive(act, "limit");
    if (!strcmp(kind, "silu")) {
        if (al || li)
            return hc__fail(err, HC_INVALID, "%s: a silu activation takes no alpha or limit", at);
        return HC_OK;
    }
    l->activation = HC_MOE_SWIGLU_CLAMP;
    if (!cJSON_IsNumber(al) || !cJSON_IsNumber(li) || !isfinite(al->valuedouble) ||
        !isfinite(li->valuedouble) || !(al->valuedouble > 0) || !(li->valuedouble > 0))
        return hc__fail(err, HC_INVALID, "%s: a swiglu_clamp activation needs a finite alpha > 0 "
                       "and limit > 0", at);
    l->alpha = al->valuedouble, l->limit = li->valuedouble;
    if (!l->gate_up)
        return hc__fail(err, HC_INVALID, "%s: swiglu_clamp is gpt-oss's activation, over a "
                       "\"gate_up\" projection", at);
    return HC_OK;
}

hc_status hc__moe_record_parse(const cJSON *a, hc_moe_layer_info **out, size_t *n, hc_err *err) {
    *out = NULL, *n = 0;
    if (!cJSON_IsArray(a)) return hc__fail(err, HC_INVALID, "\"moe_layers\" is not an array");
    int cnt = cJSON_GetArraySize(a);
    if (cnt < 0 || (unsigned)cnt > HC_MOE_MAX_LAYERS)
        return hc__fail(err, HC_INVALID, "\"moe_layers\" holds %d layers, more than the %u "
                       "allowed", cnt, HC_MOE_MAX_LAYERS);
    hc_moe_layer_info *v = calloc(cnt ? (size_t)cnt : 1, sizeof *v);
    if (!v) return hc__fail(err, HC_NOMEM, "out of memory");
    size_t i = 0;
    const cJSON *o;
    hc_status st = HC_OK;
    cJSON_ArrayForEach(o, a) {
        st = parse_layer(o, &v[i], i, err);
        i++;
        if (st) break;
    }
    const char *dup = NULL;
    if (!st) st = hc__first_duplicate_name(v, i, sizeof *v, &dup, err);
    if (!st && dup) st = hc__fail(err, HC_INVALID, "MoE layer '%s' is recorded twice", dup);
    if (st) {
        hc__moe_record_free(v, i);
        return st;
    }
    *out = v, *n = i;
    return HC_OK;
}

bool hc__moe_expert_name(const char *pattern, uint32_t e, char *out, size_t cap) {
    const char *s = strchr(pattern, '*');
    int r = s ? snprintf(out, cap, "%.*s%u%s", (int)(s - pattern), pattern, e, s + 1)
              : snprintf(out, cap, "%s", pattern);
    return r >= 0 && (size_t)r < cap;
}

/* ---- the rules against the tensor table ---- */

/* The dimensions a layer's shapes must agree on; E and 1 are fixed, the others are set by
 * the first known shape that gives them. */
enum { D_E, D_ONE, D_H, D_I, D_IS, D_COUNT };
static const char *const dim_names[D_COUNT] = {"E", "1", "H", "I", "Is"};

typedef struct {
    const hc_moe_layer_info *l;
    const hc_moe_lookup *lk;
    uint64_t d[D_COUNT];
    const char *from[D_COUNT]; /* the field that set it */
    hc_err *err;
} checker;

static hc_status agree(checker *c, int id, uint64_t v, const char *key, const char *name) {
    if (!c->from[id]) {
        c->d[id] = v, c->from[id] = key;
        return HC_OK;
    }
    if (c->d[id] == v) return HC_OK;
    return hc__fail(c->err, HC_INVALID, "MoE layer '%s': \"%s\" '%s' makes %s = %llu, \"%s\" makes "
                   "it %llu (rule: gate and up are [I, H], gate_up [2I, H], down [H, I], the "
                   "router [E, H], the shared expert [Is, H] and [H, Is])", c->l->name, key, name,
                   dim_names[id], (unsigned long long)v, c->from[id], (unsigned long long)c->d[id]);
}

/* The layer(s) of field f exist (every expert's, for a per-expert name) and their [N, K]
 * agree with [nmul x dim n, dim k]; E is 1 per expert, the record's E when fused. */
static hc_status check_linear(checker *c, size_t f, int n, uint64_t nmul, int k) {
    const hc_moe_layer_info *l = c->l;
    const char *pat = field_c(l, f), *key = fields[f].key;
    if (!pat) return HC_OK;
    bool per = fields[f].expert && l->layout == HC_MOE_PER_EXPERT;
    uint64_t wantE = fields[f].expert && !per ? l->experts : 1;
    char name[HC_MOE_NAME_MAX + 16];
    for (uint32_t e = 0; e < (per ? l->experts : 1); e++) {
        hc_moe_dims s = {0};
        if (!hc__moe_expert_name(pat, e, name, sizeof name))
            return hc__fail(c->err, HC_INTERNAL, "MoE layer '%s': name too long", l->name);
        if (!c->lk->linear(c->lk->ctx, name, &s))
            return hc__fail(c->err, HC_INVALID, "MoE layer '%s': \"%s\" names '%s', which is not a "
                           "linear layer of the container (rule: every layer the record names "
                           "exists%s)", l->name, key, name, per ? ", for every expert in [0, E)" : "");
        if (!s.known) continue;
        if (s.E != wantE)
            return hc__fail(c->err, HC_INVALID, "MoE layer '%s': \"%s\" '%s' holds %llu expert(s), "
                           "not %llu (rule: a per-expert layer holds one, a fused one E = %u)",
                           l->name, key, name, (unsigned long long)s.E,
                           (unsigned long long)wantE, l->experts);
        if (s.N % nmul)
            return hc__fail(c->err, HC_INVALID, "MoE layer '%s': \"%s\" '%s' has %llu rows, not "
                           "2I (rule: gate_up holds gate and up, I rows each)", l->name, key, name,
                           (unsigned long long)s.N);
        HC_TRY(agree(c, n, s.N / nmul, key, name));
        HC_TRY(agree(c, k, s.K, key, name));
    }
    return HC_OK;
}

/* The bias tensor(s) of field f: [rows] per expert, or [E, rows] fused, rows = nmul x dim n. */
static hc_status check_bias(checker *c, size_t f, int n, uint64_t nmul) {
    const hc_moe_layer_info *l = c->l;
    const char *pat = field_c(l, f), *key = fields[f].key;
    if (!pat) return HC_OK;
    bool per = l->layout == HC_MOE_PER_EXPERT;
    char name[HC_MOE_NAME_MAX + 16];
    for (uint32_t e = 0; e < (per ? l->experts : 1); e++) {
        int nd = 0;
        const uint64_t *sh = NULL;
        if (!hc__moe_expert_name(pat, e, name, sizeof name))
            return hc__fail(c->err, HC_INTERNAL, "MoE layer '%s': name too long", l->name);
        if (!c->lk->tensor(c->lk->ctx, name, &nd, &sh))
            return hc__fail(c->err, HC_INVALID, "MoE layer '%s': \"%s\" names '%s', which is not a "
                           "tensor of the container (rule: every tensor the record names exists)",
                           l->name, key, name);
        if (nd != (per ? 1 : 2) || (!per && sh[0] != l->experts) || sh[nd - 1] % nmul)
            return hc__fail(c->err, HC_INVALID, "MoE layer '%s': \"%s\" '%s' is not %s (rule: a "
                           "bias has one row of its projection's outputs per expert)", l->name,
                           key, name, per ? "1-D" : "[E, rows] with the record's E");
        HC_TRY(agree(c, n, sh[nd - 1] / nmul, key, name));
    }
    return HC_OK;
}

static size_t field_index(const char *key) {
    for (size_t f = 0; f < NFIELDS; f++)
        if (!strcmp(fields[f].key, key)) return f;
    return 0; /* not reached: the keys below are the table's */
}

hc_status hc__moe_record_check(const hc_moe_layer_info *l, const hc_moe_lookup *lk, hc_err *err) {
    checker c = {.l = l, .lk = lk, .err = err};
    c.d[D_E] = l->experts, c.from[D_E] = "experts";
    c.d[D_ONE] = 1, c.from[D_ONE] = "a single row";
    static const struct {
        const char *key;
        int n;
        uint64_t nmul;
        int k; /* -1: a bias */
    } terms[] = {
        {"gate", D_I, 1, D_H},          {"up", D_I, 1, D_H},
        {"gate_up", D_I, 2, D_H},       {"down", D_H, 1, D_I},
        {"gate_up_bias", D_I, 2, -1},   {"down_bias", D_H, 1, -1},
        {"router", D_E, 1, D_H},        {"shared_gate", D_IS, 1, D_H},
        {"shared_up", D_IS, 1, D_H},    {"shared_down", D_H, 1, D_IS},
        {"shared_expert_gate", D_ONE, 1, D_H},
    };
    for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++) {
        size_t f = field_index(terms[t].key);
        HC_TRY(terms[t].k < 0 ? check_bias(&c, f, terms[t].n, terms[t].nmul)
                              : check_linear(&c, f, terms[t].n, terms[t].nmul, terms[t].k));
    }
    return HC_OK;
}
