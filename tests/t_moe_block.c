/* t_moe_block.c: hc_cpu_moe_block, the CPU executor's whole MoE block, against a float64
 * reference computed here from the SOURCE checkpoint: weights through the public hc_dequant,
 * biases read from the source safetensors (bf16 widened here), and the block's formula written
 * from the model code (Qwen2/3-MoE: silu(gate) * up, shared expert scaled by sigmoid of its
 * gate; gpt-oss: gate_up interleaved, biases, gate clamped to <= 7, up to [-7, 7],
 * (up + 1) * gate * sigmoid(1.702 gate)). Skewed and uniform routing, an expert that gets no
 * token, ids -1 and E (contribute nothing), and hostile ids/weights that must not crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hconvert.h"
#include "hcrt.h"
#include "safetensors.h"
#include "test.h"

#define LAYER "model.layers.0.mlp"
#define T 6
#define K 2

typedef struct {
    const char *fx;
    bool fused, shared, gate_scaled;
    double alpha, limit; /* limit 0: SiLU */
} mcase;

static const mcase cases[] = {
    {"quant/ct_moe_qwen3", false, false, false, 0, 0},
    {"quant/ct_moe_qwen2_shared", false, true, true, 0, 0},
    {"quant/gptoss_mxfp4", true, false, false, 1.702, 7.0},
};

static hc_container *convert_open(const char *fx) {
    static unsigned seq;
    char out[1200], src[600];
    snprintf(out, sizeof out, "%s/moeblock%u", test_tmpdir(), seq++);
    snprintf(src, sizeof src, "%s", fixture(fx));
    hc_converter *cv = hc_converter_create();
    hc_converter_set(cv, HC_CONV_THREADS, 2);
    if (hc_converter_run(cv, src, out)) CHECK_FAIL_("%s: %s", fx, hc_converter_errmsg(cv));
    hc_converter_free(cv);
    size_t l = strlen(out);
    snprintf(out + l, sizeof out - l, "/%s", HC_CONTAINER_FILE);
    hc_container *c = NULL;
    char msg[1024] = "";
    if (hc_container_open(out, 1, &c, msg, sizeof msg)) CHECK_FAIL_("%s: %s", out, msg);
    return c;
}

/* Module NAME of the source checkpoint dequantized (NULL, and a failed check, when it is not). */
static float *deq(const char *fx, const char *name, uint64_t *shape, int ndim) {
    hc_dequant_result r = {0};
    char msg[1024] = "", src[600];
    snprintf(src, sizeof src, "%s", fixture(fx));
    if (hc_dequant(src, name, NULL, &r, msg, sizeof msg) || r.ndim != ndim) {
        CHECK_FAIL_("dequant %s %s: %s (ndim %d)", fx, name, msg, r.ndim);
        hc_dequant_free(&r);
        return NULL;
    }
    float *v = r.values;
    memcpy(shape, r.shape, sizeof r.shape[0] * (size_t)ndim);
    r.values = NULL;
    hc_dequant_free(&r);
    return v;
}

/* A bf16 source tensor widened to float64 (its element count in *n). */
static double *source_bf16(const char *fx, const char *name, uint64_t *n) {
    char p[700];
    snprintf(p, sizeof p, "%s/model.safetensors", fixture(fx));
    hc_st_file *f = NULL;
    hc_err err = {0};
    double *v = NULL;
    if (hc__st_open(p, &f, &err) || hc__st_map(f, &err)) {
        CHECK_FAIL_("%s: %s", p, err.msg);
        hc__st_close(f);
        return NULL;
    }
    for (size_t i = 0; i < f->ntensors; i++) {
        const hc_st_tensor *t = &f->tensors[i];
        if (strcmp(t->name, name) || t->dtype != HC_DT_BF16) continue;
        const unsigned char *b = hc__st_data(f, t);
        v = malloc(t->numel * sizeof *v + 1);
        for (uint64_t j = 0; v && j < t->numel; j++) {
            uint32_t bits = (uint32_t)(b[2 * j] | b[2 * j + 1] << 8) << 16;
            float x;
            memcpy(&x, &bits, sizeof x);
            v[j] = x;
        }
        *n = t->numel;
    }
    hc__st_close(f);
    if (!v) CHECK_FAIL_("%s: no bf16 tensor '%s'", p, name);
    return v;
}

