/* model.c: groups a checkpoint's tensors into modules (weight + scales + zero points + ...)
 * and resolves each module's scheme from the quantization config of its format. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonutil.h"
#include "pyregex.h"
#include "quant.h"

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

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

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
            if (ends_with(dot + 1, fs[i].s)) {
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
    *module = hc_strdup(name); /* a tensor of its own, e.g. e_score_correction_bias */
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

static int cmp_module(const void *a, const void *b) {
    return strcmp(((const hc_module *)a)->name, ((const hc_module *)b)->name);
}

const hc_module *hc_model_find(const hc_model *m, const char *name) {
    return hc_find_by_name(m->m, m->n, sizeof *m->m, name);
}

static int cmp_expert(const void *a, const void *b) {
    return (*(const hc_module *const *)a)->expert - (*(const hc_module *const *)b)->expert;
}

size_t hc_model_experts(const hc_model *m, const char *stacked, const hc_module **out,
                        size_t cap) {
    const char *p = strstr(stacked, ".experts.");
    if (!p) return 0;
    char *key = hc_asprintf("%.*s.experts.*.%s", (int)(p - stacked), stacked, p + 9);
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
    m->moe_key = hc_asprintf("%.*s.experts.*%s", (int)(p - m->name), m->name, e);
}

/* An integer config value: dflt when absent or null, HC_BAD_NUM when not an integer in range
 * (the decoder's scheme check then refuses the module with a finding). */
#define HC_BAD_NUM INT64_MIN
static int64_t cfg_num(const cJSON *v, int64_t dflt) {
    if (!v || cJSON_IsNull(v)) return dflt;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= -1e9 && d <= 1e9) || d != floor(d)) return HC_BAD_NUM;
    return (int64_t)d;
}

/* JSON types a configuration field may take. */
enum { T_NULL = 1, T_BOOL = 2, T_NUM = 4, T_STR = 8, T_ARR = 16, T_OBJ = 32 };

static unsigned json_bit(const cJSON *v) {
    return cJSON_IsNull(v) ? T_NULL : cJSON_IsBool(v) ? T_BOOL : cJSON_IsNumber(v) ? T_NUM
           : cJSON_IsString(v) ? T_STR : cJSON_IsArray(v) ? T_ARR : cJSON_IsObject(v) ? T_OBJ : 0;
}

static const char *json_type(const cJSON *v) {
    switch (json_bit(v)) {
    case T_NULL: return "null";
    case T_BOOL: return "a boolean";
    case T_NUM: return "a number";
    case T_STR: return "a string";
    case T_ARR: return "an array";
    case T_OBJ: return "an object";
    }
    return "not a JSON value";
}

/* A configuration field of a type its reader cannot take (an array where an object of
 * overrides belongs, "false" as a string where a boolean does): a finding naming the field
 * and the type it must have. True when the field is absent or of an allowed type. */
static bool cfg_typed(hc_findings *f, const char *cfgname, const char *path, const cJSON *v,
                      unsigned ok, const char *want) {
    if (!v || (json_bit(v) & ok)) return true;
    hc_findings_add(f, HC_SEV_ERROR, cfgname, "config type", 0, NULL, 0,
                    "%s: '%s' is %s; it must be %s", cfgname, path, json_type(v), want);
    return false;
}

/* cfg_typed for the field key of obj, its path prefix + key. */
static bool field_typed(hc_findings *f, const char *cfgname, const char *prefix, const cJSON *obj,
                        const char *key, unsigned ok, const char *want) {
    char path[256];
    snprintf(path, sizeof path, "%s%s", prefix, key);
    return cfg_typed(f, cfgname, path, cJSON_GetObjectItemCaseSensitive(obj, key), ok, want);
}

/* A list whose entries are all strings (targets, ignore). */
static bool strings_typed(hc_findings *f, const char *cfgname, const char *path, const cJSON *v,
                          unsigned ok) {
    if (!cfg_typed(f, cfgname, path, v, ok | T_ARR, "a list of strings")) return false;
    const cJSON *t, *list = cJSON_IsArray(v) ? v : NULL;
    int i = 0;
    cJSON_ArrayForEach(t, list) {
        char p[300];
        snprintf(p, sizeof p, "%s[%d]", path, i++);
        if (!cfg_typed(f, cfgname, p, t, T_STR, "a string")) return false;
    }
    return true;
}

static bool is_float_dtype(hc_dtype d) {
    return d == HC_DT_F16 || d == HC_DT_BF16 || d == HC_DT_F32 || d == HC_DT_F64;
}

/* A module carries quantized tensors when it has a scale or a packed/integer/fp8 weight. */
bool hc_module_carries_quant(const hc_module *m) {
    if (m->fused || m->t[HC_ROLE_SCALE] || m->t[HC_ROLE_ZERO] || m->t[HC_ROLE_SHAPE]) return true;
    const hc_ck_entry *w = m->t[HC_ROLE_WEIGHT];
    return w && !is_float_dtype(w->t->dtype) && strstr(w->name, "packed");
}

/* ---------------- module-name patterns ---------------- */

/* All pattern matching of one model open shares one budget of NFA state visits (compiling a
 * pattern costs its states too): a config of hostile patterns (`(?:.?){2040}Q` x 100 on 1,000
 * modules took 67 s before) ends in a finding instead. An honest config needs a small part:
 * 100,000 module names x 10 patterns spend about 4e7, a fifth (docs/regex.md). */
