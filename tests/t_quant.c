/* t_quant.c: every decoder against float64-derived values written by the Python generator
 * (tests/fixtures/gen_quant.py, an independent implementation of FORMATS.md), bit for bit,
 * through hc__module_decode and through hc_dequant; validate's findings against each problem
 * fixture's expectations; the scale-sanity rule on scales built by hand. What convert makes of
 * the fixtures is t_convert.c's. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "checkpoint.h"
#include "hconvert.h"
#include "quant.h"
#include "test.h"
#include "validate.h"

/* Minimal .npy reader for the fixtures: little-endian float32, C order. */
static float *load_npy(const char *path, uint64_t *shape, int *ndim) {
    char *t = NULL;
    size_t n = 0;
    hc_err err = {0};
    if (hc__read_file(path, 1 << 28, &t, &n, &err) || n < 10 || memcmp(t, "\x93NUMPY", 6)) {
        free(t);
        return NULL;
    }
    size_t hl = (unsigned char)t[8] | (size_t)(unsigned char)t[9] << 8;
    if (10 + hl > n || !strstr(t + 10, "'<f4'")) {
        free(t);
        return NULL;
    }
    char *sp = strstr(t + 10, "'shape': (");
    *ndim = 0;
    for (char *p = sp ? sp + 10 : NULL; p && *p != ')' && *ndim < HC_MAX_DIMS;) {
        shape[(*ndim)++] = strtoull(p, &p, 10);
        while (*p == ',' || *p == ' ') p++;
    }
    uint64_t numel = 1;
    for (int d = 0; d < *ndim; d++) numel *= shape[d];
    if (10 + hl + numel * 4 != n) {
        free(t);
        return NULL;
    }
    float *v = malloc(numel * 4 + 1);
    const float *src = (const float *)(t + 10 + hl);
    if (strstr(t + 10, "'fortran_order': True")) {
        /* column-major: the first index varies fastest */
        for (uint64_t i = 0; i < numel; i++) {
            uint64_t rem = i, fi = 0, stride = 1;
            uint64_t digits[HC_MAX_DIMS];
            for (int d = *ndim - 1; d >= 0; d--) digits[d] = rem % shape[d], rem /= shape[d];
            for (int d = 0; d < *ndim; d++) fi += digits[d] * stride, stride *= shape[d];
            memcpy(&v[i], &src[fi], 4);
        }
    } else {
        memcpy(v, src, numel * 4);
    }
    free(t);
    return v;
}

static int cases_done, modules_done, findings_checked;

static void check_module(const char *cas, const hc_model *md, const char *name, const cJSON *m) {
    char path[1024];
    const hc_module *mod = hc__model_find(md, name);
    if (!mod) {
        CHECK_FAIL_("%s: module '%s' not found", cas, name);
        return;
    }
    hc_qtensor q;
    hc_findings f = {0};
    hc_err err = {0};
    if (hc__module_decode(md, mod, 0, &q, &f, &err)) {
        CHECK_FAIL_("%s: decode '%s': %s", cas, name, f.n ? f.v[0].message : err.msg);
        hc__findings_free(&f);
        return;
    }
    snprintf(path, sizeof path, "%s/%s", fixture("quant"), cas);
    char npy[1200];
    snprintf(npy, sizeof npy, "%s/%s", path, cJSON_GetObjectItem(m, "npy")->valuestring);
    uint64_t shape[HC_MAX_DIMS];
    int nd = 0;
    float *want = load_npy(npy, shape, &nd);
    CHECK(want != NULL);
    uint64_t numel = hc__qtensor_numel(&q), wn = 1;
    for (int d = 0; d < nd; d++) wn *= shape[d];
    const cJSON *es = cJSON_GetObjectItem(m, "shape");
    CHECK_EQ_INT(nd, cJSON_GetArraySize(es));
    if (want && numel == wn) {
        float *got = malloc(numel * 4 + 1);
        hc__qtensor_dequant(&q, got);
        uint64_t diff = 0, first = 0;
        for (uint64_t i = 0; i < numel; i++) {
            uint32_t a, b;
            memcpy(&a, &got[i], 4);
            memcpy(&b, &want[i], 4);
            if (a != b && !(isnan(got[i]) && isnan(want[i])) && !diff++) first = i;
        }
        if (diff)
            CHECK_FAIL_("%s: '%s': %llu of %llu values differ (first at %llu: %g vs %g)", cas, name,
                        (unsigned long long)diff, (unsigned long long)numel,
                        (unsigned long long)first, got[first], want[first]);
        free(got);
        modules_done++;
    } else {
        CHECK_FAIL_("%s: '%s': %llu elements, expected %llu", cas, name, (unsigned long long)numel,
                    (unsigned long long)wn);
    }
    free(want);
    hc__qtensor_free(&q);
    hc__findings_free(&f);
}

