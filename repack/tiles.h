/* tiles.h: repacking a canonical quantized tensor into the tiled layouts of
 * contract/layout.h (docs/layouts.md): planning (layout, group, padding, act-order), packing,
 * and the lossless MXFP4 group-exponent fold. */
#ifndef HC_TILES_H
#define HC_TILES_H

#include "layout.h"
#include "quant.h"

typedef struct {
    hc_tile_params p;
    int32_t *perm;      /* act-order: source column of each packed column, or NULL */
    char reason[160];   /* why the module keeps its source layout, when it does */
} hc_tile_plan;

/* Chooses the layout for a decoded module (codes may be absent). Returns false, with the
 * reason in plan->reason, when the module stays in its source layout. */
bool hc__tile_plan_make(const hc_qtensor *q, hc_tile_plan *plan);
/* The layout's scale group along K (docs/layouts.md) for sk source groups of gk columns: 64 for
 * one scale per row, the group itself when a multiple of 64, else gcd(group, 64). */
uint64_t hc__tile_group_k(uint64_t sk, uint64_t gk);
/* Whether q's scales fit a tile layout as they are: FP8 divisors are kept as F32 (a reciprocal
 * is not exact), so F64 divisors do not (the module keeps its source layout). */
static inline bool hc__tile_scales_fit(const hc_qtensor *q) {
    return !(q->scale_divides && q->scale_dtype == HC_DT_F64);
}
void hc__tile_plan_free(hc_tile_plan *plan);

typedef struct {
    uint64_t tiles;          /* row-tiles (64 rows x 64 columns of one expert) written */
    uint64_t mx_unfolded;    /* mxfold row-tiles kept as FP4 x E8M0 (exponent spread too wide) */
} hc_tile_stats;

/* Packs q (with codes) into out, plan->p.E * tiles * chunk bytes. */
hc_status hc__tile_pack(const hc_qtensor *q, const hc_tile_plan *plan, uint8_t *out,
                       hc_tile_stats *stats, hc_err *err);

#define hc_tile_bytes hc__tile_bytes_of

/* The folded row record of one MXFP4 row-tile: base exponent and two group offsets, or the
 * unfolded record (0xFF, e0, e1) when no base keeps every value exact in E4M3. e[] are the
 * groups' E8M0 exponents, codes the row's 64 E2M1 codes. Exposed for the tests. */
void hc__mxfold_row(const uint8_t e[2], const uint8_t codes[64], uint8_t rec[4]);

/* Tests: the portable and the processor-specific 4-bit fragment emitters on one stripe of
 * natural-order nibbles (64 rows of stride bytes), each into a 2048-byte code area. */
void hc__emit_nibbles_both(const uint8_t *nib, uint64_t stride, uint8_t *scalar, uint8_t *fast);

#endif
