/* layout.h: the tiled weight layouts (docs/layouts.md) as the runtime reads them: tile
 * geometry, where each element's code sits, and how a tile's scales decode. The repackers
 * (repack/) write with the same addressing. */
#ifndef HC_LAYOUT_H
#define HC_LAYOUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "base.h"
#include "hcrt.h"
#include "layout_core.h"

#define HC_TILE_N 64 /* weight rows per tile: the MMA M side (weights are the A operand) */
#define HC_TILE_K 64 /* columns per tile: four k16 MMA steps */
#define HC_TILE_ALIGN 128

/* Layout ids as written in the container. */
#define HC_LAYOUT_INT "tile64-int"      /* int codes (<= 4 bits in nibbles, else bytes) */
#define HC_LAYOUT_FP4 "tile64-fp4"      /* E2M1 codes, per-group scales (NVFP4, MXFP4 fallback) */
#define HC_LAYOUT_MXFOLD "tile64-mxfold" /* MXFP4 with group exponents folded (lossless) */
#define HC_LAYOUT_FP8 "tile64-fp8"      /* E4M3 codes, per-row-per-group scales */
/* The newest layout version this reader knows. A tensor is written with the lowest version
 * that holds it (hc_tile_layout_version): 1, or 2 for FP8 scales that divide, so an older
 * reader refuses those by name instead of multiplying. */
#define HC_LAYOUT_VERSION 2

typedef enum { HC_TL_INT = 1, HC_TL_FP4, HC_TL_MXFOLD, HC_TL_FP8 } hc_tile_kind;

typedef struct {
    hc_tile_kind kind;
    unsigned code_bits;    /* 4 or 8 bits per stored code */
    unsigned src_bits;     /* bits of the source codes (int: 1..8) */
    uint64_t E, N, K;      /* logical */
    uint64_t Np, Kp;       /* padded to the tile */
    uint64_t g;            /* scale group along K in the layout */
    unsigned S;            /* scale columns per tile row: 64/g, or 1 when g >= 64 */
    hc_dtype scale_dtype;  /* F16, BF16, F32, F8_E4M3, F8_E8M0; U8 for mxfold (see docs) */
    bool zeros;            /* a zero-point byte per scale entry */
    int zero_const;        /* the zero point when !zeros */
    double global_div;     /* NVFP4: scales are divided by this; 0 when unused */
    bool perm;             /* columns were reordered; NAME.perm holds the source column */
    bool sign_magnitude;   /* int: codes are sign (bit 3) + magnitude, q = +-m, no zero point */
    bool scale_divides;    /* fp8: w = e4m3(u) / s (GPTQModel's weight_scale_inv; F32 scales) */
    uint64_t code_bytes, scale_bytes, zero_bytes, chunk_bytes;
    uint64_t tiles_n, tiles_k;
} hc_tile_params;

/* The layout version a tensor with these parameters is written with (see HC_LAYOUT_VERSION). */
static inline unsigned hc_tile_layout_version(const hc_tile_params *p) {
    return p->scale_divides ? 2u : 1u;
}

/* Fills the derived sizes from kind, bits, dims, g, scale dtype and zeros; false on overflow. */
bool hc_tile_geometry(hc_tile_params *p);
/* layout_params JSON (container header) <-> params. */
cJSON *hc_tile_params_json(const hc_tile_params *p);
hc_status hc_tile_params_parse(const cJSON *j, const char *layout, hc_tile_params *p,
                               const char *name, hc_err *err);

/* Stored bytes of a tiled tensor. */
static inline uint64_t hc_tile_bytes_of(const hc_tile_params *p) {
    return p->E * p->tiles_n * p->tiles_k * p->chunk_bytes;
}

/* Byte offset of tile (e, nb, kb) in the tensor. */
static inline uint64_t hc_tile_offset(const hc_tile_params *p, uint64_t e, uint64_t nb,
                                      uint64_t kb) {
    return ((e * p->tiles_n + nb) * p->tiles_k + kb) * p->chunk_bytes;
}

/* Where the code of element (r, c) of a tile (0 <= r, c < 64) sits in the tile's code area:
 * byte offset, and for 4-bit codes the nibble (0 low, 1 high). Fragment order of the
 * m16n8k16 A operand: each lane's codes for one 16-byte load are contiguous. */
void hc_tile_code_pos(unsigned code_bits, unsigned r, unsigned c, uint64_t *byte, unsigned *shift);

/* Code of element (r, c) of a tile chunk. */
static inline unsigned hc_tile_code(const hc_tile_params *p, const uint8_t *chunk, unsigned r,
                                    unsigned c) {
    uint64_t b;
    unsigned sh;
    hc_tile_code_pos(p->code_bits, r, c, &b, &sh);
    return p->code_bits == 4 ? (chunk[b] >> sh) & 15u : chunk[b];
}

/* Scale entry (row r, scale column j) as a double, and its zero point. */
double hc_tile_scale(const hc_tile_params *p, const uint8_t *chunk, unsigned r, unsigned j);
int hc_tile_zero(const hc_tile_params *p, const uint8_t *chunk, unsigned r, unsigned j);

/* mxfold: the E4M3 byte for E2M1 code u scaled by 2^d, if exact; false otherwise. */
bool hc_e4m3_of_fp4(unsigned u, int d, uint8_t *out);
/* mxfold per-row record: base exponent B (0xFF: unfolded row-tile) and group offsets. */
#define HC_MXFOLD_UNFOLDED 0xFF

/* The kernels' view of the parameters (layout_core.h). */
void hc_tile_core_params(const hc_tile_params *p, hc_core_params *c);

/* Value of element (r, c) of tile chunk (already the effective weight, in float64). */
double hc_tile_value(const hc_tile_params *p, const uint8_t *chunk, unsigned r, unsigned c);

/* Decodes rows [n0, n0 + 64) of expert e into out (64 x Kp floats, permuted column order). */
void hc_tile_decode_stripe(const hc_tile_params *p, const uint8_t *tensor, uint64_t e,
                           uint64_t nb, float *out);

/* The tiled layer NAME of a container, as both executors run it: its tensor (stored raw),
 * its parsed layout_params, and for act-order its permutation NAME.perm (a raw I32 [K] whose
 * every entry is a column index < K; NULL without act-order). HC_NOTFOUND when NAME is not
 * a tiled tensor of the container. */
hc_status hc_tile_layer(const hc_container *c, const char *name, const hc_tensor_info **t,
                        hc_tile_params *p, const int32_t **perm, hc_err *err);

#endif