#define HC_REGEX_BUDGET 200000000ull
/* Compiled patterns kept for reuse, in bytes (program and DFA cache, hc_pyre_footprint); past
 * it a pattern is compiled on each use, still charged to the budget, so memory stays bounded. */
#define RETAIN_BYTES ((size_t)64 << 20)

typedef struct {
    uint64_t budget; /* NFA state visits left */
    size_t retained; /* bytes of the patterns kept */
} re_work;

/* The compiled patterns of one list (ignore, a group's targets, dynamic), by entry index;
 * NULL until first used, or when not kept. */
typedef struct {
    hc_pyre **re;
    size_t n;
} pat_list;

static bool pat_list_init(pat_list *pl, const cJSON *list) {
    int n = cJSON_IsArray(list) || cJSON_IsObject(list) ? cJSON_GetArraySize(list) : 0;
    pl->n = n > 0 ? (size_t)n : 0;
    pl->re = calloc(pl->n ? pl->n : 1, sizeof *pl->re);
    return pl->re != NULL;
}

static void pat_list_free(pat_list *pl) {
    for (size_t i = 0; pl->re && i < pl->n; i++) hc_pyre_free(pl->re[i]);
    free(pl->re);
    pl->re = NULL;
}

/* Entry j of pl (pattern text pattern) on name: 1, 0, -1 refused, HC_PYRE_OVER_BUDGET. */
static int pat_run(re_work *w, pat_list *pl, size_t j, const char *pattern, const char *name,
                   char *msg, unsigned msg_len) {
    hc_pyre *re = j < pl->n ? pl->re[j] : NULL, *fresh = NULL;
    if (!re) {
        if (!(re = fresh = hc_pyre_compile(pattern, msg, msg_len))) return -1;
        uint64_t st = hc_pyre_states(re);
        w->budget = w->budget > st ? w->budget - st : 0; /* at 0 the run below reports it */
        size_t bytes = hc_pyre_footprint(re);
        if (j < pl->n && bytes <= RETAIN_BYTES - w->retained) {
            pl->re[j] = re, fresh = NULL;
            w->retained += bytes;
        }
    }
    int r = hc_pyre_exec(re, name, &w->budget, msg, msg_len);
    hc_pyre_free(fresh);
    return r;
}

/* A pattern that gives no answer: refused (rule, e.g. "ignore pattern"), or the budget ran out
 * at it ("regex work"). entry is its path, field the list's. */
static void pattern_finding(hc_findings *f, const char *rule, const char *field,
                            const char *entry, const char *pattern, int r, const char *msg) {
    if (r == HC_PYRE_OVER_BUDGET)
        hc_findings_add(f, HC_SEV_ERROR, entry, "regex work", 0, NULL, 0,
                        "%s: matching module names against the patterns ran past the bound of "
                        "%llu NFA state visits for one checkpoint, at %s '%s' (docs/regex.md)",
                        field, (unsigned long long)HC_REGEX_BUDGET, entry, pattern);
    else
        hc_findings_add(f, HC_SEV_ERROR, entry, rule, 0, NULL, 0,
                        "%s: pattern '%s' is not supported: %s", entry, pattern, msg);
}

/* ---------------- compressed-tensors ---------------- */

static void parse_version(const char *s, int v[3]) {
    v[0] = v[1] = v[2] = 0;
    if (s) sscanf(s, "%d.%d.%d", &v[0], &v[1], &v[2]);
}

static int target_match(re_work *w, pat_list *pl, size_t j, const char *target,
                        const hc_module *m, int pass, char *msg, unsigned msg_len) {
    if (strncmp(target, "re:", 3) == 0)
        return pass == 1 ? pat_run(w, pl, j, target + 3, m->name, msg, msg_len) : 0;
    if (pass == 0) return strcmp(target, m->name) == 0;
    if (pass == 2) return strcmp(target, "Linear") == 0 && hc_module_carries_quant(m);
    return 0;
}

/* Returns 1 when any entry of the list matches, -1 on a bad pattern, HC_PYRE_OVER_BUDGET when
 * the budget ran out; *at is the entry that decided. */
static int list_match(re_work *w, pat_list *pl, const cJSON *list, const hc_module *m, int pass,
                      int *at, char *msg, unsigned msg_len) {
    const cJSON *t;
    int j = 0;
    cJSON_ArrayForEach(t, list) {
        *at = j++;
        if (!cJSON_IsString(t)) continue;
        int r = target_match(w, pl, (size_t)*at, t->valuestring, m, pass, msg, msg_len);
        if (r) return r;
    }
    return 0;
}

/* The pattern lists of a compressed-tensors config: ignore, and each group's targets. */
typedef struct {
    re_work work;
    pat_list ignore, *groups;
    size_t n_groups;
} ct_patterns;

static bool ct_patterns_init(ct_patterns *cp, const cJSON *ignore, const cJSON *groups) {
    const cJSON *g;
    int n = cJSON_IsObject(groups) ? cJSON_GetArraySize(groups) : 0;
    *cp = (ct_patterns){{HC_REGEX_BUDGET, 0}, {NULL, 0}, NULL, 0};
    cp->groups = calloc(n > 0 ? (size_t)n : 1, sizeof *cp->groups);
    if (!cp->groups || !pat_list_init(&cp->ignore, ignore)) return false;
    cJSON_ArrayForEach(g, groups) {
        const cJSON *tg = cJSON_IsArray(g) ? g : cJSON_GetObjectItemCaseSensitive(g, "targets");
        if (cp->n_groups >= (size_t)n || !pat_list_init(&cp->groups[cp->n_groups], tg))
            return false;
        cp->n_groups++;
    }
    return true;
}

