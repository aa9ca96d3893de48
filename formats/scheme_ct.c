/* scheme_ct.c: the schemes of a compressed-tensors config (quant_method
 * "compressed-tensors"): each module that carries quantized tensors is matched to a config
 * group (exact names, then "re:" patterns, then "Linear") unless ignored, and that group's
 * weights args and format become its scheme. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"
#include "scheme_int.h"

static void parse_version(const char *s, int v[3]) {
    v[0] = v[1] = v[2] = 0;
    if (s) sscanf(s, "%d.%d.%d", &v[0], &v[1], &v[2]);
}

static int target_match(re_work *w, pat_list *pl, size_t j, const char *target,
                        const hc_module *m, int pass, char *msg, unsigned msg_len) {
    if (strncmp(target, "re:", 3) == 0)
        return pass == 1 ? hc__pat_run(w, pl, j, target + 3, m->name, msg, msg_len) : 0;
    if (pass == 0) return strcmp(target, m->name) == 0;
    if (pass == 2) return strcmp(target, "Linear") == 0 && hc__module_carries_quant(m);
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
    if (!cp->groups || !hc__pat_list_init(&cp->ignore, ignore)) return false;
    cJSON_ArrayForEach(g, groups) {
        const cJSON *tg = cJSON_IsArray(g) ? g : cJSON_GetObjectItemCaseSensitive(g, "targets");
        if (cp->n_groups >= (size_t)n || !hc__pat_list_init(&cp->groups[cp->n_groups], tg))
            return false;
        cp->n_groups++;
    }
    return true;
}

static void ct_patterns_free(ct_patterns *cp) {
    hc__pat_list_free(&cp->ignore);
    for (size_t i = 0; cp->groups && i < cp->n_groups; i++) hc__pat_list_free(&cp->groups[i]);
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
    hc__pattern_finding(f, g ? "target pattern" : "ignore pattern", field, entry,
                        pat ? pat : "", r, msg);
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
    int64_t nb = hc__cfg_num(cJSON_GetObjectItemCaseSensitive(w, "num_bits"), 8);
    s->bits = nb >= 0 && nb <= 64 ? (int)nb : -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(w, "type")) && cJSON_IsString(v))
        s->is_float = !strcmp(v->valuestring, "float");
    if ((v = cJSON_GetObjectItemCaseSensitive(w, "symmetric")) && cJSON_IsBool(v))
        s->symmetric = cJSON_IsTrue(v);
    s->group_size = hc__cfg_num(cJSON_GetObjectItemCaseSensitive(w, "group_size"), 0);
    const char *st = hc__json_str(w, "strategy");
    if (!st) st = s->group_size > 0 ? "group" : s->group_size == -1 ? "channel" : "tensor";
    if (!strcmp(st, "tensor")) s->strategy = HC_STRAT_TENSOR;
    else if (!strcmp(st, "channel")) s->strategy = HC_STRAT_CHANNEL;
    else if (!strcmp(st, "group")) s->strategy = HC_STRAT_GROUP;
    else if (!strcmp(st, "block")) s->strategy = HC_STRAT_BLOCK;
    else if (!strcmp(st, "tensor_group")) s->strategy = HC_STRAT_TENSOR_GROUP;
    else {
        hc__findings_add(f, HC_SEV_ERROR, gname, "unsupported strategy", 0, NULL, 0,
                        "config group '%s': weights strategy '%s' is not supported "
                        "(quantization_config.config_groups.%s.weights.strategy)",
                        gname, st, gname);
        return false;
    }
    if ((s->strategy == HC_STRAT_GROUP || s->strategy == HC_STRAT_TENSOR_GROUP) &&
        s->group_size <= 0) {
        hc__findings_add(f, HC_SEV_ERROR, gname, "group_size", 0, NULL, 0,
                        "config group '%s': group strategy needs group_size > 0", gname);
        return false;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(w, "block_structure"))) {
        if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2) {
            int64_t r = hc__cfg_num(cJSON_GetArrayItem(v, 0), 0);
            int64_t c = hc__cfg_num(cJSON_GetArrayItem(v, 1), 0);
            s->block[0] = r > 0 ? (uint64_t)r : 0;
            s->block[1] = c > 0 ? (uint64_t)c : 0;
        } else if (cJSON_IsString(v)) {
            unsigned long long r = 0, c = 0;
            if (sscanf(v->valuestring, "%llux%llu", &r, &c) == 2) s->block[0] = r, s->block[1] = c;
        }
    }
    if (s->strategy == HC_STRAT_BLOCK && (s->block[0] == 0 || s->block[1] == 0)) {
        hc__findings_add(f, HC_SEV_ERROR, gname, "block_structure", 0, NULL, 0,
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
        hc__findings_add(f, HC_SEV_ERROR, gname, "group_size", 0, NULL, 0,
                        "config group '%s': group_size is not an integer", gname);
        return false;
    }
    if (s->bits < 1 || s->bits > 8) {
        hc__findings_add(f, HC_SEV_ERROR, gname, "num_bits", 0, NULL, 0,
                        "config group '%s': num_bits %d is not in 1..8", gname, s->bits);
        return false;
    }
    return true;
}

/* The types of every field hc__resolve_ct reads, checked once for the whole config. */
static bool ct_typed(hc_findings *f, const cJSON *qc, const char *cfgname) {
    bool ok = hc__cfg_field_typed(f, cfgname, "", qc, "format", T_NULL | T_STR, "a string");
    ok &= hc__cfg_field_typed(f, cfgname, "", qc, "version", T_NULL | T_STR, "a string");
    ok &= hc__cfg_field_typed(f, cfgname, "", qc, "quantization_status", T_NULL | T_STR,
                              "a string");
    ok &= hc__cfg_strings_typed(f, cfgname, "ignore",
                                cJSON_GetObjectItemCaseSensitive(qc, "ignore"), T_NULL);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(qc, "config_groups"), *g;
    ok &= hc__cfg_typed(f, cfgname, "config_groups", groups, T_NULL | T_OBJ,
                        "an object of named config groups");
    if (!cJSON_IsObject(groups)) groups = NULL;
    cJSON_ArrayForEach(g, groups) {
        char pre[200];
        snprintf(pre, sizeof pre, "config_groups.%s", g->string);
        if (cJSON_IsArray(g)) { /* a preset name with its bare target list */
            ok &= hc__cfg_strings_typed(f, cfgname, pre, g, 0);
            continue;
        }
        if (!hc__cfg_typed(f, cfgname, pre, g, T_OBJ,
                           "an object (a scheme) or a list of targets")) {
            ok = false;
            continue;
        }
        snprintf(pre + strlen(pre), sizeof pre - strlen(pre), ".");
        char tp[220];
        snprintf(tp, sizeof tp, "%stargets", pre);
        ok &= hc__cfg_strings_typed(f, cfgname, tp, cJSON_GetObjectItemCaseSensitive(g, "targets"),
                                    T_NULL);
        ok &= hc__cfg_field_typed(f, cfgname, pre, g, "format", T_NULL | T_STR, "a string");
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(g, "weights");
        ok &= hc__cfg_field_typed(f, cfgname, pre, g, "weights", T_NULL | T_OBJ,
                                  "an object of args");
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
            ok &= hc__cfg_field_typed(f, cfgname, pre, w, args[i].key, args[i].ok, args[i].want);
    }
    return ok;
}

