/* scheme_gptq.c: the schemes of the integer formats with a qweight tensor: GPTQ (its base
 * args, checkpoint_format and pack_dtype, and the "dynamic" per-module overrides and skips) and
 * AWQ (gemm version, 4 bits). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "jsonutil.h"
#include "scheme_int.h"

static void gptq_base(const cJSON *qc, hc_scheme *s) {
    const cJSON *v;
    s->fmt = HC_FMT_GPTQ;
    int64_t b = hc__cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "bits"), 4);
    s->bits = b >= 0 && b <= 64 ? (int)b : -1;
    s->group_size = hc__cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "group_size"), 128);
    s->actorder = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(qc, "desc_act"));
    v = cJSON_GetObjectItemCaseSensitive(qc, "sym");
    s->symmetric = v ? cJSON_IsTrue(v) : true;
}

static void gptq_override(const cJSON *o, hc_scheme *s) {
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "bits"))) {
        int64_t b = hc__cfg_num(v, 4);
        s->bits = b >= 0 && b <= 64 ? (int)b : -1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "group_size")))
        s->group_size = hc__cfg_num(v, 128);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "desc_act")) && cJSON_IsBool(v))
        s->actorder = cJSON_IsTrue(v);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "sym")) && cJSON_IsBool(v))
        s->symmetric = cJSON_IsTrue(v);
}

/* bits, group_size, desc_act, sym: of the base config (prefix "") or of a dynamic override. */
static bool gptq_args_typed(hc_findings *f, const char *cfgname, const char *prefix,
                            const cJSON *o) {
    bool ok = hc__cfg_field_typed(f, cfgname, prefix, o, "bits", T_NULL | T_NUM, "an integer");
    ok &= hc__cfg_field_typed(f, cfgname, prefix, o, "group_size", T_NULL | T_NUM, "an integer");
    ok &= hc__cfg_field_typed(f, cfgname, prefix, o, "desc_act", T_NULL | T_BOOL, "a boolean");
    ok &= hc__cfg_field_typed(f, cfgname, prefix, o, "sym", T_NULL | T_BOOL, "a boolean");
    return ok;
}

/* The types of every field hc__resolve_gptq reads; dynamic maps module patterns to
 * overrides. */
static bool gptq_typed(hc_findings *f, const cJSON *qc, const char *cfgname) {
    bool ok = gptq_args_typed(f, cfgname, "", qc);
    ok &= hc__cfg_field_typed(f, cfgname, "", qc, "checkpoint_format", T_NULL | T_STR, "a string");
    ok &= hc__cfg_field_typed(f, cfgname, "", qc, "format", T_NULL | T_STR, "a string");
    ok &= hc__cfg_field_typed(f, cfgname, "", qc, "pack_dtype", T_NULL | T_STR, "a string");
    const cJSON *dyn = cJSON_GetObjectItemCaseSensitive(qc, "dynamic"), *d;
    ok &= hc__cfg_typed(f, cfgname, "dynamic", dyn, T_NULL | T_OBJ,
                        "an object mapping module patterns (\"-:\" skips, \"+:\" or none "
                        "overrides) to objects of overrides");
    if (!cJSON_IsObject(dyn)) dyn = NULL;
    cJSON_ArrayForEach(d, dyn) {
        char pre[300];
        snprintf(pre, sizeof pre, "dynamic.%s", d->string);
        if (!hc__cfg_typed(f, cfgname, pre, d, T_OBJ, "an object of overrides (bits, "
                           "group_size, desc_act, sym)")) {
            ok = false;
            continue;
        }
        snprintf(pre + strlen(pre), sizeof pre - strlen(pre), ".");
        ok &= gptq_args_typed(f, cfgname, pre, d);
    }
    return ok;
}

