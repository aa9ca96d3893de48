// kind.cuh: the kind of layer a tile_mma.cu module is built for, and the tile geometry that
// follows from it. The host builds one module per kind of layer a model holds (runtime/), with
// four required options: -DHC_CODEC (HC_CODEC_*), -DHC_SK (HC_SK_*, the scale entries),
// -DHC_LGS (log2 of the k16 steps per scale group: 0, 1 or 2) and -DHC_ZP (1: a zero-point
// byte per scale entry). Everything below is then a constant, so the decode has no run-time
// branches (2.3x at M = 1 against modules that read the geometry from hc_mma_params).
#ifndef HC_K_CODEC_KIND_CUH
#define HC_K_CODEC_KIND_CUH

#include "config.h"
#include "layout_core.h"

#if !defined(HC_CODEC) || !defined(HC_SK) || !defined(HC_LGS) || !defined(HC_ZP)
#error "tile_mma.cu is built for one kind of layer: -DHC_CODEC, -DHC_SK, -DHC_LGS and -DHC_ZP are all required"
#endif
#if HC_CODEC < HC_CODEC_INT4 || HC_CODEC >= HC_CODEC_COUNT
#error "-DHC_CODEC is not one of layout_core.h's HC_CODEC_* numbers"
#endif
#if HC_SK < HC_SK_F32 || HC_SK >= HC_SK_COUNT
#error "-DHC_SK is not one of layout_core.h's HC_SK_* numbers"
#endif
#if HC_LGS < 0 || HC_LGS > 2
#error "-DHC_LGS (log2 of the k16 steps per scale group) must be 0, 1 or 2"
#endif
#if HC_ZP != 0 && HC_ZP != 1
#error "-DHC_ZP must be 0 or 1"
#endif

#define HC_CODE_BITS HC_CODEC_CODE_BITS(HC_CODEC)
/* the codecs whose codes are offset by a zero point (per entry with HC_ZP, else zero_const) */
#define HC_HAS_ZERO (HC_CODEC == HC_CODEC_INT4 || HC_CODEC == HC_CODEC_INT8)

/* a 64 x 64 tile chunk (docs/layouts.md): codes, scales (for folded MXFP4 a 4-byte record per
 * row), zero points, padded to 128 bytes */
#define HC_SCALE_COLS (1u << (2 - HC_LGS)) /* scale columns per tile row */
#define HC_CODE_BYTES (64u * 64u * HC_CODE_BITS / 8u)
#if HC_CODEC == HC_CODEC_MXFOLD
#define HC_SCALE_BYTES (64u * HC_MXFOLD_RECORD_BYTES)
#else
#define HC_SCALE_BYTES (64u * HC_SCALE_COLS * HC_SK_BYTES(HC_SK))
#endif
#define HC_CHUNK_BYTES                                                                         \
    ((hc_u64)((HC_CODE_BYTES + HC_SCALE_BYTES + (HC_ZP ? 64u * HC_SCALE_COLS : 0u) + 127u) /  \
              128u * 128u))
static_assert(HC_CHUNK_BYTES <= HC_CHUNK_MAX, "a tile chunk larger than config.h's HC_CHUNK_MAX");

/* Scales that are bf16 numbers (bf16, E8M0, E4M3 without NVFP4's divisor, folded MXFP4
 * exponents): the product of an exact bf16 value and such a scale is exact in float32, so one
 * bf16x2 FMA (addend -0) rounds it exactly as float32-multiply-then-round does. */
#define HC_SCALE_IS_BF16                                                                       \
    (HC_CODEC == HC_CODEC_MXFOLD || HC_SK == HC_SK_BF16 || HC_SK == HC_SK_E8M0 ||              \
     (HC_SK == HC_SK_E4M3 && HC_CODEC != HC_CODEC_FP4))

#endif
