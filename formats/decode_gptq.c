/* decode_gptq.c: the GPTQ (v1 and v2 zero points, 2/3/4/8 bits, act-order), AWQ (gemm) and
 * gpt-oss fused MXFP4 expert decoders, into the canonical tensor (quant.h). Layout facts:
 * ../shared/docs/FORMATS.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_int.h"

/* ---------------- GPTQ, AWQ ---------------- */

/* GPTQ and AWQ store scales [G, N]; the canonical grid is [N, G]. Also makes room for the
 * zero points, which both formats always carry. */
static bool scales_by_group_rows(dctx *c, const hc_ck_entry *se, uint64_t G, uint64_t N) {
    hc_qtensor *q = c->q;
    uint64_t cnt = G * N > 0 ? G * N : 1;
    double *tmp = malloc(cnt * sizeof *tmp);
    q->zeros = malloc(cnt * sizeof *q->zeros);
    if (!tmp || !q->zeros) {
        free(tmp);
        PROBLEM(c, c->m->name, "memory", "module '%s': out of memory", c->m->name);
        return false;
    }
    hc__dec_read_scales(c, se, false, G * N, tmp);
    for (uint64_t g = 0; g < G; g++)
        for (uint64_t n = 0; n < N; n++) q->scales[n * G + g] = tmp[g * N + n];
    free(tmp);
    return true;
}

/* GPTQ field i of a line of words (first word at base, next words stride apart): 32/b
 * fields per word, or for 3 bits runs of 32 fields in 3 words as a low-bit-first bitstream. */
static unsigned gptq_field(const void *d, uint64_t base, uint64_t stride, uint64_t i, int b) {
    if (b != 3) return hc__dec_field_words(d, base, stride, i, b);
    return hc__dec_field_stream(d, base + (i / 32) * 3 * stride, stride, i % 32, 3);
}

/* GPTQ v1 zero points, from the stored words into zeros [N][G]. GPTQModel writes v1 by
 * subtracting, from each whole qzeros word, the word with a 1 in every b-bit field
 * (0x11111111 at 4 bits), so a zero of 0 borrows from the next field (the top field's borrow
 * leaves the word, mod 2^32), and reads v1 by adding that word back: the sum's fields are the
 * zeros, in range by construction. "field + 1" agrees only where no field of the word was 0.
 * 3-bit fields straddle words, so no word constant applies: GPTQModel shifts each field,
 * z = (field + 1) mod 8, and so does this. */
static void gptq_v1_zeros(const void *zd, uint64_t G, uint64_t N, uint64_t zc, int b,
                          int32_t *zeros) {
    unsigned mask = (1u << b) - 1;
    if (b == 3) {
        for (uint64_t g = 0; g < G; g++)
            for (uint64_t n = 0; n < N; n++)
                zeros[n * G + g] = (int32_t)((gptq_field(zd, g * zc, 1, n, 3) + 1) & mask);
        return;
    }
    unsigned per = 32u / (unsigned)b;
    uint32_t ones = 0xFFFFFFFFu / mask; /* a 1 in every field: 0x55555555, 0x11111111, 0x01010101 */
    for (uint64_t g = 0; g < G; g++)
        for (uint64_t j = 0; j < zc; j++) {
            uint32_t w = hc__dec_word32(zd, g * zc + j) + ones; /* unsigned: wraps as GPTQModel's int32 */
            for (unsigned i = 0; i < per && j * per + i < N; i++)
                zeros[(j * per + i) * G + g] = (int32_t)((w >> (b * i)) & mask);
        }
}

/* GPTQ's and AWQ's three tensors -- qweight, scales, qzeros -- present and of their types. */
static bool packed_tensors(dctx *c, const hc_ck_entry **we, const hc_ck_entry **se,
                           const hc_ck_entry **ze) {
    *we = hc__dec_need(c, HC_ROLE_WEIGHT, "qweight");
    *se = hc__dec_need(c, HC_ROLE_SCALE, "scales");
    *ze = hc__dec_need(c, HC_ROLE_ZERO, "qzeros");
    return !c->bad && CHECK_DT(c, *we, HC_DT_I32) && CHECK_DT(c, *ze, HC_DT_I32) &&
           CHECK_DT(c, *se, HC_DT_F16, HC_DT_BF16, HC_DT_F32);
}

