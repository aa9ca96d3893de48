/* t_tp.c: tensor-parallel conversion: every rank's container dequantizes to exactly its slice
 * of the source module (rows for column-parallel layers, columns for row-parallel ones, all of
 * it for the rest), including cuts inside scale groups (640 columns in 8 ranks, group 128) and
 * inside MXFP4 groups. */
#include <stdlib.h>

#include "checkpoint.h"
#include "families.h"
#include "hconvert.h"
#include "quant.h"
#include "shard.h"
#include "test.h"

static double *values(const hc_model *md, const char *name, hc_qtensor *q) {
    const hc_module *m = hc__model_find(md, name);
    hc_findings f = {0};
    hc_err err = {0};
    if (!m || hc__module_decode(md, m, 0, q, &f, &err)) {
        hc__findings_free(&f);
        return NULL;
    }
    hc__findings_free(&f);
    uint64_t n = hc__qtensor_numel(q);
    double *v = malloc(n * sizeof *v + 8);
    if (q->kind == HC_Q_PLAIN) {
        memcpy(v, q->plain, n * sizeof *v);
    } else {
        for (uint64_t e = 0; e < q->E; e++)
            for (uint64_t i = 0; i < q->N; i++)
                for (uint64_t k = 0; k < q->K; k++)
                    v[(e * q->N + i) * q->K + k] = hc__qtensor_value(q, e, i, k);
    }
    return v;
}

static int checked_slices;

/* cas: a case of tests/fixtures/quant, or a folder path */
static void check_tp(const char *cas, unsigned tp) {
    char src[1024], out[1024];
    if (strchr(cas, '/')) snprintf(src, sizeof src, "%s", cas);
    else snprintf(src, sizeof src, "%s/%s", fixture("quant"), cas);
    snprintf(out, sizeof out, "%s/tp", test_tmpdir());
    hc_converter *cv = hc_converter_create();
    CHECK_EQ_INT(hc_converter_set(cv, HC_CONV_TP_SIZE, tp), HC_OK);
    if (hc_converter_run(cv, src, out)) CHECK_FAIL_("%s tp %u: %s", cas, tp, hc_converter_errmsg(cv));
    hc_converter_free(cv);
    hc_ckpt *sck = NULL;
    hc_model *smd = NULL;
    hc_err err = {0};
    if (hc__ckpt_open(src, &sck, &err) || hc__ckpt_map(sck, &err) || hc__model_open(sck, &smd, &err)) {
        CHECK_FAIL_("%s: %s", cas, err.msg);
        return;
    }
    for (unsigned r = 0; r < tp; r++) {
        char rd[1200];
        snprintf(rd, sizeof rd, "%s/rank%u", out, r);
        hc_ckpt *ck = NULL;
        hc_model *md = NULL;
        if (hc__ckpt_open(rd, &ck, &err) || hc__ckpt_map(ck, &err) || hc__model_open(ck, &md, &err)) {
            CHECK_FAIL_("%s rank %u: %s", cas, r, err.msg);
            hc__ckpt_close(ck);
            continue;
        }
        for (size_t i = 0; i < smd->n; i++) {
            const hc_module *m = &smd->m[i];
            if (!m->t[HC_ROLE_WEIGHT] || (m->scheme.fmt == HC_FMT_PLAIN && m->t[HC_ROLE_WEIGHT]->t->ndim != 2))
                continue;
            hc_qtensor qs, qr;
            double *full = values(smd, m->name, &qs), *part = values(md, m->name, &qr);
            char role = hc__tp_role(m->name);
            uint64_t E = qs.E, N = qs.kind == HC_Q_PLAIN ? qs.plain_shape[0] : qs.N;
            uint64_t K = qs.kind == HC_Q_PLAIN ? qs.plain_shape[1] : qs.K;
            uint64_t n0 = 0, n1 = N, k0 = 0, k1 = K;
            if (role == 'c') hc__shard_range(N, tp, r, &n0, &n1);
            if (role == 'r') hc__shard_range(K, tp, r, &k0, &k1);
            if (!full || !part) {
                CHECK_FAIL_("%s rank %u: '%s' missing", cas, r, m->name);
            } else if (hc__qtensor_numel(&qr) != E * (n1 - n0) * (k1 - k0)) {
                CHECK_FAIL_("%s rank %u: '%s' has %llu values, its slice %llu", cas, r, m->name,
                            (unsigned long long)hc__qtensor_numel(&qr),
                            (unsigned long long)(E * (n1 - n0) * (k1 - k0)));
            } else {
                uint64_t bad = 0, W = k1 - k0, H = n1 - n0;
                for (uint64_t e = 0; e < E; e++)
                    for (uint64_t n = 0; n < H; n++)
                        for (uint64_t k = 0; k < W; k++)
                            bad += part[(e * H + n) * W + k] !=
                                   full[(e * N + n0 + n) * K + k0 + k];
                if (bad) CHECK_FAIL_("%s rank %u: '%s': %llu values differ from the slice", cas,
                                     r, m->name, (unsigned long long)bad);
                checked_slices++;
            }
            free(full), free(part);
            hc__qtensor_free(&qs), hc__qtensor_free(&qr);
        }
        hc__model_free(md);
        hc__ckpt_close(ck);
    }
    hc__model_free(smd);
    hc__ckpt_close(sck);
}