static bool finding_matches(const cJSON *got, const cJSON *want) {
    const char *sev = cJSON_GetObjectItem(want, "severity")->valuestring;
    const char *tensor = cJSON_GetStringValue(cJSON_GetObjectItem(want, "tensor"));
    const char *rule = cJSON_GetStringValue(cJSON_GetObjectItem(want, "rule"));
    if (!tensor) tensor = ""; /* null: the problem is checkpoint-wide */
    if (!rule) rule = "";
    const char *msg = cJSON_GetObjectItem(got, "message")->valuestring;
    if (strcmp(cJSON_GetObjectItem(got, "severity")->valuestring, sev)) return false;
    if (!strstr(msg, tensor) && !strstr(cJSON_GetObjectItem(got, "tensor")->valuestring, tensor))
        return false;
    if (!strstr(msg, rule) && !strstr(cJSON_GetObjectItem(got, "rule")->valuestring, rule))
        return false;
    const cJSON *wc = cJSON_GetObjectItem(want, "count");
    if (cJSON_IsNumber(wc) && cJSON_GetObjectItem(got, "count")->valuedouble != wc->valuedouble)
        return false;
    const cJSON *we = cJSON_GetObjectItem(want, "experts"), *ge = cJSON_GetObjectItem(got, "experts");
    if (cJSON_IsArray(we)) {
        if (!cJSON_IsArray(ge) || cJSON_GetArraySize(ge) != cJSON_GetArraySize(we)) return false;
        for (int i = 0; i < cJSON_GetArraySize(we); i++)
            if (cJSON_GetArrayItem(we, i)->valueint != cJSON_GetArrayItem(ge, i)->valueint)
                return false;
    }
    return true;
}

static void check_validate(const char *cas, const cJSON *v) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", fixture("quant"), cas);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    hc_validate_opts o = {.json = true, .threads = 2};
    size_t errors = 0;
    hc_err err = {0};
    hc_status st = hc__validate(path, &o, mem, &errors, &err);
    fclose(mem);
    CHECK_EQ_INT(st, HC_OK);
    cJSON *r = cJSON_Parse(buf);
    CHECK(r != NULL);
    int want_exit = cJSON_GetObjectItem(v, "exit")->valueint;
    if ((errors ? 1 : 0) != want_exit)
        CHECK_FAIL_("%s: validate found %zu errors, expected exit %d:\n%s", cas, errors, want_exit,
                    buf ? buf : "");
    const cJSON *got = r ? cJSON_GetObjectItem(r, "findings") : NULL;
    const cJSON *w;
    cJSON_ArrayForEach(w, cJSON_GetObjectItem(v, "findings")) {
        bool found = false;
        const cJSON *g;
        cJSON_ArrayForEach(g, got) found |= finding_matches(g, w);
        findings_checked++;
        if (!found) {
            char *ws = cJSON_PrintUnformatted(w), *gs = cJSON_PrintUnformatted(got);
            CHECK_FAIL_("%s: expected finding %s not among %s", cas, ws, gs);
            free(ws);
            free(gs);
        }
    }
    if (want_exit == 0 && cJSON_GetArraySize(cJSON_GetObjectItem(v, "findings")) == 0) {
        /* a clean case is clean: no error and no warning (GPTQ v1 zeros with borrows are
         * valid, not "out of range") */
        const cJSON *g;
        cJSON_ArrayForEach(g, got)
            CHECK_FAIL_("%s: unexpected %s %s", cas, cJSON_GetObjectItem(g, "severity")->valuestring,
                        cJSON_GetObjectItem(g, "message")->valuestring);
    }
    cJSON_Delete(r);
    free(buf);
}

