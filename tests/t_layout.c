/* t_layout.c: the tile layouts on their own: element addressing is a bijection, the
 * E2M1 x 2^d -> E4M3 conversion is exact wherever E4M3 can hold the value (checked against a
 * search of all 256 E4M3 codes), and the MXFP4 exponent fold dequantizes to the original
 * value, element for element, on random and adversarial exponents; and the GPU rule of contract/
 * (which tiled layers the GPU kernels read) at its boundaries. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"
#include "gpu_int.h"
#include "layout.h"
#include "test.h"
#include "tiles.h"

static void test_code_positions_are_a_bijection(void) {
    for (unsigned bits = 4; bits <= 8; bits += 4) {
        unsigned slots = HC_TILE_N * HC_TILE_K;
        unsigned char *seen = calloc(slots, 1);
        int dup = 0;
        for (unsigned r = 0; r < HC_TILE_N; r++)
            for (unsigned c = 0; c < HC_TILE_K; c++) {
                uint64_t b;
                unsigned sh;
                hc__tile_code_pos(bits, r, c, &b, &sh);
                uint64_t slot = bits == 4 ? b * 2 + sh / 4 : b;
                if (slot >= slots || seen[slot]++) dup++;
            }
        CHECK_EQ_INT(dup, 0);
        free(seen);
    }
    /* the documented fragment order: (r=0, c=1) is a1 of lane 0, the high half-word's first
     * nibble of the first word; (r=8, c=0) is a2, the low half-word's second nibble */
    uint64_t b;
    unsigned sh;
    hc__tile_code_pos(4, 0, 1, &b, &sh);
    CHECK(b == 2 && sh == 0);
    hc__tile_code_pos(4, 8, 0, &b, &sh);
    CHECK(b == 0 && sh == 4);
    hc__tile_code_pos(8, 0, 8, &b, &sh); /* a4 of lane 0: byte 4 */
    CHECK(b == 4);
    hc__tile_code_pos(8, 1, 0, &b, &sh); /* lane 4 */
    CHECK(b == 4 * 16);
}

static void test_e4m3_of_fp4_exact_and_complete(void) {
    int exact = 0;
    for (unsigned u = 0; u < 16; u++)
        for (int d = -14; d <= 12; d++) {
            double want = hc__fp4_e2m1(u) * ldexp(1.0, d);
            int found = -1;
            for (unsigned b = 0; b < 256 && found < 0; b++)
                if (hc__fp8_e4m3(b) == want && signbit(hc__fp8_e4m3(b)) == signbit(want)) found = (int)b;
            uint8_t got;
            bool ok = hc__e4m3_of_fp4(u, d, &got);
            if (ok != (found >= 0)) CHECK_FAIL_("u=%u d=%d: converter %d, search %d", u, d, ok, found);
            if (ok && hc__fp8_e4m3(got) != want) CHECK_FAIL_("u=%u d=%d: wrong byte", u, d);
            exact += ok;
        }
    CHECK(exact >= 280); /* 16 codes x 27 offsets, minus the values E4M3 cannot hold */
}

static uint64_t rs = 0x853c49e6748fea9bull;
static uint64_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return rs;
}

/* Packs a random FP4 tensor whose E8M0 exponents come from gen, then compares every element
 * read back through the layout (the E4M3 path for folded row-tiles) with fp4 x 2^(e-127). */
static void fold_round_trip(int (*gen)(uint64_t n, uint64_t g), uint64_t N, uint64_t K,
                            uint64_t *unfolded, uint64_t *tiles) {
    hc_qtensor q = {.E = 1, .N = N, .K = K, .ndim = 2, .kind = HC_Q_FP4, .bits = 4,
                    .sn = N, .sk = K / 32, .gn = 1, .gk = 32, .scale_dtype = HC_DT_F8_E8M0};
    q.codes = malloc(N * K);
    q.scales = malloc(N * (K / 32) * sizeof(double));
    for (uint64_t i = 0; i < N * K; i++) q.codes[i] = (uint8_t)(rnd() % 16);
    for (uint64_t n = 0; n < N; n++)
        for (uint64_t g = 0; g < K / 32; g++) q.scales[n * (K / 32) + g] = ldexp(1.0, gen(n, g) - 127);
    hc_tile_plan pl;
    CHECK(hc__tile_plan_make(&q, &pl));
    CHECK_EQ_INT(pl.p.kind, HC_TL_MXFOLD);
    uint8_t *buf = malloc(hc_tile_bytes(&pl.p));
    hc_tile_stats st = {0};
    hc_err err = {0};
    CHECK_EQ_INT(hc__tile_pack(&q, &pl, buf, &st, &err), HC_OK);
    uint64_t diff = 0;
    for (uint64_t n = 0; n < N; n++)
        for (uint64_t k = 0; k < K; k++) {
            const uint8_t *chunk = buf + hc__tile_offset(&pl.p, 0, n / 64, k / 64);
            double got = hc__tile_value(&pl.p, chunk, (unsigned)(n % 64), (unsigned)(k % 64));
            double want = hc__fp4_e2m1(q.codes[n * K + k]) * q.scales[n * (K / 32) + k / 32];
            if (got != want || signbit(got) != signbit(want)) diff++;
        }
    CHECK_EQ_U64(diff, 0);
    *unfolded += st.mx_unfolded;
    *tiles += st.tiles * 64;
    free(buf);
    hc__tile_plan_free(&pl);
    hc__qtensor_free(&q);
}

