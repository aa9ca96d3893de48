/* decode_int.h: what the format decoders (decode.c, decode_ct.c, decode_gptq.c) share: the
 * decoding context, the finding macros and the readers of checked shapes, dtypes, scales,
 * packed fields and g_idx. Internal to formats/decode*.c; callers use quant.h. */
#ifndef HC_DECODE_INT_H
#define HC_DECODE_INT_H

#include <string.h>

#include "quant.h"

typedef struct {
    const hc_model *md;
    const hc_module *m;
    hc_findings *f;
    hc_qtensor *q;
    bool bad;
    unsigned flags; /* HC_DECODE_*: whether to unpack the codes (not needed to validate) */
} dctx;

#define PROBLEM(c, tensor, rule, ...)                                                \
    do {                                                                             \
        hc__findings_add((c)->f, HC_SEV_ERROR, tensor, rule, 0, NULL, 0, __VA_ARGS__); \
        (c)->bad = true;                                                             \
    } while (0)

/* The bytes of a checkpoint tensor; the i-th 32-bit word of packed data (any alignment). */
static inline const void *hc__dec_data(const dctx *c, const hc_ck_entry *e) {
    return hc__ckpt_data(c->md->ck, e);
}
static inline uint32_t hc__dec_word32(const void *d, uint64_t i) {
    uint32_t w;
    memcpy(&w, (const unsigned char *)d + 4 * i, 4);
    return w;
}

/* The tensor of a role, or a finding naming what is missing. */
const hc_ck_entry *hc__dec_need(dctx *c, hc_role r, const char *what);
bool hc__dec_check_dtype(dctx *c, const hc_ck_entry *e, const hc_dtype *ok, size_t nok);
#define CHECK_DT(c, e, ...)                                    \
    hc__dec_check_dtype(c, e, (const hc_dtype[]){__VA_ARGS__}, \
                        sizeof((const hc_dtype[]){__VA_ARGS__}) / sizeof(hc_dtype))
/* A tensor's shape against want; rule names the check for the report, ctx (or NULL) the
 * configuration the expected shape follows from. */
bool hc__dec_check_shape_ctx(dctx *c, const hc_ck_entry *e, int ndim, const uint64_t *want,
                             const char *rule, const char *ctx);
bool hc__dec_check_shape(dctx *c, const hc_ck_entry *e, int ndim, const uint64_t *want,
                         const char *rule);
/* The tensor's grid, its scales and (unless the flags and q->packed say not) its codes;
 * q->packed must be set before. */
bool hc__dec_alloc_q(dctx *c, uint64_t E, uint64_t N, uint64_t K, uint64_t sn, uint64_t sk);
/* Reads n scale values (any float dtype, E4M3, or E8M0 when e8m0) into out. */
void hc__dec_read_scales(const dctx *c, const hc_ck_entry *e, bool e8m0, uint64_t n, double *out);
/* Field k of a packed row in the two compressed-tensors / GPTQ bit layouts (decode.c). */
unsigned hc__dec_field_words(const void *d, uint64_t base, uint64_t stride, uint64_t k, int b);
unsigned hc__dec_field_stream(const void *d, uint64_t base, uint64_t stride, uint64_t k, int b);
/* The module's g_idx (if any) over K columns in G groups into q->g_idx (NULL when trivial). */
bool hc__dec_read_gidx(dctx *c, uint64_t K, uint64_t G);
bool hc__dec_words_have_zero_nibble(const void *d, uint64_t n);
/* Two FP4 codes per byte, element 2j in the low nibble. */
void hc__dec_unpack_nibbles(const uint8_t *d, uint64_t nbytes, uint8_t *out);

/* The decoders, one per storage format (hc__module_decode dispatches). */
void hc__dec_ct_pack(dctx *c);     /* decode_ct.c */
void hc__dec_ct_unpacked(dctx *c);
void hc__dec_ct_fp4(dctx *c);
void hc__dec_gptq(dctx *c);        /* decode_gptq.c */
void hc__dec_awq(dctx *c);
void hc__dec_gptoss(dctx *c);

#endif