void hc__dec_gptq(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    int b = m->scheme.bits;
    const hc_ck_entry *we, *se, *ze;
    if (!packed_tensors(c, &we, &se, &ze)) return;
    if (we->t->ndim != 2 || (b == 3 && we->t->shape[0] % 3)) {
        PROBLEM(c, we->name, "shape", "tensor '%s': qweight must be 2-D (3-bit: rows a multiple "
                "of 3)", we->name);
        return;
    }
    uint64_t rows = we->t->shape[0], N = we->t->shape[1];
    uint64_t K = b == 3 ? rows / 3 * 32 : rows * (32u / (unsigned)b);
    uint64_t gs = m->scheme.group_size > 0 ? (uint64_t)m->scheme.group_size : K;
    uint64_t G = hc__cdiv_u64(K, gs);
    if (!hc__dec_check_shape(c, se, 2, (uint64_t[]){G, N}, "scales shape")) return;
    /* qzeros rows hold N fields in whole words (3-bit: whole runs of 32) */
    unsigned run = b == 3 ? 32u : 32u / (unsigned)b;
    uint64_t zc = b == 3 ? N / 32 * 3 : N / run;
    if (N % run) {
        PROBLEM(c, ze->name, "qzeros shape", "tensor '%s': qzeros shape: N=%llu columns do not "
                "fill whole %s (a multiple of %u)", ze->name, (unsigned long long)N,
                b == 3 ? "3-bit runs" : "words", run);
        return;
    }
    if (!hc__dec_check_shape(c, ze, 2, (uint64_t[]){G, zc}, "qzeros shape")) return;
    const void *d = hc__dec_data(c, we);
    if (b == 4) /* each word is 8 consecutive K codes of one column, low nibble first */
        q->packed = d, q->packed_row_bytes = K / 2, q->packed_col_stride = N;
    if (!hc__dec_alloc_q(c, 1, N, K, N, G)) return;
    q->gn = 1, q->gk = gs, q->kind = HC_Q_INT, q->bits = b;
    for (uint64_t n = 0; q->codes && n < N; n++)
        for (uint64_t k = 0; k < K; k++) q->codes[n * K + k] = (uint8_t)gptq_field(d, n, N, k, b);
    if (b == 4) q->code_min = hc__dec_words_have_zero_nibble(d, rows * N) ? 0 : 1;
    if (!scales_by_group_rows(c, se, G, N)) return;
    /* zero fields (v2: z; v1: below). A symmetric checkpoint tells the truth by its data. */
    const void *zd = hc__dec_data(c, ze);
    bool v2 = m->scheme.gptq_v2;
    uint64_t at_half = 0, at_half_m1 = 0;
    unsigned half = 1u << (b - 1);
    for (uint64_t g = 0; g < G; g++)
        for (uint64_t n = 0; n < N; n++) {
            unsigned f = gptq_field(zd, g * zc, 1, n, b); /* packed along N in row g */
            q->zeros[n * G + g] = (int32_t)f;
            at_half += f == half;
            at_half_m1 += f == half - 1;
        }
    if (m->scheme.symmetric && !v2 && at_half == G * N) {
        hc__findings_add(c->f, HC_SEV_WARNING, ze->name, "v2 zero points", 0, NULL, 0,
                        "tensor '%s': checkpoint_format says gptq (v1) but every zero field is "
                        "%u, the gptq_v2 symmetric value; reading them as v2", ze->name, half);
        v2 = true;
    } else if (m->scheme.symmetric && v2 && at_half_m1 == G * N) {
        hc__findings_add(c->f, HC_SEV_WARNING, ze->name, "v1 zero points", 0, NULL, 0,
                        "tensor '%s': checkpoint_format says gptq_v2 but every zero field is "
                        "%u, the v1 symmetric value; reading them as v1", ze->name, half - 1);
        v2 = false;
    }
    if (!v2) gptq_v1_zeros(zd, G, N, zc, b, q->zeros);
    snprintf(q->quirks, sizeof q->quirks, "zero points %s", v2 ? "gptq_v2 (z)"
             : b == 3 ? "gptq v1 (field + 1 mod 8)" : "gptq v1 (whole-word add)");
    hc__dec_read_gidx(c, K, G);
}