static void ct_patterns_free(ct_patterns *cp) {
    pat_list_free(&cp->ignore);
    for (size_t i = 0; cp->groups && i < cp->n_groups; i++) pat_list_free(&cp->groups[i]);
    free(cp->groups);
}

/* Entry at of list (ignore, or group g's targets) gave r < 0: its finding. */
static void ct_pattern_finding(hc_findings *f, const cJSON *list, const cJSON *g, int at, int r,
                               const char *msg) {
    char field[300], entry[320];
    if (!g) snprintf(field, sizeof field, "quantization_config.ignore");
    else snprintf(field, sizeof field, "quantization_config.config_groups.%s%s", g->string,
                  cJSON_IsArray(g) ? "" : ".targets");
    snprintf(entry, sizeof entry, "%s[%d]", field, at);
    const char *pat = cJSON_GetStringValue(cJSON_GetArrayItem(list, at));
    pattern_finding(f, g ? "target pattern" : "ignore pattern", field, entry, pat ? pat : "",
                    r, msg);
}

static hc_fmt ct_format(const char *f, bool is_float) {
    if (!f) return HC_FMT_PLAIN;
    if (!strcmp(f, "pack-quantized")) return HC_FMT_CT_PACK;
    if (!strcmp(f, "int-quantized")) return HC_FMT_CT_INT;
    if (!strcmp(f, "naive-quantized")) return is_float ? HC_FMT_CT_FLOAT : HC_FMT_CT_INT;
    if (!strcmp(f, "float-quantized")) return HC_FMT_CT_FLOAT;
    if (!strcmp(f, "nvfp4-pack-quantized")) return HC_FMT_CT_NVFP4;
    if (!strcmp(f, "mxfp4-pack-quantized")) return HC_FMT_CT_MXFP4;
    if (!strcmp(f, "mxfp8-quantized")) return HC_FMT_CT_MXFP8;
    return (hc_fmt)-1;
}

static bool is_nonempty(const cJSON *v) {
    return v && !cJSON_IsNull(v) &&
           !((cJSON_IsObject(v) || cJSON_IsArray(v)) && cJSON_GetArraySize(v) == 0);
}

/* The weights args of a group into a scheme; problems become findings. */
static bool ct_args(const cJSON *w, const char *gname, hc_scheme *s, hc_findings *f) {
    const cJSON *v;
    s->bits = 8;
    s->symmetric = true;
    s->group_size = 0;
    int64_t nb = cfg_num(cJSON_GetObjectItemCaseSensitive(w, "num_bits"), 8);
    s->bits = nb >= 0 && nb <= 64 ? (int)nb : -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(w, "type")) && cJSON_IsString(v))
        s->is_float = !strcmp(v->valuestring, "float");
    if ((v = cJSON_GetObjectItemCaseSensitive(w, "symmetric")) && cJSON_IsBool(v))
        s->symmetric = cJSON_IsTrue(v);
    s->group_size = cfg_num(cJSON_GetObjectItemCaseSensitive(w, "group_size"), 0);
    const char *st = hc_json_str(w, "strategy");
    if (!st) st = s->group_size > 0 ? "group" : s->group_size == -1 ? "channel" : "tensor";
    if (!strcmp(st, "tensor")) s->strategy = HC_STRAT_TENSOR;
    else if (!strcmp(st, "channel")) s->strategy = HC_STRAT_CHANNEL;
    else if (!strcmp(st, "group")) s->strategy = HC_STRAT_GROUP;
    else if (!strcmp(st, "block")) s->strategy = HC_STRAT_BLOCK;
    else if (!strcmp(st, "tensor_group")) s->strategy = HC_STRAT_TENSOR_GROUP;
    else {
        hc_findings_add(f, HC_SEV_ERROR, gname, "unsupported strategy", 0, NULL, 0,
                        "config group '%s': weights strategy '%s' is not supported "
                        "(quantization_config.config_groups.%s.weights.strategy)",
                        gname, st, gname);
        return false;
    }
    if ((s->strategy == HC_STRAT_GROUP || s->strategy == HC_STRAT_TENSOR_GROUP) &&
        s->group_size <= 0) {
        hc_findings_add(f, HC_SEV_ERROR, gname, "group_size", 0, NULL, 0,
                        "config group '%s': group strategy needs group_size > 0", gname);
        return false;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(w, "block_structure"))) {
        if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2) {
            int64_t r = cfg_num(cJSON_GetArrayItem(v, 0), 0), c = cfg_num(cJSON_GetArrayItem(v, 1), 0);
            s->block[0] = r > 0 ? (uint64_t)r : 0;
            s->block[1] = c > 0 ? (uint64_t)c : 0;
        } else if (cJSON_IsString(v)) {
            unsigned long long r = 0, c = 0;
            if (sscanf(v->valuestring, "%llux%llu", &r, &c) == 2) s->block[0] = r, s->block[1] = c;
        }
    }
    if (s->strategy == HC_STRAT_BLOCK && (s->block[0] == 0 || s->block[1] == 0)) {
        hc_findings_add(f, HC_SEV_ERROR, gname, "block_structure", 0, NULL, 0,
                        "config group '%s': block strategy needs block_structure [rows, cols]",
                        gname);
        return false;
    }
    v = cJSON_GetObjectItemCaseSensitive(w, "actorder");
    if (cJSON_IsString(v))
        s->actorder = !strcmp(v->valuestring, "group") || !strcmp(v->valuestring, "weight") ||
                      !strcmp(v->valuestring, "dynamic") || !strcmp(v->valuestring, "static");
    else if (cJSON_IsTrue(v)) s->actorder = true;
    if (s->group_size == HC_BAD_NUM) {
        hc_findings_add(f, HC_SEV_ERROR, gname, "group_size", 0, NULL, 0,
                        "config group '%s': group_size is not an integer", gname);
        return false;
    }
    if (s->bits < 1 || s->bits > 8) {
        hc_findings_add(f, HC_SEV_ERROR, gname, "num_bits", 0, NULL, 0,
                        "config group '%s': num_bits %d is not in 1..8", gname, s->bits);
        return false;
    }
    return true;
}

