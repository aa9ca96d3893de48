/* t_run.c: the CPU executor (hconvert run) on containers converted from the fixtures, against
 * Y = X W^T computed in float64 by the fixture generator, within the error bound of float32
 * accumulation: |y - ref| <= (K + 2) 2^-24 sum_j |x_j w_j| (+ one rounding for the routing
 * weight). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "checkpoint.h"
#include "container_write.h"
#include "hconvert.h"
#include "tile_layer.h"
#include "npy.h"
#include "quant.h"
#include "test.h"
#include "gpu/tile_synth.h"


/* W of module name (expert e of a fused tensor, or the module itself) as float64 [N][K]. */
static double *weights_of(const hc_model *md, const char *name, uint64_t e, uint64_t *N,
                          uint64_t *K) {
    const hc_module *m = hc__model_find(md, name);
    hc_qtensor q;
    hc_findings f = {0};
    hc_err err = {0};
    if (!m || hc__module_decode(md, m, 0, &q, &f, &err)) {
        hc__findings_free(&f);
        return NULL;
    }
    hc__findings_free(&f);
    uint64_t n = q.kind == HC_Q_PLAIN && q.ndim == 2 ? q.plain_shape[0] : q.N;
    uint64_t k = q.kind == HC_Q_PLAIN && q.ndim == 2 ? q.plain_shape[1] : q.K;
    double *w = malloc(n * k * sizeof *w);
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < k; j++) w[i * k + j] = hc__qtensor_value(&q, e, i, j);
    hc__qtensor_free(&q);
    *N = n, *K = k;
    return w;
}

/* Compares one output row with its reference under the float32 summation bound. */
static uint64_t row_errors(const float *y, const float *ref, const float *x, const double *w,
                           uint64_t N, uint64_t K, double scale) {
    uint64_t bad = 0;
    for (uint64_t n = 0; n < N; n++) {
        double s = 0;
        for (uint64_t k = 0; k < K; k++) s += fabs((double)x[k] * w[n * K + k]);
        double bound = ((double)K + 3) * ldexp(1.0, -24) * s * fabs(scale) + 1e-30;
        if (!(fabs((double)y[n] - (double)ref[n]) <= bound)) bad++;
    }
    return bad;
}

static int gemms, moes;