static void test_tp_shards_are_exact_slices(void) {
    check_tp("moe_640_tp8", 8); /* 640-wide experts: 80 columns per rank, group 128 -> 16 */
    check_tp("moe_640_tp8", 3); /* uneven: ranks of 214, 214, 212 */
    check_tp("gptoss_mxfp4", 4); /* fused experts; MXFP4 groups of 32 cut to 16 */
    check_tp("ct_nvfp4", 2);
    check_tp("deepseek_fp8", 2); /* 128 x 128 blocks cut on both sides */
    check_tp("gptq_desc_act", 2); /* act-order on column-parallel layers */
    printf("     (%d rank slices identical to the source)\n", checked_slices);
    CHECK(checked_slices >= 80);
}

/* A copy of an act-order fixture whose q_proj is renamed o_proj (same length, so the
 * safetensors header stays valid): a row-parallel act-order layer. */
static const char *actorder_row_parallel(const char *cas) {
    static char dir[4][600];
    static int k;
    char *d = dir[k++ % 4];
    snprintf(d, sizeof dir[0], "%s/%s_o_proj", test_tmpdir(), cas);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/%s/config.json' '%s/' && "
             "sed 's/self_attn\\.q_proj/self_attn.o_proj/g' '%s/%s/model.safetensors' > "
             "'%s/model.safetensors'", d, fixture("quant"), cas, d, fixture("quant"), cas, d);
    CHECK_EQ_INT(system(cmd), 0);
    return d;
}

/* Row-parallel act-order cuts keep an arbitrary subset of each group's columns: every rank
 * still dequantizes to exactly its slice (before: "act-order groups are not all of 32
 * columns"), for GPTQ desc_act and compressed-tensors actorder=group. */
static void test_tp_actorder_row_parallel(void) {
    static const char *const cases[] = {"gptq_desc_act", "ct_w4_actorder"};
    int before = checked_slices;
    for (size_t c = 0; c < 2; c++) {
        const char *src = actorder_row_parallel(cases[c]);
        for (unsigned tp = 2; tp <= 8; tp *= 2) check_tp(src, tp);
        check_tp(src, 3); /* uneven: 43, 43, 42 columns */
    }
    CHECK_EQ_INT(checked_slices - before, 2 * 3 * (2 + 4 + 8 + 3)); /* 2 cases, 3 modules */
}

/* The act-order shard rule by hand: group g keeps c_g columns of the rank's part; the new
 * group is gcd(c_g), and validate's plan reports the smallest over the ranks. */