/* The types of every field resolve_ct reads, checked once for the whole config. */
static bool ct_typed(hc_findings *f, const cJSON *qc, const char *cfgname) {
    bool ok = field_typed(f, cfgname, "", qc, "format", T_NULL | T_STR, "a string");
    ok &= field_typed(f, cfgname, "", qc, "version", T_NULL | T_STR, "a string");
    ok &= field_typed(f, cfgname, "", qc, "quantization_status", T_NULL | T_STR, "a string");
    ok &= strings_typed(f, cfgname, "ignore", cJSON_GetObjectItemCaseSensitive(qc, "ignore"),
                        T_NULL);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(qc, "config_groups"), *g;
    ok &= cfg_typed(f, cfgname, "config_groups", groups, T_NULL | T_OBJ,
                    "an object of named config groups");
    if (!cJSON_IsObject(groups)) groups = NULL;
    cJSON_ArrayForEach(g, groups) {
        char pre[200];
        snprintf(pre, sizeof pre, "config_groups.%s", g->string);
        if (cJSON_IsArray(g)) { /* a preset name with its bare target list */
            ok &= strings_typed(f, cfgname, pre, g, 0);
            continue;
        }
        if (!cfg_typed(f, cfgname, pre, g, T_OBJ, "an object (a scheme) or a list of targets")) {
            ok = false;
            continue;
        }
        snprintf(pre + strlen(pre), sizeof pre - strlen(pre), ".");
        char tp[220];
        snprintf(tp, sizeof tp, "%stargets", pre);
        ok &= strings_typed(f, cfgname, tp, cJSON_GetObjectItemCaseSensitive(g, "targets"), T_NULL);
        ok &= field_typed(f, cfgname, pre, g, "format", T_NULL | T_STR, "a string");
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(g, "weights");
        ok &= field_typed(f, cfgname, pre, g, "weights", T_NULL | T_OBJ, "an object of args");
        if (!cJSON_IsObject(w)) continue;
        snprintf(pre + strlen(pre), sizeof pre - strlen(pre), "weights.");
        static const struct {
            const char *key;
            unsigned ok;
            const char *want;
        } args[] = {{"num_bits", T_NULL | T_NUM, "an integer"},
                    {"type", T_NULL | T_STR, "a string"},
                    {"symmetric", T_NULL | T_BOOL, "a boolean"},
                    {"group_size", T_NULL | T_NUM, "an integer"},
                    {"strategy", T_NULL | T_STR, "a string"},
                    {"block_structure", T_NULL | T_ARR | T_STR, "[rows, cols]"},
                    {"actorder", T_NULL | T_BOOL | T_STR, "a string or a boolean"}};
        for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
            ok &= field_typed(f, cfgname, pre, w, args[i].key, args[i].ok, args[i].want);
    }
    return ok;
}