void hc__resolve_ct(hc_model *md, const cJSON *qc, const char *cfgname) {
    hc_findings *f = &md->config_findings;
    if (!ct_typed(f, qc, cfgname)) return;
    const char *gfmt = hc__json_str(qc, "format");
    int ver[3];
    parse_version(hc__json_str(qc, "version"), ver);
    const char *status = hc__json_str(qc, "quantization_status");
    bool refuse = false;
    size_t first = f->n; /* the refusals below apply to the whole checkpoint */
    if (status && strcmp(status, "compressed") != 0) {
        hc__findings_add(f, HC_SEV_ERROR, "config.json", "quantization_status", 0, NULL, 0,
                        "quantization_config.quantization_status is '%s': only 'compressed' "
                        "checkpoints hold packed tensors", status);
        refuse = true;
    }
    static const char *const blockers[] = {"sparsity_config", "transform_config"};
    for (size_t i = 0; i < 2; i++)
        if (is_nonempty(cJSON_GetObjectItemCaseSensitive(qc, blockers[i]))) {
            hc__findings_add(f, HC_SEV_ERROR, "config.json", blockers[i], 0, NULL, 0,
                            "quantization_config.%s is not empty: sparse or transformed "
                            "weights are not supported", blockers[i]);
            refuse = true;
        }
    hc__findings_mark_checkpoint(f, first);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(qc, "config_groups");
    const cJSON *ignore = cJSON_GetObjectItemCaseSensitive(qc, "ignore");
    ct_patterns cp;
    if (!ct_patterns_init(&cp, ignore, groups)) {
        hc__findings_add(f, HC_SEV_ERROR, "config.json", "ignore pattern", 0, NULL, 0,
                        "quantization_config: out of memory for the patterns");
        goto out;
    }
    for (size_t i = 0; i < md->n; i++) {
        hc_module *m = &md->m[i];
        hc_scheme *s = &m->scheme;
        memcpy(s->ct_version, ver, sizeof ver);
        if (!hc__module_carries_quant(m) || refuse) continue;
        char msg[256] = "";
        int ig = 0, at = 0;
        for (int pass = 0; pass < 3 && !ig; pass++)
            ig = list_match(&cp.work, &cp.ignore, ignore, m, pass, &at, msg, sizeof msg);
        if (ig < 0) { /* a pattern we cannot match must not read as "not ignored" */
            ct_pattern_finding(f, ignore, NULL, at, ig, msg);
            goto out;
        }
        if (ig == 1) {
            hc__findings_add(f, HC_SEV_ERROR, m->name, "ignored but quantized", 0, NULL, 0,
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
            hc__findings_add(f, HC_SEV_ERROR, m->name, "no config group", 0, NULL, 0,
                            "module '%s' carries quantized tensors but no "
                            "quantization_config.config_groups target matches it", m->name);
            continue;
        }
        snprintf(s->group, sizeof s->group, "%s", hit->string ? hit->string : "?");
        const cJSON *w = cJSON_IsObject(hit) ? cJSON_GetObjectItemCaseSensitive(hit, "weights")
                                             : NULL;
        if (!w) {
            hc__findings_add(f, HC_SEV_ERROR, m->name, "preset", 0, NULL, 0,
                            "module '%s': config group '%s' has no weights args (preset "
                            "schemes given as bare target lists are not expanded)",
                            m->name, s->group);
            continue;
        }
        if (!ct_args(w, s->group, s, f)) continue;
        const char *fs = cJSON_IsObject(hit) ? hc__json_str(hit, "format") : NULL;
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
            hc__findings_add(f, HC_SEV_ERROR, m->name, "unsupported format", 0, NULL, 0,
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