static int gen_narrow(uint64_t n, uint64_t g) { (void)n, (void)g; return 120 + (int)(rnd() % 8); }
static int gen_wide(uint64_t n, uint64_t g) { (void)n, (void)g; return (int)(rnd() % 255); }
static int gen_edges(uint64_t n, uint64_t g) { /* extremes, alternating per group */
    static const int v[] = {0, 254, 1, 253, 127, 0, 0, 254, 14, 0, 120, 134};
    return v[(n * 7 + g) % 12];
}
static int gen_spread(uint64_t n, uint64_t g) { /* spreads of 12..16 across a tile's 2 groups */
    return g % 2 ? 100 : 100 + 12 + (int)(n % 5);
}

static void test_mxfold_lossless(void) {
    uint64_t unf = 0, tiles = 0;
    fold_round_trip(gen_narrow, 128, 320, &unf, &tiles); /* K not a multiple of 64 */
    CHECK_EQ_U64(unf, 0);                                /* realistic exponents all fold */
    uint64_t t_narrow = tiles;
    fold_round_trip(gen_wide, 64, 256, &unf, &tiles);
    fold_round_trip(gen_edges, 96, 192, &unf, &tiles);
    fold_round_trip(gen_spread, 64, 128, &unf, &tiles);
    CHECK(unf > 0);               /* adversarial spreads fall back, exactly */
    CHECK(tiles > t_narrow);
    printf("     (%llu row-tiles, %llu kept unfolded)\n", (unsigned long long)tiles,
           (unsigned long long)unf);
}

/* The fold's boundary: a 14-exponent spread with the largest codes still folds. */
static void test_mxfold_boundary(void) {
    uint8_t codes[64], rec[4];
    for (int c = 0; c < 64; c++) codes[c] = 7; /* 6.0 everywhere */
    codes[0] = 1;                              /* and one 0.5 */
    uint8_t e[2] = {100, 114};
    hc__mxfold_row(e, codes, rec);
    CHECK(rec[0] != HC_MXFOLD_UNFOLDED);
    e[1] = 116; /* 16 apart: 0.5 x 2^-10 is below E4M3's smallest step */
    hc__mxfold_row(e, codes, rec);
    CHECK(rec[0] == HC_MXFOLD_UNFOLDED);
    CHECK(rec[1] == 100 && rec[2] == 116);
}

/* Symmetric int4 without the code -8 is stored sign-magnitude; with it, offset binary. */
static void test_int4_sign_magnitude(void) {
    for (int with_min = 0; with_min < 2; with_min++) {
        uint64_t N = 70, K = 200; /* both padded */
        hc_qtensor q = {.E = 1, .N = N, .K = K, .ndim = 2, .kind = HC_Q_INT, .bits = 4,
                        .sn = N, .sk = 4, .gn = 1, .gk = 64, .scale_dtype = HC_DT_F32,
                        .zero_const = 8};
        q.codes = malloc(N * K);
        q.scales = malloc(N * 4 * sizeof(double));
        for (uint64_t i = 0; i < N * K; i++) q.codes[i] = (uint8_t)(1 + rnd() % 15);
        if (with_min) q.codes[N * K / 2] = 0;
        q.code_min = with_min ? 0 : 1;
        for (uint64_t i = 0; i < N * 4; i++) q.scales[i] = (double)(float)(0.01 + (double)(rnd() % 1000) / 1e4);
        hc_tile_plan pl;
        CHECK(hc__tile_plan_make(&q, &pl));
        CHECK_EQ_INT(pl.p.sign_magnitude, !with_min);
        uint8_t *buf = malloc(hc_tile_bytes(&pl.p));
        hc_err err = {0};
        CHECK_EQ_INT(hc__tile_pack(&q, &pl, buf, NULL, &err), HC_OK);
        uint64_t diff = 0;
        for (uint64_t n = 0; n < N; n++)
            for (uint64_t k = 0; k < K; k++) {
                double got = hc__tile_value(&pl.p, buf + hc__tile_offset(&pl.p, 0, n / 64, k / 64),
                                           (unsigned)(n % 64), (unsigned)(k % 64));
                diff += got != ((double)q.codes[n * K + k] - 8) * q.scales[n * 4 + k / 64];
            }
        CHECK_EQ_U64(diff, 0);
        free(buf);
        hc__qtensor_free(&q);
    }
}

