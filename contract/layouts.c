/* layouts.c: the layout table (layouts.h says what depends on it). Adding a layout or a codec
 * is one row here, its numbers in layout_core.h, its packer in repack/tiles.c and its decode in
 * layout_core.h and kernels/codec/ (docs/DESIGN.md, "a new layout"). */
#include "layouts.h"

#include <string.h>

static const hc_layout_row rows[] = {
    {HC_CODEC_INT4, HC_TL_INT, HC_LAYOUT_INT, "int", 1, HC_CODEC_CODE_BITS(HC_CODEC_INT4), false, "int4",
     "per-row-per-group F32/BF16/F16 scales, zero points as bytes or one constant", HC_KF_ALL},
    {HC_CODEC_INT4_SM, HC_TL_INT, HC_LAYOUT_INT, "int", 1, HC_CODEC_CODE_BITS(HC_CODEC_INT4_SM), true, "int4 sign-magnitude",
     "per-row-per-group F32/BF16/F16 scales, no zero point", HC_KF_ALL},
    {HC_CODEC_INT8, HC_TL_INT, HC_LAYOUT_INT, "int", 1, HC_CODEC_CODE_BITS(HC_CODEC_INT8), false, "int8",
     "per-row-per-group F32/BF16/F16 scales, zero points as bytes or one constant", HC_KF_ALL},
    {HC_CODEC_FP4, HC_TL_FP4, HC_LAYOUT_FP4, "fp4", 1, HC_CODEC_CODE_BITS(HC_CODEC_FP4), false, "fp4 (E2M1)",
     "per-row-per-group E4M3 (NVFP4, with its global divisor), E8M0 or F32 scales", HC_KF_ALL},
    {HC_CODEC_MXFOLD, HC_TL_MXFOLD, HC_LAYOUT_MXFOLD, "mxfold", 1,
     HC_CODEC_CODE_BITS(HC_CODEC_MXFOLD), false, "mxfold",
     "a base exponent per row and tile, group exponents folded into the codes", HC_KF_ALL},
    {HC_CODEC_FP8, HC_TL_FP8, HC_LAYOUT_FP8, "fp8", 2, HC_CODEC_CODE_BITS(HC_CODEC_FP8), false, "fp8 (E4M3)",
     "per-row-per-group F32/BF16/F16 scales that multiply, or F32 divisors (version 2)",
     HC_KF_ALL},
};
#define NROWS (sizeof rows / sizeof rows[0])

const hc_layout_row *hc__layout_row_of(hc_tile_kind kind, unsigned code_bits, bool sign_magnitude) {
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].kind == kind && rows[i].code_bits == code_bits &&
            rows[i].sign_magnitude == sign_magnitude)
            return &rows[i];
    return NULL;
}

const hc_layout_row *hc__layout_by_codec(unsigned codec) {
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].codec == codec) return &rows[i];
    return NULL;
}

const hc_layout_row *hc__layout_by_id(const char *id) {
    for (size_t i = 0; id && i < NROWS; i++)
        if (!strcmp(rows[i].id, id)) return &rows[i];
    return NULL;
}

const hc_layout_row *hc__layout_by_params_kind(const char *params_kind) {
    for (size_t i = 0; params_kind && i < NROWS; i++)
        if (!strcmp(rows[i].params_kind, params_kind)) return &rows[i];
    return NULL;
}

const hc_layout_row *hc__layout_by_kind(hc_tile_kind kind) {
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].kind == kind) return &rows[i];
    return NULL;
}

static const struct {
    hc_dtype dtype;
    bool divides;
    unsigned sk;
} scale_kinds[] = {
    {HC_DT_F32, false, HC_SK_F32},   {HC_DT_BF16, false, HC_SK_BF16},
    {HC_DT_F16, false, HC_SK_F16},   {HC_DT_F8_E4M3, false, HC_SK_E4M3},
    {HC_DT_F8_E8M0, false, HC_SK_E8M0}, {HC_DT_F32, true, HC_SK_F32_DIV},
};
#define NSK (sizeof scale_kinds / sizeof scale_kinds[0])

unsigned hc__scale_kind(hc_dtype dtype, bool divides) {
    for (size_t i = 0; i < NSK; i++)
        if (scale_kinds[i].dtype == dtype && scale_kinds[i].divides == divides)
            return scale_kinds[i].sk;
    return HC_SK_NONE;
}

unsigned hc__scale_kind_bytes(unsigned sk) {
    for (size_t i = 0; i < NSK; i++)
        if (scale_kinds[i].sk == sk) return HC_SK_BYTES(sk);
    return 0;
}