static void run_case(const char *cas) {
    char dir[1024], path[1200], out[1024];
    snprintf(dir, sizeof dir, "%s/%s", fixture("quant"), cas);
    snprintf(path, sizeof path, "%s/run/index.json", dir);
    cJSON *idx = test_load_json(path);
    if (!idx) return;
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    hc_converter *cv = hc_converter_create();
    CHECK_EQ_INT(hc_converter_run(cv, dir, out), HC_OK);
    hc_converter_free(cv);
    char cfile[1200];
    snprintf(cfile, sizeof cfile, "%s/model.hconvert", out);
    hc_container *c = NULL;
    char msg[1024];
    hc_ckpt *ck = NULL;
    hc_model *md = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc_container_open(cfile, 1, &c, msg, sizeof msg), HC_OK);
    if (hc__ckpt_open(out, &ck, &err) || hc__ckpt_map(ck, &err) || hc__model_open(ck, &md, &err))
        CHECK_FAIL_("%s: %s", cas, err.msg);
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(idx, "gemm")) {
        if (!c || !md) break;
        const char *name = cJSON_GetObjectItem(g, "name")->valuestring;
        uint64_t xs[2], ys[2], N, K;
        float *x = NULL, *ref = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, cJSON_GetObjectItem(g, "x")->valuestring);
        CHECK_EQ_INT(hc__npy_read_2d(path, HC_NPY_F32, xs, (void **)&x, &err), HC_OK);
        snprintf(path, sizeof path, "%s/%s", dir, cJSON_GetObjectItem(g, "y")->valuestring);
        CHECK_EQ_INT(hc__npy_read_2d(path, HC_NPY_F32, ys, (void **)&ref, &err), HC_OK);
        double *w = weights_of(md, name, 0, &N, &K);
        CHECK(w != NULL);
        if (x && ref && w && ys[1] == N && xs[1] == K) {
            float *y = malloc(xs[0] * N * sizeof *y);
            if (hc_cpu_linear(c, name, 0, x, xs[0], K, y, N, msg, sizeof msg)) {
                CHECK_FAIL_("%s: %s: %s", cas, name, msg);
            } else {
                uint64_t bad = 0;
                for (uint64_t i = 0; i < xs[0]; i++)
                    bad += row_errors(y + i * N, ref + i * N, x + i * K, w, N, K, 1.0);
                if (bad) CHECK_FAIL_("%s: %s: %llu outputs beyond the bound", cas, name,
                                     (unsigned long long)bad);
                gemms++;
            }
            free(y);
        } else {
            CHECK_FAIL_("%s: %s: shapes disagree", cas, name);
        }
        free(x), free(ref), free(w);
    }
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(idx, "moe")) {
        if (!c || !md) break;
        const char *name = cJSON_GetObjectItem(g, "name")->valuestring;
        uint64_t xs[2], is[2], ws[2], ys[2], N = 0;
        float *x = NULL, *wt = NULL, *ref = NULL, *y = NULL;
        int32_t *ids = NULL;
        const char *keys[4] = {"x", "ids", "weights", "y"};
        void **bufs[4] = {(void **)&x, (void **)&ids, (void **)&wt, (void **)&ref};
        uint64_t *shapes[4] = {xs, is, ws, ys};
        for (int i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, cJSON_GetObjectItem(g, keys[i])->valuestring);
            CHECK_EQ_INT(hc__npy_read_2d(path, i == 1 ? HC_NPY_I32 : HC_NPY_F32, shapes[i], bufs[i],
                                        &err), HC_OK);
        }
        if (x && ids && wt && ref &&
            hc_cpu_moe(c, name, x, xs[0], xs[1], ids, wt, is[1], &y, &N, msg, sizeof msg) == HC_OK) {
            CHECK_EQ_U64(N, ys[1]);
            uint64_t bad = 0;
            for (uint64_t i = 0; i < xs[0] * is[1] && N == ys[1]; i++) {
                uint64_t wn, wk;
                double *w = NULL;
                const hc_module *fused = hc__model_find(md, name);
                if (fused) {
                    w = weights_of(md, name, (uint64_t)ids[i], &wn, &wk);
                } else {
                    const char *p = strstr(name, ".experts.");
                    char en[600];
                    snprintf(en, sizeof en, "%.*s.experts.%d.%s", (int)(p - name), name, ids[i], p + 9);
                    w = weights_of(md, en, 0, &wn, &wk);
                }
                CHECK(w != NULL);
                if (w) bad += row_errors(y + i * N, ref + i * N, x + (i / is[1]) * xs[1], w, N,
                                         xs[1], wt[i] * (1 + ldexp(1.0, -22)));
                free(w);
            }
            if (bad) CHECK_FAIL_("%s: %s: %llu routed outputs beyond the bound", cas, name,
                                 (unsigned long long)bad);
            moes++;
        } else {
            CHECK_FAIL_("%s: %s: %s", cas, name, msg);
        }
        free(x), free(ids), free(wt), free(ref), free(y);
    }
    hc__model_free(md);
    hc__ckpt_close(ck);
    hc_container_free(c);
    cJSON_Delete(idx);
}

static void test_cpu_executor_matches_float64(void) {
    char *list = NULL;
    char **all = fixture_cases(&list);
    for (char **cp = all; *cp; cp++) run_case(*cp);
    free(all);
    free(list);
    printf("     (%d dense GEMMs and %d routed MoE GEMMs within the float32 bound)\n", gemms, moes);
    CHECK(gemms >= 40);
    CHECK(moes >= 3);
}

/* A container with one act-order int4 tiled layer "w" [64, 64] and its permutation "w.perm"
 * (when perm is not NULL); returns the open container or NULL. */
