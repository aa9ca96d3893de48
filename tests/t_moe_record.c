/* t_moe_record.c: the container's MoE record (moe_layers): what convert writes for the MoE
 * fixtures, read back through the public API and held to expectations written here from each
 * fixture's config.json and tensor names (FORMATS.md sections 5 and 6), not from the code;
 * and the reader's refusals of a record that does not fit the tensor table, each naming its
 * rule, while a container without the record still opens. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "container_write.h"
#include "hconvert.h"
#include "hcrt.h"
#include "test.h"

/* The fixture converted (repack 1: tiles; 0: passthrough) into a fresh folder: its container. */
static const char *convert_fixture(const char *name, int repack, int tp) {
    static char out[1200];
    static unsigned seq;
    snprintf(out, sizeof out, "%s/moe%u", test_tmpdir(), seq++);
    char src[600];
    snprintf(src, sizeof src, "%s", fixture(name));
    hc_converter *cv = hc_converter_create();
    hc_converter_set(cv, HC_CONV_THREADS, 2);
    hc_converter_set(cv, HC_CONV_REPACK, repack);
    hc_converter_set(cv, HC_CONV_TP_SIZE, tp);
    if (hc_converter_run(cv, src, out)) CHECK_FAIL_("%s: %s", name, hc_converter_errmsg(cv));
    hc_converter_free(cv);
    size_t l = strlen(out);
    snprintf(out + l, sizeof out - l, tp > 1 ? "/rank1/%s" : "/%s", HC_CONTAINER_FILE);
    return out;
}

static hc_container *open_ok(const char *path) {
    hc_container *c = NULL;
    char msg[1024] = "";
    if (hc_container_open(path, 1, &c, msg, sizeof msg)) CHECK_FAIL_("%s: %s", path, msg);
    return c;
}

/* An int field of the fixture's config.json. */
static int config_int(const char *fx, const char *key) {
    char p[700];
    snprintf(p, sizeof p, "%s/config.json", fixture(fx));
    cJSON *j = test_load_json(p);
    const cJSON *v = j ? cJSON_GetObjectItemCaseSensitive(j, key) : NULL;
    int r = cJSON_IsNumber(v) ? v->valueint : -1;
    cJSON_Delete(j);
    return r;
}

static void test_qwen_records(void) {
    /* Qwen3-MoE: mlp.experts.J.{gate,up,down}_proj, router mlp.gate, no shared expert;
     * Qwen2-MoE adds mlp.shared_expert.* and its sigmoid gate mlp.shared_expert_gate;
     * DeepSeek-V3 (FP8 blocks) names them as Qwen3 does, E n_routed_experts, and here
     * n_shared_experts = 0 */
    static const struct {
        const char *fx, *ekey, *skey;
        bool shared;
    } cases[] = {{"quant/ct_moe_qwen3", "num_experts", "shared_expert_intermediate_size", false},
                 {"quant/ct_moe_qwen2_shared", "num_experts", "shared_expert_intermediate_size",
                  true},
                 {"quant/deepseek_fp8", "n_routed_experts", "n_shared_experts", false}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int repack = 1; repack >= 0; repack--) {
            hc_container *c = open_ok(convert_fixture(cases[k].fx, repack, 1));
            if (!c) continue;
            CHECK_EQ_INT(hc_container_moe_count(c), 1);
            const hc_moe_layer_info *l = hc_container_moe(c, 0);
            CHECK(hc_container_moe(c, 1) == NULL);
            if (!l) {
                hc_container_free(c);
                continue;
            }
            CHECK_STR_EQ(l->name, "model.layers.0.mlp");
            CHECK_EQ_INT(l->experts, config_int(cases[k].fx, cases[k].ekey));
            CHECK_EQ_INT(l->layout, HC_MOE_PER_EXPERT);
            CHECK_STR_EQ(l->gate, "model.layers.0.mlp.experts.*.gate_proj");
            CHECK_STR_EQ(l->up, "model.layers.0.mlp.experts.*.up_proj");
            CHECK_STR_EQ(l->down, "model.layers.0.mlp.experts.*.down_proj");
            CHECK(l->gate_up == NULL && l->gate_up_bias == NULL && l->down_bias == NULL);
            CHECK_EQ_INT(l->activation, HC_MOE_SILU); /* hidden_act "silu" */
            CHECK_STR_EQ(l->router, "model.layers.0.mlp.gate");
            CHECK_EQ_INT(cases[k].shared, config_int(cases[k].fx, cases[k].skey) > 0);
            if (cases[k].shared) {
                CHECK_STR_EQ(l->shared_gate, "model.layers.0.mlp.shared_expert.gate_proj");
                CHECK_STR_EQ(l->shared_up, "model.layers.0.mlp.shared_expert.up_proj");
                CHECK_STR_EQ(l->shared_down, "model.layers.0.mlp.shared_expert.down_proj");
                CHECK_STR_EQ(l->shared_expert_gate, "model.layers.0.mlp.shared_expert_gate");
            } else {
                CHECK(!l->shared_gate && !l->shared_up && !l->shared_down &&
                      !l->shared_expert_gate);
            }
            hc_container_free(c);
        }
}