static double sig(double v) { return 1.0 / (1.0 + exp(-v)); }

/* The reference weights of one fixture. */
typedef struct {
    uint64_t E, H, I, Is;
    float *gate, *up, *gate_up, *down, *sg, *su, *sd, *sgate; /* [E, I, H].. as dequantized */
    double *bgu, *bd;
    int clamped; /* activations the clamp changed, to show the case exercises it */
} ref;

static bool load_ref(const mcase *mc, ref *r) {
    memset(r, 0, sizeof *r);
    uint64_t s[3], s2[3], n;
    if (mc->fused) {
        r->gate_up = deq(mc->fx, LAYER ".experts.gate_up_proj", s, 3);
        if (!r->gate_up) return false;
        r->E = s[0], r->I = s[1] / 2, r->H = s[2];
        r->bgu = source_bf16(mc->fx, LAYER ".experts.gate_up_proj_bias", &n);
        if (!r->bgu || n != r->E * 2 * r->I) return false;
        r->bd = source_bf16(mc->fx, LAYER ".experts.down_proj_bias", &n);
        if (!r->bd || n != r->E * r->H) return false;
    } else {
        r->gate = deq(mc->fx, LAYER ".experts.gate_proj", s, 3);
        r->up = deq(mc->fx, LAYER ".experts.up_proj", s2, 3);
        if (!r->gate || !r->up) return false;
        r->E = s[0], r->I = s[1], r->H = s[2];
    }
    r->down = deq(mc->fx, LAYER ".experts.down_proj", s, 3);
    if (!r->down || s[0] != r->E || s[1] != r->H || s[2] != r->I) return false;
    if (mc->shared) {
        r->sg = deq(mc->fx, LAYER ".shared_expert.gate_proj", s, 2);
        r->su = deq(mc->fx, LAYER ".shared_expert.up_proj", s2, 2);
        r->sd = deq(mc->fx, LAYER ".shared_expert.down_proj", s2, 2);
        if (!r->sg || !r->su || !r->sd) return false;
        r->Is = s[0];
    }
    if (mc->gate_scaled) {
        r->sgate = deq(mc->fx, LAYER ".shared_expert_gate", s, 2);
        if (!r->sgate || s[0] != 1 || s[1] != r->H) return false;
    }
    return true;
}

static void free_ref(ref *r) {
    free(r->gate), free(r->up), free(r->gate_up), free(r->down), free(r->sg), free(r->su);
    free(r->sd), free(r->sgate), free(r->bgu), free(r->bd);
}

static double dot(const float *w, const double *x, uint64_t n) {
    double a = 0;
    for (uint64_t i = 0; i < n; i++) a += (double)w[i] * x[i];
    return a;
}