static void test_every_format_fixture(void) {
    char *list = NULL;
    char **all = fixture_cases(&list);
    for (char **cp = all; *cp; cp++) {
        const char *cas = *cp;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/expected.json", fixture("quant"), cas);
        cJSON *e = test_load_json(path);
        if (!e) {
            CHECK_FAIL_("%s: cannot read expected.json", cas);
            continue;
        }
        cases_done++;
        check_validate(cas, cJSON_GetObjectItem(e, "validate"));
        const cJSON *mods = cJSON_GetObjectItem(e, "modules");
        if (cJSON_GetArraySize(mods)) {
            snprintf(path, sizeof path, "%s/%s", fixture("quant"), cas);
            hc_ckpt *ck = NULL;
            hc_model *md = NULL;
            hc_err e2 = {0};
            if (hc__ckpt_open(path, &ck, &e2) || hc__ckpt_map(ck, &e2) || hc__model_open(ck, &md, &e2)) {
                CHECK_FAIL_("%s: %s", cas, e2.msg);
            } else {
                const cJSON *m;
                cJSON_ArrayForEach(m, mods) check_module(cas, md, m->string, m);
            }
            hc__model_free(md);
            hc__ckpt_close(ck);
        }
        cJSON_Delete(e);
    }
    free(all);
    free(list);
    printf("     (%d cases, %d modules bit-exact, %d findings checked)\n", cases_done, modules_done,
           findings_checked);
    CHECK(cases_done >= 40);
    CHECK(modules_done >= 60);
}

static void test_element_decoders(void) {
    /* E2M1: sign bit 3, magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6 */
    CHECK(hc__fp4_e2m1(0x7) == 6.0 && hc__fp4_e2m1(0xF) == -6.0 && hc__fp4_e2m1(0x1) == 0.5);
    /* E4M3: max 448 (0x7E), NaN 0x7F/0xFF, min subnormal 2^-9 */
    CHECK(hc__fp8_e4m3(0x7E) == 448.0);
    CHECK(isnan(hc__fp8_e4m3(0x7F)) && isnan(hc__fp8_e4m3(0xFF)));
    CHECK(hc__fp8_e4m3(0x01) == ldexp(1, -9));
    CHECK(hc__fp8_e4m3(0x38) == 1.0);
    /* E5M2: inf 0x7C, NaN 0x7D */
    CHECK(isinf(hc__fp8_e5m2(0x7C)) && isnan(hc__fp8_e5m2(0x7D)) && hc__fp8_e5m2(0x3C) == 1.0);
    /* E8M0: 127 = 1, 0 = 2^-127, 0xFF = NaN */
    CHECK(hc__e8m0(127) == 1.0 && hc__e8m0(0) == ldexp(1, -127) && isnan(hc__e8m0(0xFF)));
    uint16_t h[3] = {0x3C00, 0xC000, 0x0001}; /* f16: 1, -2, 2^-24 */
    double v;
    CHECK(hc__read_scalar(h, HC_DT_F16, 0, &v) && v == 1.0);
    CHECK(hc__read_scalar(h, HC_DT_F16, 1, &v) && v == -2.0);
    CHECK(hc__read_scalar(h, HC_DT_F16, 2, &v) && v == ldexp(1, -24));
    uint16_t bf = 0x3FC0; /* bf16 1.5 */
    CHECK(hc__read_scalar(&bf, HC_DT_BF16, 0, &v) && v == 1.5);
}

/* ---- robustness: hostile quantization configs never crash validate or dequant ---- */

static void copy_file(const char *from, const char *to) {
    char *d = NULL;
    size_t n = 0;
    hc_err err = {0};
    if (hc__read_file(from, 1 << 28, &d, &n, &err)) return;
    FILE *f = fopen(to, "wb");
    if (f) {
        fwrite(d, 1, n, f);
        fclose(f);
    }
    free(d);
}