static void test_gptoss_and_mixtral_records(void) {
    /* gpt-oss: fused mlp.experts.gate_up_proj (gate/up interleaved along 2I) and down_proj with
     * their _bias tensors, router mlp.router; alpha 1.702 is the model code's constant, the
     * limit config.json's swiglu_limit (7.0 in this fixture) */
    for (unsigned tp = 1; tp <= 2; tp++) {
        hc_container *c = open_ok(convert_fixture("quant/gptoss_mxfp4", 1, (int)tp));
        const hc_moe_layer_info *l = c ? hc_container_moe(c, 0) : NULL;
        CHECK(l != NULL);
        if (l) {
            CHECK_EQ_INT(hc_container_moe_count(c), 1);
            CHECK_STR_EQ(l->name, "model.layers.0.mlp");
            CHECK_EQ_INT(l->experts, config_int("quant/gptoss_mxfp4", "num_local_experts"));
            CHECK_EQ_INT(l->layout, HC_MOE_FUSED);
            CHECK(l->gate == NULL && l->up == NULL);
            CHECK_STR_EQ(l->gate_up, "model.layers.0.mlp.experts.gate_up_proj");
            CHECK_EQ_INT(l->gate_up_order, HC_MOE_INTERLEAVED);
            CHECK_STR_EQ(l->down, "model.layers.0.mlp.experts.down_proj");
            CHECK_STR_EQ(l->gate_up_bias, "model.layers.0.mlp.experts.gate_up_proj_bias");
            CHECK_STR_EQ(l->down_bias, "model.layers.0.mlp.experts.down_proj_bias");
            CHECK_EQ_INT(l->activation, HC_MOE_SWIGLU_CLAMP);
            CHECK(l->alpha == 1.702 && l->limit == 7.0);
            CHECK_STR_EQ(l->router, "model.layers.0.mlp.router");
            CHECK(l->shared_gate == NULL);
        }
        hc_container_free(c);
    }
    /* Mixtral (GPTQ): block_sparse_moe.experts.J.w1 gate, w3 up, w2 down; router .gate */
    hc_container *c = open_ok(convert_fixture("quant/gptq_mixtral_moe", 1, 1));
    const hc_moe_layer_info *l = c ? hc_container_moe(c, 0) : NULL;
    CHECK(l != NULL);
    if (l) {
        CHECK_STR_EQ(l->name, "model.layers.0.block_sparse_moe");
        CHECK_EQ_INT(l->experts, config_int("quant/gptq_mixtral_moe", "num_local_experts"));
        CHECK_STR_EQ(l->gate, "model.layers.0.block_sparse_moe.experts.*.w1");
        CHECK_STR_EQ(l->up, "model.layers.0.block_sparse_moe.experts.*.w3");
        CHECK_STR_EQ(l->down, "model.layers.0.block_sparse_moe.experts.*.w2");
        CHECK_STR_EQ(l->router, "model.layers.0.block_sparse_moe.gate");
    }
    hc_container_free(c);
    /* a dense checkpoint records nothing */
    c = open_ok(convert_fixture("quant/ct_w4a16_g32_asym", 1, 1));
    if (c) CHECK_EQ_INT(hc_container_moe_count(c), 0);
    hc_container_free(c);
}

/* Writes the tensors of container `from` again into `to` with model.moe_layers = rec (NULL:
 * none, as an older convert wrote), the rest of the header as it was. */
static bool rewrite(const char *from, const char *to, const cJSON *rec) {
    hc_container *c = open_ok(from);
    if (!c) return false;
    size_t n = hc_container_tensor_count(c);
    hc_cw_tensor *tv = calloc(n, sizeof *tv);
    cJSON **lp = calloc(n, sizeof *lp);
    void **owned = calloc(n, sizeof *owned);
    bool ok = tv && lp && owned;
    for (size_t i = 0; ok && i < n; i++) {
        const hc_tensor_info *t = hc_container_tensor(c, i);
        const void *data;
        ok = hc_container_tensor_data(c, t, &data, &owned[i]) == HC_OK;
        tv[i] = (hc_cw_tensor){.name = t->name, .dtype = t->dtype, .ndim = t->ndim,
                               .layout = t->layout, .layout_version = t->layout_version,
                               .data = data, .size = t->raw_length};
        memcpy(tv[i].shape, t->shape, sizeof t->shape);
        memcpy(tv[i].padded_shape, t->padded_shape, sizeof t->padded_shape);
        if (t->layout_params) tv[i].layout_params = lp[i] = cJSON_Parse(t->layout_params);
    }
    hc_cw_options o = {.source_format = "compressed-tensors", .moe_layers = rec, .threads = 1};
    hc_err err = {0};
    if (ok && hc__container_write(to, tv, n, &o, &err)) {
        CHECK_FAIL_("rewrite %s: %s", to, err.msg);
        ok = false;
    }
    for (size_t i = 0; i < n; i++) {
        if (lp) cJSON_Delete(lp[i]);
        if (owned) free(owned[i]);
    }
    free(tv), free(lp), free(owned);
    hc_container_free(c);
    return ok;
}