void hc__dec_awq(dctx *c) {
    const hc_module *m = c->m;
    hc_qtensor *q = c->q;
    const hc_ck_entry *we, *se, *ze;
    if (!packed_tensors(c, &we, &se, &ze)) return;
    if (we->t->ndim != 2) {
        PROBLEM(c, we->name, "shape", "tensor '%s': qweight must be 2-D", we->name);
        return;
    }
    uint64_t K = we->t->shape[0], N = we->t->shape[1] * 8;
    uint64_t gs = m->scheme.group_size > 0 ? (uint64_t)m->scheme.group_size : K;
    if (gs == 0 || K % gs) {
        PROBLEM(c, we->name, "divisible", "tensor '%s': K=%llu is not divisible by group_size "
                "%llu", we->name, (unsigned long long)K, (unsigned long long)gs);
        return;
    }
    uint64_t G = K / gs;
    if (!hc__dec_check_shape(c, se, 2, (uint64_t[]){G, N}, "scales shape") ||
        !hc__dec_check_shape(c, ze, 2, (uint64_t[]){G, N / 8}, "qzeros shape"))
        return;
    if (!hc__dec_alloc_q(c, 1, N, K, N, G)) return;
    q->gn = 1, q->gk = gs, q->kind = HC_Q_INT, q->bits = 4;
    static const unsigned nib[8] = {0, 4, 1, 5, 2, 6, 3, 7}; /* column j%8 -> nibble */
    const void *d = hc__dec_data(c, we), *zd = hc__dec_data(c, ze);
    for (uint64_t k = 0; q->codes && k < K; k++)
        for (uint64_t n = 0; n < N; n++)
            q->codes[n * K + k] = (uint8_t)((hc__dec_word32(d, k * (N / 8) + n / 8) >> (4 * nib[n % 8])) & 15);
    if (!scales_by_group_rows(c, se, G, N)) return;
    for (uint64_t g = 0; g < G; g++)
        for (uint64_t n = 0; n < N; n++)
            q->zeros[n * G + g] = (int32_t)((hc__dec_word32(zd, g * (N / 8) + n / 8) >> (4 * nib[n % 8])) & 15);
}

/* ---------------- gpt-oss fused MXFP4 experts ---------------- */

void hc__dec_gptoss(dctx *c) {
    hc_qtensor *q = c->q;
    const hc_ck_entry *we = hc__dec_need(c, HC_ROLE_WEIGHT, "_blocks");
    const hc_ck_entry *se = hc__dec_need(c, HC_ROLE_SCALE, "_scales");
    if (c->bad || !CHECK_DT(c, we, HC_DT_U8) || !CHECK_DT(c, se, HC_DT_U8, HC_DT_F8_E8M0)) return;
    if (we->t->ndim != 4 || we->t->shape[3] != 16) {
        PROBLEM(c, we->name, "shape", "tensor '%s': blocks must be [E, out, in/32, 16]", we->name);
        return;
    }
    uint64_t E = we->t->shape[0], R = we->t->shape[1], C = we->t->shape[2];
    if (!hc__dec_check_shape(c, se, 3, (uint64_t[]){E, R, C}, "scales shape")) return;
    q->packed = hc__dec_data(c, we), q->packed_row_bytes = C * 16;
    if (!hc__dec_alloc_q(c, E, R, C * 32, R, C)) return;
    q->gn = 1, q->gk = 32, q->kind = HC_Q_FP4, q->bits = 4, q->ndim = 3;
    if (q->codes) hc__dec_unpack_nibbles(hc__dec_data(c, we), E * R * C * 16, q->codes);
    hc__dec_read_scales(c, se, true, E * R * C, q->scales);
}