/* Zero points: any byte for 8-bit codes; for 4-bit codes at most 127 (the GPU's exact
 * - (128 + z), codec/codes.cuh), a larger one refused with the reason; uniform ones become the
 * constant. */
static void test_int_zero_point_range(void) {
    static const struct {
        int bits, zero;
        bool ok;
    } cases[] = {{4, 15, true}, {4, 127, true}, {4, 128, false}, {4, 200, false},
                 {8, 200, true}, {8, 255, true}, {8, 256, false}, {4, -1, false}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t N = 64, K = 128;
        hc_qtensor q = {.E = 1, .N = N, .K = K, .ndim = 2, .kind = HC_Q_INT, .bits = cases[c].bits,
                        .sn = N, .sk = 1, .gn = 1, .gk = K, .scale_dtype = HC_DT_F32};
        q.codes = calloc(N * K, 1);
        q.scales = calloc(N, sizeof(double));
        q.zeros = calloc(N, sizeof(int32_t));
        for (uint64_t n = 0; n < N; n++) q.zeros[n] = (int32_t)(n % 3); /* not uniform */
        q.zeros[N / 2] = cases[c].zero;
        hc_tile_plan pl;
        const bool ok = hc__tile_plan_make(&q, &pl);
        CHECK_EQ_INT(ok, cases[c].ok);
        if (ok) {
            CHECK(pl.p.zeros);
            hc__tile_plan_free(&pl);
        } else {
            CHECK_CONTAINS(pl.reason, cases[c].zero < 0 || cases[c].zero > 255 ? "does not fit a byte"
                                                                               : "above 127");
        }
        hc__qtensor_free(&q);
    }
}

/* The shuffle emitter writes the same bytes as the portable one, and both match the reader's
 * addressing (hc__tile_code_pos). */
static void test_nibble_emitters_agree(void) {
    uint64_t strides[] = {32, 48, 160};
    for (size_t si = 0; si < 3; si++) {
        uint64_t stride = strides[si];
        uint8_t *nib = malloc(64 * stride), a[2048], b[2048];
        for (uint64_t i = 0; i < 64 * stride; i++) nib[i] = (uint8_t)rnd();
        hc__emit_nibbles_both(nib, stride, a, b);
        CHECK(memcmp(a, b, sizeof a) == 0);
        uint64_t bad = 0;
        for (unsigned r = 0; r < 64; r++)
            for (unsigned c = 0; c < 64; c++) {
                uint64_t byte;
                unsigned sh;
                hc__tile_code_pos(4, r, c, &byte, &sh);
                unsigned want = c % 2 ? nib[r * stride + c / 2] >> 4 : nib[r * stride + c / 2] & 15;
                bad += ((b[byte] >> sh) & 15u) != want;
            }
        CHECK_EQ_U64(bad, 0);
        free(nib);
    }
}

/* The layout table's rows: each layout id's rows agree on what is the layout's (params kind,
 * version), every codec number 1..6 has exactly one row, and the ids are the four of
 * docs/layouts.md (written here from the document, not from the table). */
static void test_layout_table(void) {
    static const struct {
        const char *id, *kind;
        unsigned version;
    } doc[] = {{"tile64-int", "int", 1}, {"tile64-fp4", "fp4", 1},
               {"tile64-mxfold", "mxfold", 1}, {"tile64-fp8", "fp8", 2}};
    for (unsigned c = 1; c < HC_CODEC_COUNT; c++) {
        const hc_layout_row *r = hc__layout_by_codec(c);
        CHECK(r != NULL);
        if (!r) continue;
        int found = 0;
        for (size_t i = 0; i < 4; i++)
            if (!strcmp(r->id, doc[i].id)) {
                found = 1;
                CHECK(!strcmp(r->params_kind, doc[i].kind));
                CHECK_EQ_INT(r->version, doc[i].version);
            }
        CHECK(found);
        CHECK(hc__layout_row_of(r->kind, r->code_bits, r->sign_magnitude) == r);
    }
    for (size_t i = 0; i < 4; i++) CHECK(hc__layout_by_id(doc[i].id) != NULL);
    CHECK(hc__layout_by_id("tile64-int8") == NULL && hc__layout_by_codec(0) == NULL);
}