static void test_tp_actorder_group_rule(void) {
    static const struct {
        int32_t g[8];
        unsigned tp;
        uint64_t want[4]; /* per rank */
        uint64_t regroup; /* validate: 0 when every rank keeps whole groups' multiples */
    } cases[] = {
        {{0, 1, 1, 0, 0, 1, 0, 1}, 2, {2, 2}, 2},       /* each rank: two of each group */
        {{0, 0, 0, 1, 1, 1, 0, 1}, 2, {1, 1}, 1},       /* 3 + 1 and 1 + 3 */
        {{0, 0, 0, 0, 1, 1, 1, 1}, 2, {4, 4}, 0},       /* whole groups: nothing to regroup */
        {{1, 0, 1, 0, 1, 0, 1, 0}, 4, {1, 1, 1, 1}, 1}, /* one column of each group per rank */
        {{1, 1, 0, 0, 1, 1, 0, 0}, 4, {2, 2, 2, 2}, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_qtensor q;
        memset(&q, 0, sizeof q);
        int32_t g[8];
        memcpy(g, cases[i].g, sizeof g);
        double sc[4] = {1, 2, 3, 4}; /* [N = 2][sk = 2] */
        q.kind = HC_Q_INT, q.bits = 4, q.E = 1, q.N = 2, q.K = 8, q.gn = 1, q.gk = 4;
        q.sn = 2, q.sk = 2, q.g_idx = g, q.scales = sc, q.scale_dtype = HC_DT_F16;
        for (unsigned r = 0; r < cases[i].tp; r++) {
            CHECK_EQ_U64(hc__shard_group_k(&q, 'r', r, cases[i].tp), cases[i].want[r]);
            hc_qtensor out;
            char why[128];
            if (!hc__qtensor_shard(&q, 'r', r, cases[i].tp, &out, why, sizeof why)) {
                CHECK_FAIL_("case %zu rank %u: %s", i, r, why);
                continue;
            }
            uint64_t k0, k1;
            hc__shard_range(8, cases[i].tp, r, &k0, &k1);
            /* every column keeps its source scale, and each new group has gk columns */
            uint64_t count[8] = {0};
            for (uint64_t n = 0; n < 2; n++)
                for (uint64_t k = 0; k < out.K; k++)
                    CHECK(out.scales[n * out.sk + (uint64_t)out.g_idx[k]] == sc[n * 2 + g[k0 + k]]);
            for (uint64_t k = 0; k < out.K; k++) count[out.g_idx[k]]++;
            for (uint64_t j = 0; j < out.sk; j++) CHECK_EQ_U64(count[j], out.gk);
            hc__qtensor_free(&out);
        }
        hc_tp_plan p;
        hc__tp_shard(&q, 'r', cases[i].tp, NULL, &p);
        CHECK_EQ_U64(p.regroup, cases[i].regroup);
        CHECK(p.group_aligned == (cases[i].regroup == 0));
    }
}

/* validate's prediction of a cut (hc__tp_shard: part sizes, evenness, regrouped scale group)
 * is the cut convert makes (hc__qtensor_shard), rank by rank. families.c computed the part
 * size with its own ceil(d / tp) beside hc__shard_range; both now take the one rule. */
static void test_tp_plan_is_the_cut(void) {
    static const struct {
        uint64_t N, K, gk;
        char role;
    } shapes[] = {{640, 640, 128, 'r'}, {640, 640, 128, 'c'}, {96, 200, 40, 'r'},
                  {3, 64, 64, 'c'},     {130, 4096, 32, 'r'}, {64, 48, 16, 'r'},
                  {64, 4096, 4096, 'r'}};
    static const unsigned tps[] = {2, 3, 4, 7, 8};
    int cuts = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (size_t t = 0; t < sizeof tps / sizeof tps[0]; t++) {
            unsigned tp = tps[t];
            hc_qtensor q;
            memset(&q, 0, sizeof q);
            q.kind = HC_Q_INT, q.bits = 4, q.E = 1, q.N = shapes[i].N, q.K = shapes[i].K;
            q.gn = 1, q.gk = shapes[i].gk, q.sn = q.N, q.sk = (q.K + q.gk - 1) / q.gk;
            q.scale_dtype = HC_DT_F16;
            double *sc = calloc(q.sn * q.sk, sizeof *sc);
            q.scales = sc;
            hc_tp_plan p;
            hc__tp_shard(&q, shapes[i].role, tp, NULL, &p);
            uint64_t largest = 0, smallest = UINT64_MAX, group = 0;
            for (unsigned r = 0; r < tp; r++) {
                hc_qtensor out;
                char why[128];
                uint64_t part = 0, gk = q.gk;
                if (hc__qtensor_shard(&q, shapes[i].role, r, tp, &out, why, sizeof why)) {
                    part = shapes[i].role == 'c' ? out.N : out.K;
                    gk = out.gk;
                    hc__qtensor_free(&out);
                }
                largest = part > largest ? part : largest;
                smallest = part < smallest ? part : smallest;
                /* one scale per row (sk 1) is not regrouped, whatever the part's width */
                if (q.sk > 1 && gk != q.gk && (!group || gk < group)) group = gk;
            }
            CHECK_EQ_U64(shapes[i].role == 'c' ? p.shard_n : p.shard_k, largest);
            CHECK_EQ_U64(shapes[i].role == 'c' ? p.shard_k : p.shard_n,
                         shapes[i].role == 'c' ? q.K : q.N);
            CHECK(p.splits == (largest == smallest));
            CHECK_EQ_U64(p.regroup, group);
            free(sc);
            cuts++;
        }
    CHECK_EQ_INT(cuts, 35);
}

/* Impossible tensor-parallel requests are refused with the option named. */
static void test_tp_refusals_are_named(void) {
    char src[1024], out[1024];
    snprintf(src, sizeof src, "%s/gptq_4bit_sym_v1", fixture("quant"));
    snprintf(out, sizeof out, "%s/tp", test_tmpdir());
    hc_converter *cv = hc_converter_create();
    CHECK_EQ_INT(hc_converter_set(cv, HC_CONV_TP_SIZE, 0), HC_USAGE);
    CHECK_EQ_INT(hc_converter_set(cv, HC_CONV_TP_SIZE, 512), HC_USAGE);
    CHECK_EQ_INT(hc_converter_set(cv, HC_CONV_TP_SIZE, 2), HC_OK);
    CHECK_EQ_INT(hc_converter_set(cv, HC_CONV_REPACK, 0), HC_OK);
    CHECK_EQ_INT(hc_converter_run(cv, src, out), HC_USAGE); /* passthrough cannot be cut */
    CHECK_CONTAINS(hc_converter_errmsg(cv), "--tp 2");
    hc_converter_free(cv);
}

/* validate's kernel families are the kernels that exist (docs/gpu.md): bf16 activations only,
 * integers of 1-4 bits on the int4 kernels and 5-8 bits on the int8 ones, 64 x 64 padding. */
static void test_families_match_the_kernels(void) {
    static const struct {
        hc_qkind kind;
        int bits;
        uint64_t gk;
        hc_dtype sd;
        double gdiv;
        const char *fam; /* the GPU family, or NULL for none */
    } cases[] = {
        {HC_Q_INT, 2, 64, HC_DT_F16, 0, "int4"},    {HC_Q_INT, 3, 128, HC_DT_F16, 0, "int4"},
        {HC_Q_INT, 4, 128, HC_DT_BF16, 0, "int4"},  {HC_Q_INT, 5, 128, HC_DT_F16, 0, "int8"},
        {HC_Q_INT, 8, 0, HC_DT_F32, 0, "int8"},     {HC_Q_FP4, 4, 32, HC_DT_F8_E8M0, 0, "mxfp4"},
        {HC_Q_FP4, 4, 16, HC_DT_F8_E4M3, 2688, "nvfp4"}, {HC_Q_FP8_E4M3, 8, 128, HC_DT_F32, 0, "fp8"},
        {HC_Q_FP8_E5M2, 8, 0, HC_DT_F32, 0, NULL},  {HC_Q_INT, 4, 8, HC_DT_F16, 0, NULL},
        {HC_Q_INT, 4, 24, HC_DT_F16, 0, NULL},      {HC_Q_INT, 4, 48, HC_DT_F16, 0, "int4"},
        /* NVFP4's global divisor with scales that are not E4M3: the kernels take E4M3 only */
        {HC_Q_FP4, 4, 16, HC_DT_F16, 2688, NULL}};
    static double ones[128 * 512];
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++) ones[i] = 1.0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_qtensor q;
        memset(&q, 0, sizeof q);
        q.kind = cases[i].kind, q.bits = cases[i].bits, q.gk = cases[i].gk, q.gn = 1;
        q.E = 1, q.N = 128, q.sn = 128, q.K = 4096, q.zero_const = 1 << (cases[i].bits - 1);
        q.sk = cases[i].gk ? (4096 + cases[i].gk - 1) / cases[i].gk : 1;
        q.scale_dtype = cases[i].sd, q.global_div = cases[i].gdiv, q.scales = ones;
        const hc_family *f[8];
        char why[256];
        size_t n = hc__families_for(NULL, &q, f, 8, why, sizeof why);
        size_t gpu = 0;
        for (size_t j = 0; j < n; j++) {
            if (!strcmp(f[j]->name, "cpu")) continue;
            gpu++;
            CHECK(cases[i].fam && !strcmp(f[j]->name, cases[i].fam));
            CHECK(!strcmp(f[j]->activations, "bf16"));
            CHECK(f[j]->n_multiple == 64 && f[j]->k_multiple == 64);
        }
        CHECK_EQ_U64(gpu, cases[i].fam ? 1 : 0);
        if (!cases[i].fam) CHECK(why[0] != 0);
    }
}

void suite_tp(void) {
    RUN(test_families_match_the_kernels);
    RUN(test_tp_shards_are_exact_slices);
    RUN(test_tp_refusals_are_named);
    RUN(test_tp_actorder_group_rule);
    RUN(test_tp_plan_is_the_cut);
    RUN(test_tp_actorder_row_parallel);
}