/* y[H] += scale * down(act(gate x, up x)) of one expert (or the shared one: e < 0). */
static void ref_expert(const mcase *mc, ref *r, int64_t e, const double *x, double scale,
                       double *y) {
    uint64_t H = r->H, I = e < 0 ? r->Is : r->I;
    double *act = calloc(I + 1, sizeof *act);
    for (uint64_t j = 0; j < I; j++) {
        double g, u;
        if (e < 0) {
            g = dot(r->sg + j * H, x, H), u = dot(r->su + j * H, x, H);
        } else if (mc->fused) { /* interleaved: row 2j gate j, 2j+1 up j */
            const float *w = r->gate_up + (uint64_t)e * 2 * I * H;
            g = dot(w + 2 * j * H, x, H) + r->bgu[(uint64_t)e * 2 * I + 2 * j];
            u = dot(w + (2 * j + 1) * H, x, H) + r->bgu[(uint64_t)e * 2 * I + 2 * j + 1];
        } else {
            g = dot(r->gate + ((uint64_t)e * I + j) * H, x, H);
            u = dot(r->up + ((uint64_t)e * I + j) * H, x, H);
        }
        if (mc->limit > 0 && e >= 0) {
            r->clamped += g > mc->limit || fabs(u) > mc->limit;
            g = fmin(g, mc->limit), u = fmax(-mc->limit, fmin(u, mc->limit));
            act[j] = (u + 1) * g * sig(mc->alpha * g);
        } else {
            act[j] = g * sig(g) * u;
        }
    }
    for (uint64_t d = 0; d < H; d++) {
        const float *w = e < 0 ? r->sd + d * I : r->down + ((uint64_t)e * H + d) * I;
        double v = 0;
        for (uint64_t j = 0; j < I; j++) v += (double)w[j] * act[j];
        if (e >= 0 && r->bd) v += r->bd[(uint64_t)e * H + d];
        y[d] += scale * v;
    }
    free(act);
}

static void check_block(hc_container *c, const mcase *mc, ref *r, const float *x,
                        const int32_t *ids, const float *w, const char *what) {
    uint64_t H = r->H;
    float *y = malloc(T * H * sizeof *y);
    double *xd = malloc(H * sizeof *xd), *yr = calloc(T * H, sizeof *yr);
    char msg[1024] = "";
    hc_status st = hc_cpu_moe_block(c, LAYER, x, T, H, ids, w, K, y, msg, sizeof msg);
    if (st) CHECK_FAIL_("%s, %s routing: %s", mc->fx, what, msg);
    for (uint64_t t = 0; !st && t < T; t++) {
        for (uint64_t d = 0; d < H; d++) xd[d] = x[t * H + d];
        for (uint64_t j = 0; j < K; j++)
            if (ids[t * K + j] >= 0 && (uint64_t)ids[t * K + j] < r->E)
                ref_expert(mc, r, ids[t * K + j], xd, w[t * K + j], yr + t * H);
        if (mc->shared)
            ref_expert(mc, r, -1, xd, mc->gate_scaled ? sig(dot(r->sgate, xd, H)) : 1.0,
                       yr + t * H);
        double abs_sum = 0, worst = 0;
        for (uint64_t d = 0; d < H; d++) abs_sum += fabs(yr[t * H + d]);
        for (uint64_t d = 0; d < H; d++) worst = fmax(worst, fabs(y[t * H + d] - yr[t * H + d]));
        CHECK(abs_sum > 0 || (mc->shared == false && ids[t * K] < 0 && ids[t * K + 1] < 0));
        if (!(worst <= 1e-4 * abs_sum))
            CHECK_FAIL_("%s, %s routing, token %llu: |y - ref| %.3g above 1e-4 of the row's abs "
                        "sum %.3g", mc->fx, what, (unsigned long long)t, worst, abs_sum);
    }
    free(y), free(xd), free(yr);
}