static hc_container *perm_container(const char *file, const int32_t *perm, uint8_t *tiles,
                                    hc_tile_params *p) {
    *p = (hc_tile_params){.kind = HC_TL_INT, .code_bits = 4, .src_bits = 4, .E = 1, .N = 64,
                          .K = 64, .Np = 64, .Kp = 64, .g = 64, .scale_dtype = HC_DT_F32,
                          .zero_const = 8, .perm = true};
    if (!hc__tile_geometry(p) || hc__tile_bytes_of(p) > 4096) return NULL;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < p->code_bytes; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        tiles[i] = (uint8_t)s;
    }
    for (uint64_t r = 0; r < 64; r++) { /* scales 2^-(r % 5) */
        float f = ldexpf(1.0f, -(int)(r % 5));
        memcpy(tiles + p->code_bytes + 4 * r, &f, 4);
    }
    cJSON *lp = hc__tile_params_json(p);
    hc_cw_tensor t[2] = {
        {.name = "w", .dtype = HC_DT_U8, .ndim = 4, .shape = {1, 1, 1, p->chunk_bytes},
         .padded_shape = {1, 1, 1, p->chunk_bytes}, .layout = HC_LAYOUT_INT,
         .layout_version = hc__tile_layout_version(p), .data = tiles, .size = p->chunk_bytes,
         .layout_params = lp},
        {.name = "w.perm", .dtype = HC_DT_I32, .ndim = 1, .shape = {64}, .padded_shape = {64},
         .layout = "source", .layout_version = 1, .data = perm, .size = 256},
    };
    hc_cw_options o = {.source_format = "test", .target = "tiles", .tp_size = 1};
    char path[600], msg[1024] = "";
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), file);
    hc_err err = {0};
    hc_container *c = NULL;
    if (hc__container_write(path, t, perm ? 2 : 1, &o, &err) ||
        hc_container_open(path, 1, &c, msg, sizeof msg))
        CHECK_FAIL_("%s: %s%s", file, err.msg, msg);
    cJSON_Delete(lp);
    return c;
}

/* Act-order: the executor gathers X through NAME.perm; a permutation that is missing or holds
 * a column outside [0, K) is refused with the tensor named, not read out of bounds. */
static void test_act_order_permutation(void) {
    int32_t perm[64];
    for (int i = 0; i < 64; i++) perm[i] = (i * 37 + 5) % 64; /* 37 is odd: a permutation */
    static uint8_t tiles[4096];
    hc_tile_params p;
    float x[64], y[64];
    for (int i = 0; i < 64; i++) x[i] = (float)((i * 13) % 17) - 8.0f;
    char msg[1024] = "";
    hc_container *c = perm_container("perm_ok.hconvert", perm, tiles, &p);
    if (c) {
        CHECK_EQ_INT(hc_cpu_linear(c, "w", 0, x, 1, 64, y, 64, msg, sizeof msg), HC_OK);
        uint64_t bad = 0;
        for (unsigned n = 0; n < 64; n++) { /* stored column kp holds source column perm[kp] */
            double ref = 0, mag = 0;
            for (unsigned kp = 0; kp < 64; kp++) {
                double w = hc__tile_value(&p, tiles, n, kp);
                ref += w * x[perm[kp]], mag += fabs(w * x[perm[kp]]);
            }
            if (fabs(y[n] - ref) > 66 * ldexp(mag, -24)) bad++;
        }
        CHECK_EQ_U64(bad, 0);
        hc_container_free(c);
    }
    perm[17] = 64;
    c = perm_container("perm_range.hconvert", perm, tiles, &p);
    if (c) {
        CHECK_EQ_INT(hc_cpu_linear(c, "w", 0, x, 1, 64, y, 64, msg, sizeof msg), HC_INVALID);
        CHECK_CONTAINS(msg, "'w.perm': entry 17 out of range");
        hc_container_free(c);
    }
    c = perm_container("perm_missing.hconvert", NULL, tiles, &p);
    if (c) {
        CHECK_EQ_INT(hc_cpu_linear(c, "w", 0, x, 1, 64, y, 64, msg, sizeof msg), HC_INVALID);
        CHECK_CONTAINS(msg, "act-order permutation 'w.perm' missing");
        hc_container_free(c);
    }
}