static void resolve_ct(hc_model *md, const cJSON *qc, const char *cfgname) {
    hc_findings *f = &md->config_findings;
    if (!ct_typed(f, qc, cfgname)) return;
    const char *gfmt = hc_json_str(qc, "format");
    int ver[3];
    parse_version(hc_json_str(qc, "version"), ver);
    const char *status = hc_json_str(qc, "quantization_status");
    bool refuse = false;
    if (status && strcmp(status, "compressed") != 0) {
        hc_findings_add(f, HC_SEV_ERROR, "config.json", "quantization_status", 0, NULL, 0,
                        "quantization_config.quantization_status is '%s': only 'compressed' "
                        "checkpoints hold packed tensors", status);
        refuse = true;
    }
    static const char *const blockers[] = {"sparsity_config", "transform_config"};
    for (size_t i = 0; i < 2; i++)
        if (is_nonempty(cJSON_GetObjectItemCaseSensitive(qc, blockers[i]))) {
            hc_findings_add(f, HC_SEV_ERROR, "config.json", blockers[i], 0, NULL, 0,
                            "quantization_config.%s is not empty: sparse or transformed "
                            "weights are not supported", blockers[i]);
            refuse = true;
        }
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(qc, "config_groups");
    const cJSON *ignore = cJSON_GetObjectItemCaseSensitive(qc, "ignore");
    ct_patterns cp;
    if (!ct_patterns_init(&cp, ignore, groups)) {
        hc_findings_add(f, HC_SEV_ERROR, "config.json", "ignore pattern", 0, NULL, 0,
                        "quantization_config: out of memory for the patterns");
        goto out;
    }
    for (size_t i = 0; i < md->n; i++) {
        hc_module *m = &md->m[i];
        hc_scheme *s = &m->scheme;
        memcpy(s->ct_version, ver, sizeof ver);
        if (!hc_module_carries_quant(m) || refuse) continue;
        char msg[256] = "";
        int ig = 0, at = 0;
        for (int pass = 0; pass < 3 && !ig; pass++)
            ig = list_match(&cp.work, &cp.ignore, ignore, m, pass, &at, msg, sizeof msg);
        if (ig < 0) { /* a pattern we cannot match must not read as "not ignored" */
            ct_pattern_finding(f, ignore, NULL, at, ig, msg);
            goto out;
        }
        if (ig == 1) {
            hc_findings_add(f, HC_SEV_ERROR, m->name, "ignored but quantized", 0, NULL, 0,
                            "module '%s' carries quantized tensors but matches "
                            "quantization_config.ignore", m->name);
            continue;
        }
        const cJSON *g = NULL, *hit = NULL;
        for (int pass = 0; pass < 3 && !hit; pass++) {
            size_t k = 0;
            cJSON_ArrayForEach(g, groups) {
                const cJSON *tg = cJSON_IsArray(g) ? g
                                                   : cJSON_GetObjectItemCaseSensitive(g, "targets");
                int r = list_match(&cp.work, &cp.groups[k++], tg, m, pass, &at, msg, sizeof msg);
                if (r < 0) {
                    ct_pattern_finding(f, tg, g, at, r, msg);
                    goto out;
                }
                if (r) {
                    hit = g;
                    break;
                }
            }
        }
        if (!hit) {
            hc_findings_add(f, HC_SEV_ERROR, m->name, "no config group", 0, NULL, 0,
                            "module '%s' carries quantized tensors but no "
                            "quantization_config.config_groups target matches it", m->name);
            continue;
        }
        snprintf(s->group, sizeof s->group, "%s", hit->string ? hit->string : "?");
        const cJSON *w = cJSON_IsObject(hit) ? cJSON_GetObjectItemCaseSensitive(hit, "weights")
                                             : NULL;
        if (!w) {
            hc_findings_add(f, HC_SEV_ERROR, m->name, "preset", 0, NULL, 0,
                            "module '%s': config group '%s' has no weights args (preset "
                            "schemes given as bare target lists are not expanded)",
                            m->name, s->group);
            continue;
        }
        if (!ct_args(w, s->group, s, f)) continue;
        const char *fs = cJSON_IsObject(hit) ? hc_json_str(hit, "format") : NULL;
        if (!fs) fs = gfmt;
        if (fs && !strcmp(fs, "mixed-precision")) fs = NULL;
        if (!fs) { /* infer from the tensors */
            const hc_ck_entry *wt = m->t[HC_ROLE_WEIGHT];
            bool packed = wt && strstr(wt->name, "weight_packed");
            fs = packed ? (s->is_float ? (s->group_size == 16 ? "nvfp4-pack-quantized"
                                                               : "mxfp4-pack-quantized")
                                       : "pack-quantized")
                        : s->is_float ? "float-quantized" : "int-quantized";
        }
        hc_fmt fmt = ct_format(fs, s->is_float);
        if ((int)fmt < 0 || fmt == HC_FMT_PLAIN) {
            hc_findings_add(f, HC_SEV_ERROR, m->name, "unsupported format", 0, NULL, 0,
                            "module '%s': compressed-tensors format '%s' is not supported "
                            "(quantization_config.format)", m->name, fs);
            continue;
        }
        s->fmt = fmt;
        if (fmt == HC_FMT_CT_NVFP4 || fmt == HC_FMT_CT_MXFP4) s->bits = 4, s->is_float = true;
    }
out:
    ct_patterns_free(&cp);
}

/* ---------------- GPTQ ---------------- */

static void gptq_base(const cJSON *qc, hc_scheme *s) {
    const cJSON *v;
    s->fmt = HC_FMT_GPTQ;
    int64_t b = cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "bits"), 4);
    s->bits = b >= 0 && b <= 64 ? (int)b : -1;
    s->group_size = cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "group_size"), 128);
    s->actorder = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(qc, "desc_act"));
    v = cJSON_GetObjectItemCaseSensitive(qc, "sym");
    s->symmetric = v ? cJSON_IsTrue(v) : true;
}

static void gptq_override(const cJSON *o, hc_scheme *s) {
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "bits"))) {
        int64_t b = cfg_num(v, 4);
        s->bits = b >= 0 && b <= 64 ? (int)b : -1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "group_size"))) s->group_size = cfg_num(v, 128);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "desc_act")) && cJSON_IsBool(v))
        s->actorder = cJSON_IsTrue(v);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "sym")) && cJSON_IsBool(v))
        s->symmetric = cJSON_IsTrue(v);
}

/* bits, group_size, desc_act, sym: of the base config (prefix "") or of a dynamic override. */
static bool gptq_args_typed(hc_findings *f, const char *cfgname, const char *prefix,
                            const cJSON *o) {
    bool ok = field_typed(f, cfgname, prefix, o, "bits", T_NULL | T_NUM, "an integer");
    ok &= field_typed(f, cfgname, prefix, o, "group_size", T_NULL | T_NUM, "an integer");
    ok &= field_typed(f, cfgname, prefix, o, "desc_act", T_NULL | T_BOOL, "a boolean");
    ok &= field_typed(f, cfgname, prefix, o, "sym", T_NULL | T_BOOL, "a boolean");
    return ok;
}