/* The record of the converted fixture as JSON, with field key set to val (NULL: removed;
 * a number when num). */
static cJSON *record_with(const char *path, const char *key, const char *val, double num) {
    size_t len;
    hc_container *c = open_ok(path);
    if (!c) return NULL;
    cJSON *h = cJSON_Parse(hc_container_header_json(c, &len));
    hc_container_free(c);
    cJSON *m = cJSON_GetObjectItemCaseSensitive(h, "model");
    cJSON *rec = cJSON_DetachItemFromObjectCaseSensitive(m, "moe_layers");
    cJSON_Delete(h);
    cJSON *l = cJSON_GetArrayItem(rec, 0);
    if (key && l) {
        cJSON_DeleteItemFromObjectCaseSensitive(l, key);
        if (val) cJSON_AddStringToObject(l, key, val);
        else if (num) cJSON_AddNumberToObject(l, key, num);
    }
    return rec;
}

/* The record with key changed is refused at open, the message naming the layer and `rule`. */
static void expect_refused(const char *src, const char *key, const char *val, double num,
                           const char *rule) {
    static unsigned seq;
    char to[700], msg[2048] = "";
    snprintf(to, sizeof to, "%s/bad%u.hconvert", test_tmpdir(), seq++);
    cJSON *rec = record_with(src, key, val, num);
    if (rec && rewrite(src, to, rec)) {
        hc_container *c = NULL;
        CHECK_EQ_INT(hc_container_open(to, 0, &c, msg, sizeof msg), HC_INVALID);
        CHECK(c == NULL);
        CHECK_CONTAINS(msg, to);
        CHECK_CONTAINS(msg, "model.layers.0.mlp");
        CHECK_CONTAINS(msg, rule);
        hc_container_free(c);
    }
    cJSON_Delete(rec);
}

static void test_bad_records_refused(void) {
    char q3[1200], oss[1200], sh[1200];
    snprintf(q3, sizeof q3, "%s", convert_fixture("quant/ct_moe_qwen3", 1, 1));
    snprintf(oss, sizeof oss, "%s", convert_fixture("quant/gptoss_mxfp4", 1, 1));
    snprintf(sh, sizeof sh, "%s", convert_fixture("quant/ct_moe_qwen2_shared", 1, 1));
    /* the record unchanged, written again, opens: the refusals below are the change's */
    char to[700];
    snprintf(to, sizeof to, "%s/same.hconvert", test_tmpdir());
    cJSON *rec = record_with(q3, NULL, NULL, 0);
    if (rewrite(q3, to, rec)) {
        hc_container *c = open_ok(to);
        if (c) CHECK_EQ_INT(hc_container_moe_count(c), 1);
        hc_container_free(c);
    }
    cJSON_Delete(rec);
    /* a missing tensor; an expert past the 8 the tensors hold (E mismatch) */
    expect_refused(q3, "gate", "model.layers.0.mlp.experts.*.gate_projx",
                   0, "every layer the record names exists");
    expect_refused(q3, "experts", NULL, 9, "for every expert in [0, E)");
    /* wrong shapes: up [96, 64] as down ([H, I] = [64, 96]); the router [8, 64] against an
     * expert's gate [96, 64]; the shared expert's down as its up */
    expect_refused(q3, "down", "model.layers.0.mlp.experts.*.up_proj", 0,
                   "\"down\" 'model.layers.0.mlp.experts.0.up_proj' makes H = 96, \"gate\" "
                   "makes it 64 (rule: gate and up are [I, H]");
    expect_refused(q3, "router", "model.layers.0.mlp.experts.0.gate_proj", 0,
                   "makes E = 96, \"experts\" makes it 8");
    expect_refused(sh, "shared_up", "model.layers.0.mlp.experts.0.down_proj", 0,
                   "\"shared_up\" 'model.layers.0.mlp.experts.0.down_proj' makes H = 32");
    /* fused: E against the tensors' leading dimension; a bias of the wrong projection */
    expect_refused(oss, "experts", NULL, 8, "a fused one E = 8");
    expect_refused(oss, "gate_up_bias", "model.layers.0.mlp.experts.down_proj_bias", 0,
                   "makes I = 32, \"gate_up\" makes it 64");
    expect_refused(oss, "down_bias", "model.layers.0.mlp.experts.missing_bias", 0,
                   "every tensor the record names exists");
    /* the record's own rules */
    expect_refused(q3, "gate", "model.layers.0.mlp.experts.0.gate_proj", 0, "exactly one '*'");
    expect_refused(q3, "up", NULL, 0, "either \"gate\" and \"up\" or \"gate_up\"");
    expect_refused(q3, "router", NULL, 0, "\"down\" and \"router\" are required");
    expect_refused(oss, "gate_up_order", "sideways", 0, "\"interleaved\" or \"stacked\"");
    expect_refused(q3, "shared_gate", "model.layers.0.mlp.gate", 0, "a shared expert needs all");
}