/* The synthetic layers of the GPU tests and benchmarks (tests/gpu/tile_synth.h): the weights
 * read back through the layout (hc__tile_value, the GPU tests' float64 reference) equal, bit for
 * bit, the values the generator computed from the codes and scales it drew; the CPU executor is
 * within the float32 bound of them. Every layout kind the GPU kernels take, two shapes (one
 * with two experts, padding and an act-order permutation). */
static void test_synthetic_layers(void) {
    static const struct {
        uint64_t n, k, e;
        bool perm;
    } shapes[] = {{128, 192, 1, false}, {70, 70, 2, true}};
    char path[700], msg[1024];
    snprintf(path, sizeof path, "%s/synth.hconvert", test_tmpdir());
    int layers = 0;
    for (size_t si = 0; si < SYNTH_SPECS; si++)
        for (int h = 0; h < 2; h++) {
            const synth_spec *sp = &synth_specs[si];
            uint64_t N = shapes[h].n, K = shapes[h].k, E = shapes[h].e;
            double *ref = malloc(E * N * K * sizeof *ref);
            hc_container *c = NULL;
            if (synth_container(path, sp, E, N, K, shapes[h].perm, 11 + si, ref, msg, sizeof msg) ||
                hc_container_open(path, 1, &c, msg, sizeof msg)) {
                CHECK_FAIL_("%s: %s", sp->label, msg);
                free(ref);
                continue;
            }
            const hc_tensor_info *t;
            hc_tile_params p;
            const int32_t *perm;
            hc_err err = {0};
            CHECK_EQ_INT(hc__tile_layer(c, "w", &t, &p, &perm, &err), HC_OK);
            const uint8_t *wb = hc_container_stored(c, t);
            uint64_t differ = 0, bad = 0;
            float *x = malloc(3 * K * sizeof *x), *y = malloc(3 * N * sizeof *y);
            for (uint64_t i = 0; i < 3 * K; i++) x[i] = (float)sin((double)i * 0.7 + (double)si);
            for (uint64_t e = 0; e < E; e++) {
                for (uint64_t r = 0; r < N; r++)
                    for (uint64_t q = 0; q < K; q++) {
                        double v = hc__tile_value(&p, wb + hc__tile_offset(&p, e, r / 64, q / 64),
                                                 (unsigned)(r % 64), (unsigned)(q % 64));
                        uint64_t col = perm ? (uint64_t)perm[q] : q;
                        differ += memcmp(&v, &ref[(e * N + r) * K + col], sizeof v) != 0;
                    }
                if (hc_cpu_linear(c, "w", (uint32_t)e, x, 3, K, y, N, msg, sizeof msg)) {
                    CHECK_FAIL_("%s: cpu: %s", sp->label, msg);
                    continue;
                }
                for (uint64_t i = 0; i < 3 * N; i++) {
                    const double *wr = ref + (e * N + i % N) * K;
                    double sum = 0, mag = 0;
                    for (uint64_t q = 0; q < K; q++)
                        sum += wr[q] * x[(i / N) * K + q], mag += fabs(wr[q] * x[(i / N) * K + q]);
                    bad += !(fabs(y[i] - sum) <= ((double)K + 3) * ldexp(mag, -24) + 1e-300);
                }
            }
            if (differ || bad)
                CHECK_FAIL_("%s N=%llu K=%llu: %llu weights differ from the generator's, %llu "
                            "outputs beyond the float32 bound", sp->label,
                            (unsigned long long)N, (unsigned long long)K,
                            (unsigned long long)differ, (unsigned long long)bad);
            layers += !differ && !bad;
            free(x), free(y), free(ref);
            hc_container_free(c);
        }
    printf("     (%d synthetic layers of %d kinds read back exactly)\n", layers, (int)SYNTH_SPECS);
    CHECK_EQ_INT(layers, 2 * (int)SYNTH_SPECS);
}

void suite_run(void) {
    RUN(test_cpu_executor_matches_float64);
    RUN(test_act_order_permutation);
    RUN(test_synthetic_layers);
}