/* The types of every field resolve_gptq reads; dynamic maps module patterns to overrides. */
static bool gptq_typed(hc_findings *f, const cJSON *qc, const char *cfgname) {
    bool ok = gptq_args_typed(f, cfgname, "", qc);
    ok &= field_typed(f, cfgname, "", qc, "checkpoint_format", T_NULL | T_STR, "a string");
    ok &= field_typed(f, cfgname, "", qc, "format", T_NULL | T_STR, "a string");
    ok &= field_typed(f, cfgname, "", qc, "pack_dtype", T_NULL | T_STR, "a string");
    const cJSON *dyn = cJSON_GetObjectItemCaseSensitive(qc, "dynamic"), *d;
    ok &= cfg_typed(f, cfgname, "dynamic", dyn, T_NULL | T_OBJ,
                    "an object mapping module patterns (\"-:\" skips, \"+:\" or none "
                    "overrides) to objects of overrides");
    if (!cJSON_IsObject(dyn)) dyn = NULL;
    cJSON_ArrayForEach(d, dyn) {
        char pre[300];
        snprintf(pre, sizeof pre, "dynamic.%s", d->string);
        if (!cfg_typed(f, cfgname, pre, d, T_OBJ, "an object of overrides (bits, group_size, "
                       "desc_act, sym)")) {
            ok = false;
            continue;
        }
        snprintf(pre + strlen(pre), sizeof pre - strlen(pre), ".");
        ok &= gptq_args_typed(f, cfgname, pre, d);
    }
    return ok;
}

static void resolve_gptq(hc_model *md, const cJSON *qc, const char *cfgname) {
    hc_findings *f = &md->config_findings;
    if (!gptq_typed(f, qc, cfgname)) return;
    const char *cf = hc_json_str(qc, "checkpoint_format");
    if (!cf) cf = hc_json_str(qc, "format");
    bool v2 = cf && !strcmp(cf, "gptq_v2");
    if (cf && strcmp(cf, "gptq") && strcmp(cf, "gptq_v2")) {
        hc_findings_add(f, HC_SEV_ERROR, cfgname, "checkpoint_format", 0, NULL, 0,
                        "%s: GPTQ checkpoint_format '%s' is not supported%s", cfgname, cf,
                        !strcmp(cf, "marlin") ? " (marlin checkpoints hold pre-permuted tiles; "
                                                "convert from the original gptq checkpoint)" : "");
        return;
    }
    const char *pd = hc_json_str(qc, "pack_dtype");
    if (pd && strcmp(pd, "int32")) {
        hc_findings_add(f, HC_SEV_ERROR, cfgname, "pack_dtype", 0, NULL, 0,
                        "%s: GPTQ pack_dtype '%s' is not supported (only int32)", cfgname, pd);
        return;
    }
    const cJSON *dyn = cJSON_GetObjectItemCaseSensitive(qc, "dynamic");
    if (!cJSON_IsObject(dyn)) dyn = NULL; /* null: no overrides */
    re_work work = {HC_REGEX_BUDGET, 0};
    pat_list pl = {NULL, 0};
    char field[300];
    snprintf(field, sizeof field, "%s: dynamic", cfgname);
    if (!pat_list_init(&pl, dyn)) {
        hc_findings_add(f, HC_SEV_ERROR, cfgname, "dynamic", 0, NULL, 0,
                        "%s: out of memory for the patterns", field);
        goto out;
    }
    for (size_t i = 0; i < md->n; i++) {
        hc_module *m = &md->m[i];
        if (!m->t[HC_ROLE_WEIGHT] || !strstr(m->t[HC_ROLE_WEIGHT]->name, "qweight")) continue;
        gptq_base(qc, &m->scheme);
        m->scheme.gptq_v2 = v2;
        const cJSON *d;
        size_t j = 0;
        cJSON_ArrayForEach(d, dyn) {
            const char *pat = d->string;
            bool skip = !strncmp(pat, "-:", 2);
            if (!strncmp(pat, "-:", 2) || !strncmp(pat, "+:", 2)) pat += 2;
            char msg[128];
            int r = pat_run(&work, &pl, j++, pat, m->name, msg, sizeof msg);
            if (r < 0) {
                pattern_finding(f, "dynamic", field, field, d->string, r, msg);
                goto out;
            }
            if (!r) continue;
            if (skip) {
                hc_findings_add(f, HC_SEV_ERROR, m->name, "dynamic", 0, NULL, 0,
                                "module '%s' has a qweight but the dynamic rule '%s' skips it",
                                m->name, d->string);
                m->scheme.fmt = HC_FMT_PLAIN;
            } else {
                gptq_override(d, &m->scheme);
            }
            break;
        }
        hc_scheme *s = &m->scheme;
        if (s->fmt == HC_FMT_GPTQ && s->bits != 2 && s->bits != 3 && s->bits != 4 && s->bits != 8) {
            hc_findings_add(f, HC_SEV_ERROR, m->name, "bits", 0, NULL, 0,
                            "module '%s': GPTQ %d-bit is not supported (2, 3, 4, 8)", m->name,
                            s->bits);
            s->fmt = HC_FMT_PLAIN;
        }
    }
out:
    pat_list_free(&pl);
}

/* ---------------- AWQ, gpt-oss, fp8 ---------------- */