static void test_block_vs_reference(void) {
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const mcase *mc = &cases[k];
        ref r;
        hc_container *c = convert_open(mc->fx);
        if (!c) continue;
        if (!load_ref(mc, &r) || r.E < 4) {
            CHECK_FAIL_("%s: reference weights (E %llu)", mc->fx, (unsigned long long)r.E);
            free_ref(&r);
            hc_container_free(c);
            continue;
        }
        int32_t E = (int32_t)r.E;
        float *x = malloc(T * r.H * sizeof *x);
        /* skewed: experts 0 and 1 take nearly everything, E-1 nothing, an id -1 and one E */
        int32_t skew[T * K] = {0, 1, 0, 1, 1, 0, 0, -1, 0, 1, E, 1};
        float skw[T * K] = {0.75f, 0.25f, 0.5f, 0.5f, 0.9f, 0.1f,
                            1.0f,  0.3f,  0.6f, 0.4f, 2.0f, 0.2f};
        int32_t uni[T * K];
        float uw[T * K];
        for (int t = 0; t < T; t++)
            for (int j = 0; j < K; j++)
                uni[t * K + j] = (t * K + j) % E, uw[t * K + j] = j ? 0.375f : 0.625f;
        /* amplitude 1; gpt-oss's large weights also at 1/64, where its biases weigh against
         * the products, and at 16, where its clamp acts (gate/up values beyond 7) */
        static const double amps[] = {1.0, 1.0 / 64, 16.0};
        for (size_t a = 0; a < (mc->limit > 0 ? 3u : 1u); a++) {
            double amp = amps[a];
            for (uint64_t i = 0; i < T * r.H; i++)
                x[i] = (float)(amp * sin(0.37 * (double)i + 0.11 * (double)k));
            const char *sc = amp > 1 ? ", X x16" : amp < 1 ? ", X / 64" : "";
            char what[64];
            snprintf(what, sizeof what, "skewed%s", sc);
            check_block(c, mc, &r, x, skew, skw, what);
            snprintf(what, sizeof what, "uniform%s", sc);
            check_block(c, mc, &r, x, uni, uw, what);
        }
        if (mc->limit > 0) CHECK(r.clamped > 0);
        free(x);
        free_ref(&r);
        hc_container_free(c);
    }
}

static void test_block_refusals(void) {
    hc_container *c = convert_open("quant/ct_moe_qwen3");
    if (!c) return;
    uint64_t n, k, E;
    CHECK_EQ_INT(hc_linear_shape(c, LAYER ".experts.0.gate_proj", &n, &k, &E, NULL, 0), HC_OK);
    float *x = calloc(T * (k + 1), sizeof *x), *y = malloc(T * (k + 1) * sizeof *y);
    for (uint64_t i = 0; i < T * k; i++) x[i] = (float)(i % 7) - 3.0f;
    char msg[1024] = "";
    int32_t ids[T * K] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    float w[T * K] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_EQ_INT(hc_cpu_moe_block(c, "model.layers.0.nope", x, T, k, ids, w, K, y, msg,
                                  sizeof msg), HC_NOTFOUND);
    CHECK_CONTAINS(msg, "model.layers.0.nope");
    CHECK_EQ_INT(hc_cpu_moe_block(c, LAYER, x, T, k + 1, ids, w, K, y, msg, sizeof msg),
                 HC_INVALID);
    CHECK_CONTAINS(msg, LAYER);
    /* hostile ids and weights: no crash, out-of-range ids ignored, NaN propagates */
    int32_t bad[T * K] = {INT32_MIN, INT32_MAX, -1, 4, 1 << 30, 0, 3, 3, 3, 3, -7, 2};
    float bw[T * K] = {NAN, INFINITY, -1e30f, 0, 0, NAN, 1, 1, 1, 1, 1, 0};
    CHECK_EQ_INT(hc_cpu_moe_block(c, LAYER, x, T, k, bad, bw, K, y, msg, sizeof msg), HC_OK);
    for (uint64_t d = 0; d < k; d++) CHECK(y[d] == 0.0f); /* token 0: both ids out of range */
    CHECK(isnan(y[2 * k])); /* token 2: slot 1 (expert 0) weighted by NaN */
    CHECK_EQ_INT(hc_cpu_moe_block(c, LAYER, x, 0, k, ids, w, K, y, msg, sizeof msg), HC_OK);
    free(x), free(y);
    hc_container_free(c);
}

void suite_moeblock(void) {
    hc_test_run("moe block against a float64 reference", test_block_vs_reference);
    hc_test_run("moe block refusals and hostile routing", test_block_refusals);
}