/* The i-th value below v (depth-first, an object or array before its contents) and its
 * parent, or NULL. Containers count too: an array where an object belongs is the hostile
 * input (GPTQ dynamic as a list crashed resolve_gptq). */
static cJSON *nth_node(cJSON *v, int i, int *seen, cJSON **parent) {
    cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if ((*seen)++ == i) {
            *parent = v;
            return it;
        }
        if (cJSON_IsObject(it) || cJSON_IsArray(it)) {
            cJSON *r = nth_node(it, i, seen, parent);
            if (r) return r;
        }
    }
    return NULL;
}

static int run_validate_quiet(const char *dir) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    hc_validate_opts o = {.json = true, .threads = 1};
    size_t errors = 0;
    hc_err err = {0};
    hc_status st = hc__validate(dir, &o, mem, &errors, &err);
    fclose(mem);
    free(buf);
    return st;
}

/* Every value of quantization_config (leaves and containers) replaced by hostile values:
 * validate must answer (OK or a refusal), never crash (ASan/UBSan watch). */
static void test_hostile_configs_never_crash(void) {
    static const char *const cases[] = {"ct_w4a16_g32_asym", "ct_w3_new", "ct_fp8_block",
                                        "ct_nvfp4", "ct_mxfp4_v013", "ct_w8a8_int", "gptq_3bit",
                                        "gptq_desc_act", "gptq_dynamic", "awq_gemm",
                                        "gptoss_mxfp4", "deepseek_fp8", "ct_mixed",
                                        "gptqmodel_fp8_block"};
    static const char *const values[] = {"0", "-1", "1", "3", "9", "1e300", "-2.5", "\"x\"",
                                         "null", "[]", "{}", "true", "[\"x\"]", "[{}]",
                                         "{\"k\": [1]}"};
    int runs = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char src[1024], dir[1024], p[1200], q[1200];
        snprintf(src, sizeof src, "%s/%s", fixture("quant"), cases[c]);
        snprintf(dir, sizeof dir, "%s", test_tmpdir());
        snprintf(p, sizeof p, "%s/model.safetensors", src);
        snprintf(q, sizeof q, "%s/model.safetensors", dir);
        copy_file(p, q);
        snprintf(p, sizeof p, "%s/config.json", src);
        cJSON *cfg = test_load_json(p);
        CHECK(cfg != NULL);
        if (!cfg) continue;
        for (int l = 0;; l++) {
            int seen = 0;
            cJSON *parent = NULL;
            if (!nth_node(cJSON_GetObjectItem(cfg, "quantization_config"), l, &seen, &parent))
                break;
            for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
                cJSON *dup = cJSON_Duplicate(cfg, 1);
                seen = 0;
                cJSON *leaf = nth_node(cJSON_GetObjectItem(dup, "quantization_config"), l, &seen,
                                       &parent);
                cJSON_ReplaceItemViaPointer(parent, leaf, cJSON_Parse(values[v]));
                char *text = cJSON_PrintUnformatted(dup);
                cJSON_Delete(dup);
                snprintf(q, sizeof q, "%s/config.json", dir);
                FILE *f = fopen(q, "wb");
                if (f && text) fputs(text, f);
                if (f) fclose(f);
                free(text);
                int st = run_validate_quiet(dir);
                CHECK(st == HC_OK || st == HC_INVALID);
                runs++;
            }
        }
        cJSON_Delete(cfg);
    }
    CHECK(runs > 500);
    printf("     (%d hostile configs validated)\n", runs);
}

/* ---- the scale-sanity rule, on scales built by hand ---- */

