/* layouts.h: the one table of the tiled layouts (docs/layouts.md). A layout's identity -- its id
 * in the container, its layout_params kind, its newest version, the codec the kernels are built
 * for, what its scales are and which kernel families read it -- lives in one row of
 * contract/layouts.c; the tiler (repack/), the container reader, the CPU executor, the GPU
 * launcher and the kernels' build options all take it from there. The codec and scale-kind
 * numbers themselves are in layout_core.h, which the kernels see too. */
#ifndef HC_LAYOUTS_H
#define HC_LAYOUTS_H

#include <stdbool.h>

#include "hcrt.h"
#include "layout_core.h"

/* The four layouts' ids (hc_tile_kind is in layout_core.h); a layout holds one or more codecs. */
#define HC_LAYOUT_INT "tile64-int"       /* int codes (<= 4 bits in nibbles, else bytes) */
#define HC_LAYOUT_FP4 "tile64-fp4"       /* E2M1 codes, per-group scales (NVFP4, MXFP4 fallback) */
#define HC_LAYOUT_MXFOLD "tile64-mxfold" /* MXFP4 with group exponents folded (lossless) */
#define HC_LAYOUT_FP8 "tile64-fp8"       /* E4M3 codes, per-row-per-group scales */

/* The kernel families (runtime/gpu_families.c) a codec is read by. */
#define HC_KF_GEMV 1u  /* small M: hc_mma_gemv_t1/t8/t16 */
#define HC_KF_MMA 2u   /* mma.sync GEMM: hc_mma_gemm */
#define HC_KF_WGMMA 4u /* wgmma GEMM (sm_90a): hc_wgmma_gemm */
#define HC_KF_WS 8u    /* warp-specialised wgmma GEMM (sm_90a): hc_wgmma_gemm64/128/256 */
#define HC_KF_ALL (HC_KF_GEMV | HC_KF_MMA | HC_KF_WGMMA | HC_KF_WS)

typedef struct {
    unsigned codec;       /* HC_CODEC_* (layout_core.h): the kernels' -DHC_CODEC */
    hc_tile_kind kind;
    const char *id;       /* the container's layout id */
    const char *params_kind; /* layout_params "kind" */
    unsigned version;     /* the newest version of the layout this reader knows */
    unsigned code_bits;   /* 4 or 8 bits per stored code */
    bool sign_magnitude;  /* int4 only: sign (bit 3) + magnitude, no zero point */
    const char *name;     /* for messages: "int4", "fp8 (E4M3)" */
    const char *scales;   /* what the scales are */
    unsigned families;    /* HC_KF_* */
} hc_layout_row;

/* The row of a tile's codec (kind, code width, sign-magnitude), or NULL. */
const hc_layout_row *hc__layout_row_of(hc_tile_kind kind, unsigned code_bits, bool sign_magnitude);
/* The row of a codec (HC_CODEC_*), or NULL. */
const hc_layout_row *hc__layout_by_codec(unsigned codec);
/* The first row of a layout: by container id, by layout_params kind, by kind; NULL if none. */
const hc_layout_row *hc__layout_by_id(const char *id);
const hc_layout_row *hc__layout_by_params_kind(const char *params_kind);
const hc_layout_row *hc__layout_by_kind(hc_tile_kind kind);

/* What a tile's scale entries are (hc_core_params.scale_kind): HC_SK_* for a stored dtype and
 * whether it divides; HC_SK_NONE when the dtype is not a scale type of the layouts. */
#define HC_SK_NONE 0xFFu
unsigned hc__scale_kind(hc_dtype dtype, bool divides);
/* Bytes of one scale entry of kind sk (0 for HC_SK_NONE). */
unsigned hc__scale_kind_bytes(unsigned sk);

#endif