void hc__resolve_gptq(hc_model *md, const cJSON *qc, const char *cfgname) {
    hc_findings *f = &md->config_findings;
    if (!gptq_typed(f, qc, cfgname)) return;
    const char *cf = hc__json_str(qc, "checkpoint_format");
    if (!cf) cf = hc__json_str(qc, "format");
    bool v2 = cf && !strcmp(cf, "gptq_v2");
    size_t first = f->n; /* the refusals below apply to the whole checkpoint */
    if (cf && strcmp(cf, "gptq") && strcmp(cf, "gptq_v2")) {
        hc__findings_add(f, HC_SEV_ERROR, cfgname, "checkpoint_format", 0, NULL, 0,
                        "%s: GPTQ checkpoint_format '%s' is not supported%s", cfgname, cf,
                        !strcmp(cf, "marlin") ? " (marlin checkpoints hold pre-permuted tiles; "
                                                "convert from the original gptq checkpoint)" : "");
        hc__findings_mark_checkpoint(f, first);
        return;
    }
    const char *pd = hc__json_str(qc, "pack_dtype");
    if (pd && strcmp(pd, "int32")) {
        hc__findings_add(f, HC_SEV_ERROR, cfgname, "pack_dtype", 0, NULL, 0,
                        "%s: GPTQ pack_dtype '%s' is not supported (only int32)", cfgname, pd);
        hc__findings_mark_checkpoint(f, first);
        return;
    }
    const cJSON *dyn = cJSON_GetObjectItemCaseSensitive(qc, "dynamic");
    if (!cJSON_IsObject(dyn)) dyn = NULL; /* null: no overrides */
    re_work work = {HC_REGEX_BUDGET, 0};
    pat_list pl = {NULL, 0};
    char field[300];
    snprintf(field, sizeof field, "%s: dynamic", cfgname);
    if (!hc__pat_list_init(&pl, dyn)) {
        hc__findings_add(f, HC_SEV_ERROR, cfgname, "dynamic", 0, NULL, 0,
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
            int r = hc__pat_run(&work, &pl, j++, pat, m->name, msg, sizeof msg);
            if (r < 0) {
                hc__pattern_finding(f, "dynamic", field, field, d->string, r, msg);
                goto out;
            }
            if (!r) continue;
            if (skip) {
                hc__findings_add(f, HC_SEV_ERROR, m->name, "dynamic", 0, NULL, 0,
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
            hc__findings_add(f, HC_SEV_ERROR, m->name, "bits", 0, NULL, 0,
                            "module '%s': GPTQ %d-bit is not supported (2, 3, 4, 8)", m->name,
                            s->bits);
            s->fmt = HC_FMT_PLAIN;
        }
    }
out:
    hc__pat_list_free(&pl);
}

/* ---------------- AWQ ---------------- */

void hc__resolve_awq(hc_model *md, const cJSON *qc, const char *cfgname) {
    hc_findings *f = &md->config_findings;
    static const char *const nums[] = {"bits", "w_bit", "group_size", "q_group_size"};
    bool ok = hc__cfg_field_typed(f, cfgname, "", qc, "version", T_NULL | T_STR, "a string");
    ok &= hc__cfg_field_typed(f, cfgname, "", qc, "zero_point", T_NULL | T_BOOL, "a boolean");
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        ok &= hc__cfg_field_typed(f, cfgname, "", qc, nums[i], T_NULL | T_NUM, "an integer");
    if (!ok) return;
    const char *ver = hc__json_str(qc, "version");
    const cJSON *v;
    int64_t bits = hc__cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "bits"),
                               hc__cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "w_bit"), 4));
    int64_t gs = hc__cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "group_size"),
                             hc__cfg_num(cJSON_GetObjectItemCaseSensitive(qc, "q_group_size"),
                                         128));
    if (ver && strcasecmp(ver, "gemm")) {
        size_t first = f->n;
        hc__findings_add(f, HC_SEV_ERROR, cfgname, "version", 0, NULL, 0,
                        "%s: AWQ version '%s' is not supported (only gemm; the gemv layouts "
                        "differ)", cfgname, ver);
        hc__findings_mark_checkpoint(f, first);
        return;
    }
    if (bits != 4) {
        hc__findings_add(f, HC_SEV_ERROR, cfgname, "bits", 0, NULL, 0,
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