static void test_old_container_opens(void) {
    /* an older convert wrote no record: the container opens, with no MoE layers */
    const char *src = convert_fixture("quant/ct_moe_qwen3", 1, 1);
    char to[700];
    snprintf(to, sizeof to, "%s/old.hconvert", test_tmpdir());
    if (rewrite(src, to, NULL)) {
        hc_container *c = open_ok(to);
        if (c) {
            CHECK_EQ_INT(hc_container_moe_count(c), 0);
            CHECK(hc_container_moe(c, 0) == NULL);
            uint64_t n, k, e;
            CHECK_EQ_INT(hc_linear_shape(c, "model.layers.0.mlp.experts.7.down_proj", &n, &k, &e,
                                         NULL, 0), HC_OK);
        }
        hc_container_free(c);
    }
}

/* The bytes of tensor name in a safetensors file, read here from its header (the format's
 * 8-byte length, JSON, data_offsets) without the library's reader; *n their count. */
static unsigned char *safetensors_bytes(const char *path, const char *name, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char len8[8], *out = NULL;
    if (!f || fread(len8, 1, 8, f) != 8) goto done;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | len8[i];
    char *h = hl < (1u << 24) ? calloc(hl + 1, 1) : NULL;
    cJSON *j = h && fread(h, 1, hl, f) == hl ? cJSON_Parse(h) : NULL;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, name),
                                                      "data_offsets");
    if (cJSON_GetArraySize(o) == 2) {
        long b = (long)cJSON_GetArrayItem(o, 0)->valuedouble;
        *n = (size_t)((long)cJSON_GetArrayItem(o, 1)->valuedouble - b);
        out = malloc(*n + 1);
        if (out && (fseek(f, 8 + (long)hl + b, SEEK_SET) || fread(out, 1, *n, f) != *n))
            free(out), out = NULL;
    }
    cJSON_Delete(j);
    free(h);
done:
    if (f) fclose(f);
    return out;
}

/* convert --tp 2 of gpt-oss cuts the fused gate_up bias [E, 2I] along its rows as it cuts the
 * layer (rank r: columns [r I, (r + 1) I) of every expert's row), and keeps the row-parallel
 * down bias [E, H] whole; each rank's record then checks against the rank's shapes. */
static void test_tp_cuts_fused_bias(void) {
    const char *path = convert_fixture("quant/gptoss_mxfp4", 1, 2); /* rank 1 */
    hc_container *c = open_ok(path);
    if (!c) return;
    char src[700];
    snprintf(src, sizeof src, "%s/model.safetensors", fixture("quant/gptoss_mxfp4"));
    static const char *const names[2] = {"model.layers.0.mlp.experts.gate_up_proj_bias",
                                         "model.layers.0.mlp.experts.down_proj_bias"};
    for (int b = 0; b < 2; b++) {
        size_t n = 0;
        unsigned char *whole = safetensors_bytes(src, names[b], &n);
        const hc_tensor_info *t = hc_container_find(c, names[b]);
        CHECK(whole && t && t->ndim == 2 && t->shape[0] == 4);
        if (whole && t && t->ndim == 2) {
            uint64_t cols = n / 2 / 4, keep = b == 0 ? cols / 2 : cols; /* bf16, E = 4 */
            CHECK_EQ_U64(t->shape[1], keep);
            const unsigned char *got = hc_container_stored(c, t);
            int same = t->length == 4 * keep * 2;
            for (uint64_t e = 0; e < 4 && same; e++)
                same = !memcmp(got + e * keep * 2, whole + (e * cols + (cols - keep)) * 2, keep * 2);
            CHECK(same);
        }
        free(whole);
    }
    CHECK(hc_container_moe_count(c) == 1);
    hc_container_free(c);
}

void suite_moe(void) {
    RUN(test_tp_cuts_fused_bias);
    RUN(test_qwen_records);
    RUN(test_gptoss_and_mixtral_records);
    RUN(test_bad_records_refused);
    RUN(test_old_container_opens);
}
