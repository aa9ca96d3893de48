/* scheme_float.c: the schemes of the float-code formats with configs of their own: gpt-oss
 * MXFP4 (quant_method "mxfp4", fused experts) and FP8 with weight_scale_inv (quant_method
 * "fp8": DeepSeek's and transformers' convention or GPTQModel's). */
#include <string.h>
#include <strings.h>

#include "jsonutil.h"
#include "scheme_int.h"

void hc__resolve_gptoss(hc_model *md) {
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
void hc__resolve_fp8(hc_model *md, const cJSON *qc, const char *cfgname) {
    hc_findings *f = &md->config_findings;
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(qc, "weight_block_size");
    bool ok = hc__cfg_field_typed(f, cfgname, "", qc, "weight_scale_semantics", T_NULL | T_STR,
                                  "a string");
    ok &= hc__cfg_field_typed(f, cfgname, "", qc, "weight_scale_method", T_NULL | T_STR,
                              "a string");
    ok &= hc__cfg_typed(f, cfgname, "weight_block_size", bs, T_NULL | T_ARR,
                        "[rows, cols] or null");
    if (!ok) return;
    const char *sem = hc__json_str(qc, "weight_scale_semantics");
    const char *meth = hc__json_str(qc, "weight_scale_method");
    /* absent: GPTQModel's normaliser reads it as "inverse", and only GPTQModel writes
     * weight_scale_method; without either field the config is DeepSeek's */
    bool inverse = sem ? !strcasecmp(sem, "inverse") : meth != NULL;
    if (sem && !inverse) {
        hc__findings_add(f, HC_SEV_ERROR, cfgname, "weight_scale_semantics", 0, NULL, 0,
                        "%s: weight_scale_semantics '%s' is not known ('inverse': the weights "
                        "are divided by weight_scale_inv; absent: divided when "
                        "weight_scale_method is given (GPTQModel), else multiplied, as "
                        "DeepSeek's)", cfgname, sem);
        return;
    }
    uint64_t block[2] = {0, 0};
    if (cJSON_IsArray(bs)) {
        int64_t r = hc__cfg_num(cJSON_GetArrayItem(bs, 0), 0);
        int64_t c = hc__cfg_num(cJSON_GetArrayItem(bs, 1), 0);
        if (cJSON_GetArraySize(bs) != 2 || r <= 0 || c <= 0) {
            hc__findings_add(f, HC_SEV_ERROR, cfgname, "weight_block_size", 0, NULL, 0,
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
        hc__findings_add(f, HC_SEV_ERROR, cfgname, "weight_scale_method", 0, NULL, 0,
                        "%s: weight_scale_method '%s' is not known (block, row, tensor)",
                        cfgname, mn);
        return;
    }
    if ((st == HC_STRAT_BLOCK) != (block[0] != 0)) {
        hc__findings_add(f, HC_SEV_ERROR, cfgname, "weight_block_size", 0, NULL, 0,
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