/* layout_params that no codec stores are refused by the reader, naming the field: each case
 * edits one field of a valid fp8 tile's parameters. */
static void test_layout_params_refused(void) {
    hc_tile_params p = {.kind = HC_TL_FP8, .code_bits = 8, .src_bits = 8, .E = 1, .N = 64,
                        .K = 64, .Np = 64, .Kp = 64, .g = 64, .scale_dtype = HC_DT_F32};
    CHECK(hc__tile_geometry(&p));
    static const struct {
        const char *layout, *key, *value, *why; /* value: JSON text replacing key's */
    } cases[] = {
        {"tile64-fp8", NULL, NULL, NULL}, /* as written: accepted */
        {"tile64-fp8", "code_bits", "4", "code_bits"},
        {"tile64-mxfold", "kind", "\"mxfold\"", "code_bits"},
        {"tile64-fp8", "scale_dtype", "\"F64\"", "scale_dtype"},
        {"tile64-fp8", "scale_dtype", "\"I32\"", "scale_dtype"},
        {"tile64-int", "kind", "\"fp8\"", "kind does not match"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j = hc__tile_params_json(&p);
        if (cases[i].key)
            cJSON_ReplaceItemInObjectCaseSensitive(j, cases[i].key, cJSON_Parse(cases[i].value));
        hc_tile_params back;
        hc_err err = {0};
        hc_status st = hc__tile_params_parse(j, cases[i].layout, &back, "w", &err);
        cJSON_Delete(j);
        if (!cases[i].why) {
            CHECK_EQ_INT(st, HC_OK);
            CHECK_EQ_U64(back.chunk_bytes, p.chunk_bytes);
        } else {
            CHECK_EQ_INT(st, HC_INVALID);
            CHECK_CONTAINS(err.msg, cases[i].why);
        }
    }
}

/* The GPU rule of contract/ (hc__tile_gpu_rule): a layer runs as tiled; groups under 16
 * columns, and rows of 2^31 columns or more (the kernels' 32-bit column index), do not. */
static void test_gpu_rule(void) {
    hc_tile_params p = {.kind = HC_TL_INT, .code_bits = 4, .src_bits = 4, .E = 1, .N = 64,
                        .K = 4096, .Np = 64, .Kp = 4096, .g = 128, .scale_dtype = HC_DT_BF16};
    CHECK(hc__tile_geometry(&p));
    CHECK_EQ_INT(hc__tile_gpu_rule(&p), HC_GPU_RUNS);
    hc_tile_params w = p;
    w.K = w.Kp = (1ull << 31) - 64; /* a whole number of tiles below the limit */
    CHECK(hc__tile_geometry(&w));
    CHECK_EQ_INT(hc__tile_gpu_rule(&w), HC_GPU_RUNS);
    w.K = (1ull << 31) - 1, w.Kp = 1ull << 31; /* the widest row that runs (the rule is on K) */
    CHECK(hc__tile_geometry(&w));
    CHECK_EQ_INT(hc__tile_gpu_rule(&w), HC_GPU_RUNS);
    w.K = w.Kp = 1ull << 31;
    CHECK(hc__tile_geometry(&w));
    CHECK_EQ_INT(hc__tile_gpu_rule(&w), HC_GPU_WIDE_K);
    hc_tile_params s = p;
    s.g = 8;
    CHECK(hc__tile_geometry(&s));
    CHECK_EQ_INT(hc__tile_gpu_rule(&s), HC_GPU_SMALL_GROUPS);
}

/* The 4-bit zero-point bound (contract/layout.h hc__gpu_zero_fits) on a layer's constant
 * (hc__tile_gpu_rule) and on its stored bytes (hc__tile_gpu_rule_zeros: a container tiled before
 * repack refused them), and the GPU loader's message naming the layer and the byte. */
static void test_gpu_zero_rule(void) {
    CHECK(hc__gpu_zero_fits(4, 127));
    CHECK(!hc__gpu_zero_fits(4, 128));
    CHECK(hc__gpu_zero_fits(8, 255));
    hc_tile_params c = {.kind = HC_TL_INT, .code_bits = 4, .src_bits = 4, .E = 1, .N = 64,
                        .K = 128, .Np = 64, .Kp = 128, .g = 128, .scale_dtype = HC_DT_BF16,
                        .zero_const = 127};
    CHECK(hc__tile_geometry(&c));
    CHECK_EQ_INT(hc__tile_gpu_rule(&c), HC_GPU_RUNS);
    c.zero_const = 128;
    CHECK_EQ_INT(hc__tile_gpu_rule(&c), HC_GPU_ZERO_RANGE);
    c.sign_magnitude = true; /* (no zero point) */
    CHECK_EQ_INT(hc__tile_gpu_rule(&c), HC_GPU_RUNS);
    c.sign_magnitude = false, c.code_bits = 8;
    CHECK(hc__tile_geometry(&c));
    CHECK_EQ_INT(hc__tile_gpu_rule(&c), HC_GPU_RUNS);

    /* two experts of 2 x 2 tiles, groups of 32 (two zero bytes a tile row) */
    hc_tile_params p = {.kind = HC_TL_INT, .code_bits = 4, .src_bits = 4, .E = 2, .N = 128,
                        .K = 128, .Np = 128, .Kp = 128, .g = 32, .scale_dtype = HC_DT_BF16,
                        .zeros = true};
    CHECK(hc__tile_geometry(&p));
    CHECK_EQ_U64(p.zero_bytes, 128);
    const uint64_t nch = p.E * p.tiles_n * p.tiles_k, len = nch * p.chunk_bytes;
    CHECK_EQ_U64(nch, 8);
    uint8_t *d = malloc(len);
    if (!d) return;
    memset(d, 0xEE, len); /* codes and scales: any bytes (a zero point is only its own byte) */
    for (uint64_t ch = 0; ch < nch; ch++)
        memset(d + ch * p.chunk_bytes + p.code_bytes + p.scale_bytes, 8, p.zero_bytes);
    hc_tile_zero_at at = {0};
    CHECK_EQ_INT(hc__tile_gpu_rule_zeros(&p, d, len, &at), HC_GPU_RUNS);
    /* chunk 5 (expert 1, tile row 0, K tile 1), row 17, group 1 */
    uint8_t *z = d + 5 * p.chunk_bytes + p.code_bytes + p.scale_bytes + 17 * 2 + 1;
    *z = 127;
    CHECK_EQ_INT(hc__tile_gpu_rule_zeros(&p, d, len, &at), HC_GPU_RUNS);
    *z = 200;
    CHECK_EQ_INT(hc__tile_gpu_rule_zeros(&p, d, len, &at), HC_GPU_ZERO_RANGE);
    CHECK_EQ_U64(at.chunk, 5);
    CHECK_EQ_INT(at.row, 17);
    CHECK_EQ_INT(at.group, 1);
    CHECK_EQ_INT(at.value, 200);
    /* only whole chunks are read: the slice up to chunk 5 passes */
    CHECK_EQ_INT(hc__tile_gpu_rule_zeros(&p, d, 5 * p.chunk_bytes + 100, &at), HC_GPU_RUNS);
    hc_tensor_info t = {.name = "model.layers.3.mlp.experts.gate_up_proj"};
    hc_err err = {0};
    CHECK_EQ_INT(hc__gpu_layer_zeros(&t, &p, d, len, &err), HC_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "'model.layers.3.mlp.experts.gate_up_proj'");
    CHECK_CONTAINS(err.msg, "zero point of 200 (chunk 5, tile row 17, group 1) is above 127");
    CHECK_CONTAINS(err.msg, "convert the checkpoint again");
    /* 8-bit codes take any byte */
    hc_tile_params p8 = p;
    p8.code_bits = 8;
    CHECK(hc__tile_geometry(&p8));
    uint8_t *d8 = calloc(1, p8.chunk_bytes);
    if (d8) {
        memset(d8 + p8.code_bytes + p8.scale_bytes, 255, p8.zero_bytes);
        CHECK_EQ_INT(hc__tile_gpu_rule_zeros(&p8, d8, p8.chunk_bytes, &at), HC_GPU_RUNS);
        free(d8);
    }
    free(d);
}

void suite_layout(void) {
    RUN(test_gpu_rule);
    RUN(test_gpu_zero_rule);
    RUN(test_layout_table);
    RUN(test_layout_params_refused);
    RUN(test_nibble_emitters_agree);
    RUN(test_int4_sign_magnitude);
    RUN(test_int_zero_point_range);
    RUN(test_code_positions_are_a_bijection);
    RUN(test_e4m3_of_fp4_exact_and_complete);
    RUN(test_mxfold_lossless);
    RUN(test_mxfold_boundary);
}