static void test_scale_census(void) {
    /* expert 0: 1, NaN, 0, -2; expert 1: inf, -inf, -0, the smallest subnormal */
    double s[8] = {1, NAN, 0, -2, INFINITY, -INFINITY, -0.0, 4.9406564584124654e-324};
    hc_qtensor q;
    memset(&q, 0, sizeof q);
    q.kind = HC_Q_FP4, q.E = 2, q.sn = 1, q.sk = 4, q.scales = s;
    double sane[8];
    hc_scale_census c;
    hc__scale_census_of(&q, 0, 8, sane, &c);
    CHECK_EQ_U64(c.n, 8);
    CHECK_EQ_U64(c.count[HC_SCALE_NAN], 1);
    CHECK_EQ_U64(c.count[HC_SCALE_INF], 2);  /* either sign */
    CHECK_EQ_U64(c.count[HC_SCALE_ZERO], 2); /* either sign */
    CHECK_EQ_U64(c.count[HC_SCALE_NEGATIVE], 1);
    CHECK_EQ_U64(c.bad, 6);
    CHECK_EQ_U64(c.nsane, 2);
    CHECK(sane[0] == 1 && sane[1] == s[7]); /* in order */
    /* one expert's range */
    hc__scale_census_of(&q, 4, 4, NULL, &c);
    CHECK_EQ_U64(c.count[HC_SCALE_NAN], 0);
    CHECK_EQ_U64(c.count[HC_SCALE_INF], 2);
    CHECK_EQ_U64(c.count[HC_SCALE_ZERO], 1);
    CHECK_EQ_U64(c.bad, 3);
    CHECK_EQ_U64(c.nsane, 1);
    CHECK_STR_EQ(hc__scale_class_names[HC_SCALE_NEGATIVE], "negative");
    CHECK_EQ_INT(hc__scale_class_of(1e-310), -1);
    CHECK_EQ_INT(hc__scale_class_of(-1e-310), HC_SCALE_NEGATIVE);
}

/* A copy of fixture case cs in dir: config.json as it is, model.safetensors with its header
 * passed through edit (with the tensors' bytes, writable) and written back padded to 8. */
static bool edited_copy(const char *cs, const char *dir,
                        void (*edit)(cJSON *h, unsigned char *data, size_t n, const void *arg),
                        const void *arg) {
    char from[1200], to[1200], *d = NULL;
    size_t n = 0;
    hc_err err = {0};
    snprintf(from, sizeof from, "%s/%s/config.json", fixture("quant"), cs);
    snprintf(to, sizeof to, "%s/config.json", dir);
    copy_file(from, to);
    snprintf(from, sizeof from, "%s/%s/model.safetensors", fixture("quant"), cs);
    if (hc__read_file(from, 1 << 28, &d, &n, &err) || n < 8) {
        free(d);
        return false;
    }
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)(unsigned char)d[i] << (8 * i);
    cJSON *h = hl <= n - 8 ? cJSON_ParseWithLength(d + 8, (size_t)hl) : NULL;
    bool ok = h != NULL;
    if (ok) {
        unsigned char *data = (unsigned char *)d + 8 + hl;
        edit(h, data, n - 8 - hl, arg);
        char *text = cJSON_PrintUnformatted(h);
        size_t tl = text ? strlen(text) : 0, pad = (8 - tl % 8) % 8;
        unsigned char len[8];
        for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)(tl + pad) >> (8 * i));
        snprintf(to, sizeof to, "%s/model.safetensors", dir);
        FILE *f = text ? fopen(to, "wb") : NULL;
        ok = f && fwrite(len, 1, 8, f) == 8 && fwrite(text, 1, tl, f) == tl &&
             fwrite("        ", 1, pad, f) == pad && fwrite(data, 1, n - 8 - hl, f) == n - 8 - hl;
        if (f) ok &= fclose(f) == 0;
        free(text);
    }
    cJSON_Delete(h);
    free(d);
    return ok;
}

/* The F32 weight_global_scale of ct_nvfp4's down_proj set to *(const float *)arg. */
static void set_global_scale(cJSON *h, unsigned char *data, size_t n, const void *arg) {
    const cJSON *off = cJSON_GetObjectItem(
        cJSON_GetObjectItem(h, "model.layers.0.mlp.down_proj.weight_global_scale"), "data_offsets");
    double b = cJSON_GetArrayItem(off, 0) ? cJSON_GetArrayItem(off, 0)->valuedouble : -1;
    if (b >= 0 && b + 4 <= (double)n) memcpy(data + (size_t)b, arg, 4);
    else CHECK_FAIL_("%s", "ct_nvfp4: no F32 down_proj.weight_global_scale");
}