static void resolve_awq(hc_model *md, const cJSON *qc, const char *cfgname) {
    hc_findings *f = &md->config_findings;
    static const char *const nums[] = {"bits", "w_bit", "group_size", "q_group_size"};
    bool ok = field_typed(f, cfgname, "", qc, "version", T_NULL | T_STR, "a string");
    ok &= field_typed(f, cfgname, "", qc, "zero_point", T_NULL | T_BOOL, "a boolean");
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        ok &= field_typed(f, cfgname, "", qc, nums[i], T_NULL | T_NUM, "an integer");
    if (!ok) return;
    const char *ver = hc_json_str(qc, "version");
    const cJSON *v;
    int64_t bits = cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "bits"),
                           cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "w_bit"), 4));
    int64_t gs = cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "group_size"),
                         cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "q_group_size"), 128));
    if (ver && strcasecmp(ver, "gemm")) {
        hc_findings_add(f, HC_SEV_ERROR, cfgname, "version", 0, NULL, 0,
                        "%s: AWQ version '%s' is not supported (only gemm; the gemv layouts "
                        "differ)", cfgname, ver);
        return;
    }
    if (bits != 4) {
        hc_findings_add(f, HC_SEV_ERROR, cfgname, "bits", 0, NULL, 0,
                        "%s: AWQ bits %lld is not supported (only 4)", cfgname, (long long)bits);
        return;
    }
    v = cJSON_GetObjectItemCaseSensitive(qc, "zero_point");
    for (size_t i = 0; i < md->n; i++) {
        hc_module *m = &md->m[i];
        if (!m->t[HC_ROLE_WEIGHT] || !strstr(m->t[HC_ROLE_WEIGHT]->name, "qweight")) continue;
        m->scheme.fmt = HC_FMT_AWQ;
        m->scheme.bits = 4;
        m->scheme.group_size = gs;
        m->scheme.symmetric = v && !cJSON_IsTrue(v);
        m->scheme.strategy = HC_STRAT_GROUP;
    }
}

static void resolve_gptoss(hc_model *md) {
    for (size_t i = 0; i < md->n; i++) {
        hc_module *m = &md->m[i];
        if (!m->fused || !m->t[HC_ROLE_SCALE]) continue;
        m->scheme.fmt = HC_FMT_GPTOSS_MXFP4;
        m->scheme.bits = 4;
        m->scheme.is_float = true;
        m->scheme.group_size = 32;
    }
}

/* FP8 weights with weight_scale_inv (quant_method "fp8"; FORMATS.md section 6). DeepSeek and
 * transformers' fine-grained FP8 multiply by it, per weight_block_size block (absent: 128 x
 * 128). GPTQModel writes weight_scale_semantics "inverse" (its default when the field is
 * absent): it multiplied the weights by weight_scale_inv = fp8_max / amax, so they are divided
 * by it; and weight_scale_method block (weight_block_size), row (one scale per output row,
 * weight_block_size null) or tensor. The two conventions are told apart by these fields, never
 * by the tensor name. */
static void resolve_fp8(hc_model *md, const cJSON *qc, const char *cfgname) {
    hc_findings *f = &md->config_findings;
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(qc, "weight_block_size");
    bool ok = field_typed(f, cfgname, "", qc, "weight_scale_semantics", T_NULL | T_STR,
                          "a string");
    ok &= field_typed(f, cfgname, "", qc, "weight_scale_method", T_NULL | T_STR, "a string");
    ok &= cfg_typed(f, cfgname, "weight_block_size", bs, T_NULL | T_ARR, "[rows, cols] or null");
    if (!ok) return;
    const char *sem = hc_json_str(qc, "weight_scale_semantics");
    const char *meth = hc_json_str(qc, "weight_scale_method");
    /* absent: GPTQModel's normaliser reads it as "inverse", and only GPTQModel writes
     * weight_scale_method; without either field the config is DeepSeek's */
    bool inverse = sem ? !strcasecmp(sem, "inverse") : meth != NULL;
    if (sem && !inverse) {
        hc_findings_add(f, HC_SEV_ERROR, cfgname, "weight_scale_semantics", 0, NULL, 0,
                        "%s: weight_scale_semantics '%s' is not known ('inverse': the weights "
                        "are divided by weight_scale_inv; absent: divided when "
                        "weight_scale_method is given (GPTQModel), else multiplied, as "
                        "DeepSeek's)", cfgname, sem);
        return;
    }
    uint64_t block[2] = {0, 0};
    if (cJSON_IsArray(bs)) {
        int64_t r = cfg_num(cJSON_GetArrayItem(bs, 0), 0), c = cfg_num(cJSON_GetArrayItem(bs, 1), 0);
        if (cJSON_GetArraySize(bs) != 2 || r <= 0 || c <= 0) {
            hc_findings_add(f, HC_SEV_ERROR, cfgname, "weight_block_size", 0, NULL, 0,
                            "%s: weight_block_size must be [rows, cols] of positive integers",
                            cfgname);
            return;
        }
        block[0] = (uint64_t)r, block[1] = (uint64_t)c;
    } else if (!bs && !sem && !meth) {
        block[0] = block[1] = 128; /* transformers' fine-grained FP8 default */
    }
    const char *mn = meth ? meth : block[0] ? "block" : "row";
    hc_strategy st = !strcasecmp(mn, "block") ? HC_STRAT_BLOCK
                     : !strcasecmp(mn, "row") ? HC_STRAT_CHANNEL
                     : HC_STRAT_TENSOR;
    if (strcasecmp(mn, "block") && strcasecmp(mn, "row") && strcasecmp(mn, "tensor")) {
        hc_findings_add(f, HC_SEV_ERROR, cfgname, "weight_scale_method", 0, NULL, 0,
                        "%s: weight_scale_method '%s' is not known (block, row, tensor)",
                        cfgname, mn);
        return;
    }
    if ((st == HC_STRAT_BLOCK) != (block[0] != 0)) {
        hc_findings_add(f, HC_SEV_ERROR, cfgname, "weight_block_size", 0, NULL, 0,
                        st == HC_STRAT_BLOCK
                            ? "%s: weight_scale_method '%s' needs weight_block_size [rows, cols]"
                            : "%s: weight_scale_method '%s' takes no weight_block_size (it is "
                              "for 'block' scales)", cfgname, mn);
        return;
    }
    for (size_t i = 0; i < md->n; i++) {
        hc_module *m = &md->m[i];
        if (!m->t[HC_ROLE_SCALE] || !strstr(m->t[HC_ROLE_SCALE]->name, "weight_scale_inv"))
            continue;
        hc_scheme *s = &m->scheme;
        s->fmt = HC_FMT_FP8_SCALE_INV;
        s->bits = 8;
        s->is_float = true;
        s->strategy = st;
        s->block[0] = block[0], s->block[1] = block[1];
        s->scale_inverse = inverse;
    }
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
    const char *qm = hc_json_str(qc, "quant_method");
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
        if (m->scheme.fmt != HC_FMT_PLAIN || !hc_module_carries_quant(m)) continue;
        m->unresolved = true;
        if (!n++) first = m->name;
    }
    if (n && !hc_findings_errors(&md->config_findings))
        hc_findings_add(&md->config_findings, HC_SEV_ERROR, first, "no scheme", n, NULL, 0,
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
        if (drop[i]) hc_finding_clear(&cf->v[i]);
        else cf->v[kept++] = cf->v[i];
    }
    cf->n = kept;