/* The NVFP4 global divisor keeps the scale-sanity rule: the decoder refuses one that is not
 * finite and > 0, naming the tensor, and takes any other. */
static void test_nvfp4_global_scale_rule(void) {
    static const struct {
        float g;
        bool bad;
    } globals[] = {{2688, false}, {1e-40f, false}, {NAN, true}, {INFINITY, true},
                   {-INFINITY, true}, {-1, true}, {0, true}, {-0.0f, true}};
    const char *gname = "model.layers.0.mlp.down_proj.weight_global_scale";
    for (size_t i = 0; i < sizeof globals / sizeof globals[0]; i++) {
        const char *dir = test_tmpdir();
        CHECK(edited_copy("ct_nvfp4", dir, set_global_scale, &globals[i].g));
        hc_ckpt *ck = NULL;
        hc_model *md = NULL;
        hc_err err = {0};
        if (hc__ckpt_open(dir, &ck, &err) || hc__ckpt_map(ck, &err) ||
            hc__model_open(ck, &md, &err)) {
            CHECK_FAIL_("%s", err.msg);
        } else {
            const hc_module *m = hc__model_find(md, "model.layers.0.mlp.down_proj");
            hc_qtensor q;
            hc_findings f = {0};
            hc_status st = m ? hc__module_decode(md, m, HC_DECODE_NO_CODES, &q, &f, &err)
                             : HC_NOTFOUND;
            if (st == HC_OK) hc__qtensor_free(&q);
            bool refused = st == HC_INVALID && f.n == 1 && !strcmp(f.v[0].rule, "global scale") &&
                           !strcmp(f.v[0].tensor, gname) &&
                           strstr(f.v[0].message, "must be finite and > 0");
            if (globals[i].bad ? !refused : st != HC_OK)
                CHECK_FAIL_("global scale %g: decode %s with %zu findings", (double)globals[i].g,
                            hc_status_name(st), f.n);
            hc__findings_free(&f);
        }
        hc__model_free(md);
        hc__ckpt_close(ck);
    }
}

/* q_proj's tensors renamed "model.layers.0.self_attn.q\nproj.*". */
static void newline_names(cJSON *h, unsigned char *data, size_t n, const void *arg) {
    (void)data, (void)n, (void)arg;
    cJSON *t;
    cJSON_ArrayForEach(t, h) {
        const char *pre = "model.layers.0.self_attn.q_proj.";
        if (strncmp(t->string, pre, strlen(pre))) continue;
        char *name = hc__asprintf("model.layers.0.self_attn.q\nproj.%s", t->string + strlen(pre));
        if (!name) continue;
        free(t->string);
        t->string = name;
    }
}

/* ---- hc_dequant, the public API of `hconvert dequant`, against the generator's values ---- */

#define same_bits(a, b, n) (memcmp(a, b, (n) * sizeof(float)) == 0)