out:
    free(p);
    free(drop);
}

hc_status hc_model_open(hc_ckpt *ck, hc_model **out, hc_err *err) {
    *out = NULL;
    hc_model *md = calloc(1, sizeof *md);
    if (!md) return hc_fail(err, HC_NOMEM, "out of memory");
    md->ck = ck;
    const char *cfgname;
    const cJSON *qc = quant_config(ck, md->quant_method, &cfgname);
    bool gptoss = !strcmp(md->quant_method, "mxfp4");
    md->m = calloc(ck->nentries ? ck->nentries : 1, sizeof *md->m);
    if (!md->m) {
        hc_model_free(md);
        return hc_fail(err, HC_NOMEM, "out of memory");
    }
    /* entries are sorted by tensor name, which is not module order ("a.b.x" sorts after
     * "a.b_c.x"), so collect (module, role) pairs, sort them by module, then merge */
    pair_t *pv = calloc(ck->nentries ? ck->nentries : 1, sizeof *pv);
    if (!pv) {
        hc_model_free(md);
        return hc_fail(err, HC_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ck->nentries; i++) {
        pv[i].e = &ck->entries[i];
        split_name(ck->entries[i].name, gptoss, &pv[i].mod, &pv[i].role, &pv[i].fused);
        if (!pv[i].mod) {
            for (size_t j = 0; j < i; j++) free(pv[j].mod);
            free(pv);
            hc_model_free(md);
            return hc_fail(err, HC_NOMEM, "out of memory");
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
            hc_findings_add(&md->config_findings, HC_SEV_ERROR, m->name, "two tensors", 0, NULL,
                            0, "module '%s' has two %s tensors: '%s' and '%s'", m->name,
                            role_names[pv[i].role], m->t[pv[i].role]->name, pv[i].e->name);
            continue;
        }
        m->t[pv[i].role] = pv[i].e;
    }
    free(pv);
    qsort(md->m, md->n, sizeof *md->m, cmp_module);
    for (size_t i = 0; i < md->n; i++) moe_membership(&md->m[i]);
    const char *qm = md->quant_method;
    const cJSON *raw = cJSON_GetObjectItemCaseSensitive(ck->config, "quantization_config");
    if (!cfg_typed(&md->config_findings, "config.json", "quantization_config", raw,
                   T_NULL | T_OBJ, "an object") ||
        !field_typed(&md->config_findings, cfgname, "", qc, "quant_method", T_NULL | T_STR,
                     "a string")) {
        /* refused: nothing resolved */
    } else if (!qc) {
        for (size_t i = 0; i < md->n; i++)
            if (hc_module_carries_quant(&md->m[i])) {
                hc_findings_add(&md->config_findings, HC_SEV_ERROR, md->m[i].name,
                                "no quantization_config", 0, NULL, 0,
                                "module '%s' carries quantized tensors but config.json has no "
                                "quantization_config", md->m[i].name);
                break;
            }
    } else if (!strcmp(qm, "compressed-tensors")) {
        resolve_ct(md, qc, cfgname);
    } else if (!strcmp(qm, "gptq")) {
        resolve_gptq(md, qc, cfgname);
    } else if (!strcmp(qm, "awq")) {
        resolve_awq(md, qc, cfgname);
    } else if (!strcmp(qm, "mxfp4")) {
        resolve_gptoss(md);
    } else if (!strcmp(qm, "fp8")) {
        resolve_fp8(md, qc, cfgname);
    } else {
        hc_findings_add(&md->config_findings, HC_SEV_ERROR, cfgname, "quant_method", 0, NULL, 0,
                        "%s: quant_method '%s' is not supported (compressed-tensors, gptq, awq, "
                        "mxfp4, fp8 are)", cfgname, qm[0] ? qm : "(none)");
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

void hc_model_free(hc_model *md) {
    if (!md) return;
    for (size_t i = 0; i < md->n; i++) {
        free(md->m[i].name);
        free(md->m[i].moe_key);
    }
    free(md->m);
    hc_findings_free(&md->config_findings);
    free(md);
}