static void test_dequant_api(void) {
    char src[1024], npy[1200], msg[1024];
    uint64_t shape[HC_MAX_DIMS];
    int nd = 0;
    hc_dequant_result r;
    /* a module, no warnings */
    snprintf(src, sizeof src, "%s/gptq_3bit", fixture("quant"));
    snprintf(npy, sizeof npy, "%s/expected/model.layers.0.self_attn.q_proj.npy", src);
    float *want = load_npy(npy, shape, &nd);
    CHECK(want != NULL && nd == 2);
    CHECK_EQ_INT(hc_dequant(src, "model.layers.0.self_attn.q_proj", NULL, &r, msg, sizeof msg),
                 HC_OK);
    CHECK(r.ndim == 2 && r.shape[0] == shape[0] && r.shape[1] == shape[1] && !r.warnings &&
          !r.nwarnings);
    CHECK(want && r.values && same_bits(r.values, want, shape[0] * shape[1]));
    hc_dequant_free(&r);
    free(want);
    /* the decoder's warnings come back with the values */
    snprintf(src, sizeof src, "%s/bad_gptq_v1_says_v2_data", fixture("quant"));
    CHECK_EQ_INT(hc_dequant(src, "model.layers.0.self_attn.q_proj", NULL, &r, msg, sizeof msg),
                 HC_OK);
    CHECK_EQ_U64(r.nwarnings, 1);
    if (r.nwarnings == 1) CHECK_CONTAINS(r.warnings[0], "reading them as v2");
    hc_dequant_free(&r);
    /* a warning naming a tensor with a newline is one warning, the name whole */
    const char *dir = test_tmpdir();
    CHECK(edited_copy("bad_gptq_v1_says_v2_data", dir, newline_names, NULL));
    CHECK_EQ_INT(hc_dequant(dir, "model.layers.0.self_attn.q\nproj", NULL, &r, msg, sizeof msg),
                 HC_OK);
    CHECK_EQ_U64(r.nwarnings, 1);
    if (r.nwarnings == 1) {
        CHECK_CONTAINS(r.warnings[0], "tensor 'model.layers.0.self_attn.q\nproj.qzeros'");
        CHECK_CONTAINS(r.warnings[0], "reading them as v2");
    }
    hc_dequant_free(&r);
    /* a per-expert layer, stacked: experts 0 and 7 are the generator's */
    snprintf(src, sizeof src, "%s/ct_moe_qwen3", fixture("quant"));
    hc_dequant_opts o = {.max_extract_bytes = 1 << 20, .max_extract_ratio = 10};
    static const char *const proj[2] = {"gate_proj", "down_proj"};
    static const int expert[2] = {0, 7};
    for (int p = 0; p < 2; p++) {
        char name[128];
        snprintf(name, sizeof name, "model.layers.0.mlp.experts.%s", proj[p]);
        CHECK_EQ_INT(hc_dequant(src, name, &o, &r, msg, sizeof msg), HC_OK);
        snprintf(npy, sizeof npy, "%s/expected/model.layers.0.mlp.experts.%d.%s.npy", src,
                 expert[p], proj[p]);
        want = load_npy(npy, shape, &nd);
        CHECK(want && nd == 2 && r.ndim == 3 && r.shape[0] == 8);
        if (want && r.ndim == 3 && r.shape[1] == shape[0] && r.shape[2] == shape[1])
            CHECK(same_bits(r.values + (uint64_t)expert[p] * shape[0] * shape[1], want,
                            shape[0] * shape[1]));
        else
            CHECK_FAIL_("%s: shape [%llu, %llu, %llu]", name, (unsigned long long)r.shape[0],
                        (unsigned long long)r.shape[1], (unsigned long long)r.shape[2]);
        free(want);
        hc_dequant_free(&r);
    }
    /* refusals, each saying why */
    CHECK_EQ_INT(hc_dequant(src, "model.nope", NULL, &r, msg, sizeof msg), HC_NOTFOUND);
    CHECK_CONTAINS(msg, "module 'model.nope' is not in");
    CHECK(!r.values);
    hc_dequant_free(&r);
    snprintf(src, sizeof src, "%s/bad_gptq_marlin", fixture("quant"));
    CHECK_EQ_INT(hc_dequant(src, "model.layers.0.self_attn.q_proj", NULL, &r, msg, sizeof msg),
                 HC_UNSUPPORTED);
    CHECK_CONTAINS(msg, "marlin");
    hc_dequant_free(&r);
    snprintf(src, sizeof src, "%s/bad_moe_missing_expert", fixture("quant"));
    CHECK_EQ_INT(hc_dequant(src, "model.layers.0.mlp.experts.down_proj", NULL, &r, msg,
                            sizeof msg), HC_INVALID);
    CHECK_CONTAINS(msg, "expert 5 is missing");
    hc_dequant_free(&r);
}

void suite_quant(void) {
    RUN(test_element_decoders);
    RUN(test_every_format_fixture);
    RUN(test_hostile_configs_never_crash);
    RUN(test_scale_census);
    RUN(test_nvfp4_global_scale_rule);
    RUN(test_dequant_api);
}
