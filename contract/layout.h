/* layout.h: the tiled weight layouts (docs/layouts.md): tile geometry, where each element's
 * code sits, and how a tile's scales decode -- the contract between the writer (repack/,
 * convert/) and the readers (runtime/, kernels/). Which layouts exist is layouts.h's table. */
#ifndef HC_LAYOUT_H
#define HC_LAYOUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "base.h"
#include "hcrt.h"
#include "layout_core.h"
#include "layouts.h"

#define HC_TILE_N 64 /* weight rows per tile: the MMA M side (weights are the A operand) */
#define HC_TILE_K 64 /* columns per tile: four k16 MMA steps */
#define HC_TILE_ALIGN 128

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

/* The layout version a tensor with these parameters is written with: the lowest that holds it
 * -- 1, or 2 for FP8 scales that divide -- so an older reader refuses those by name instead of
 * multiplying. The newest version each layout has is its row's (contract/layouts.c); the
 * reader refuses anything newer. */
static inline unsigned hc__tile_layout_version(const hc_tile_params *p) {
    return p->scale_divides ? 2u : 1u;
}

/* Whether the fast GPU kernels read a tiled layer with these parameters: the one statement of
 * that rule -- the GPU loader refuses by it (runtime/gpu_modules.c) and validate's family
 * report predicts by it (repack/families.c); each words its own message. */
typedef enum {
    HC_GPU_RUNS = 0,
    HC_GPU_NO_CODEC,     /* no codec row of the layout table reads it */
    HC_GPU_SMALL_GROUPS, /* more than 4 scale groups per tile row: the kernels apply one scale
                          * per k16 step at most, so groups of at least 16 columns */
    HC_GPU_FP4_DIVISOR,  /* an FP4 global divisor with non-E4M3 scales (kernels: E4M3 only) */
    HC_GPU_WIDE_K,       /* K >= HC_GPU_K_LIMIT: the tensor maps' coordinates are 32-bit signed
                          * (and no kernel was ever run past them) */
    HC_GPU_ZERO_RANGE,   /* a 4-bit code's zero point above HC_GPU_ZERO4_MAX: the kernels take
                          * 128 + z off as the bf16 bits 0xC300 | z (kernels/codec/codes.cuh
                          * zero_operand), exact for z <= 127 only */
} hc_gpu_rule;
#define HC_GPU_K_LIMIT (1ull << 31)
#define HC_GPU_ZERO4_MAX 127
hc_gpu_rule hc__tile_gpu_rule(const hc_tile_params *p);
/* Whether the GPU decode takes zero point z of code_bits-bit offset codes exactly: the one
 * statement of that bound -- repack leaves a module with one past it in its source layout
 * (repack/tiles.c), hc__tile_gpu_rule checks a layer's constant and hc__tile_gpu_rule_zeros
 * its stored bytes (a container written before the repack rule). */
static inline bool hc__gpu_zero_fits(unsigned code_bits, long z) {
    return code_bits != 4 || z <= HC_GPU_ZERO4_MAX;
}
/* Where hc__tile_gpu_rule_zeros found a zero point the GPU does not take. */
typedef struct {
    uint64_t chunk; /* the chunk's index in the stored bytes (expert-major, then tile row, K) */
    unsigned row;   /* tile row 0..63 */
    unsigned group; /* scale column 0..S-1 */
    unsigned value;
} hc_tile_zero_at;
/* The per-group zero-point bytes of len stored bytes of a tiled layer (whole chunks from the
 * first) by hc__gpu_zero_fits: HC_GPU_RUNS, or HC_GPU_ZERO_RANGE and the first one past it in
 * *at. Layers without per-group zero points (or not offset codes) pass at once. */
hc_gpu_rule hc__tile_gpu_rule_zeros(const hc_tile_params *p, const uint8_t *data, uint64_t len,
                                    hc_tile_zero_at *at);

/* Fills the derived sizes from kind, bits, dims, g, scale dtype and zeros; false on overflow. */
bool hc__tile_geometry(hc_tile_params *p);
/* layout_params JSON (container header) <-> params. */
cJSON *hc__tile_params_json(const hc_tile_params *p);
hc_status hc__tile_params_parse(const cJSON *j, const char *layout, hc_tile_params *p,
                               const char *name, hc_err *err);

/* Stored bytes of a tiled tensor. */
static inline uint64_t hc__tile_bytes_of(const hc_tile_params *p) {
    return p->E * p->tiles_n * p->tiles_k * p->chunk_bytes;
}

/* Byte offset of tile (e, nb, kb) in the tensor. */
static inline uint64_t hc__tile_offset(const hc_tile_params *p, uint64_t e, uint64_t nb,
                                      uint64_t kb) {
    return ((e * p->tiles_n + nb) * p->tiles_k + kb) * p->chunk_bytes;
}

/* Where the code of element (r, c) of a tile (0 <= r, c < 64) sits in the tile's code area:
 * byte offset, and for 4-bit codes the nibble (0 low, 1 high). Fragment order of the
 * m16n8k16 A operand: each lane's codes for one 16-byte load are contiguous. */
void hc__tile_code_pos(unsigned code_bits, unsigned r, unsigned c, uint64_t *byte, unsigned *shift);

/* mxfold: the E4M3 byte for E2M1 code u scaled by 2^d, if exact; false otherwise. */
bool hc__e4m3_of_fp4(unsigned u, int d, uint8_t *out);
/* mxfold per-row record: base exponent B (0xFF: unfolded row-tile) and group offsets. */
#define HC_MXFOLD_UNFOLDED 0xFF

/* The kernels' view of the parameters (layout_core.h). */
void hc__tile_core_params(const hc_tile_params *p, hc_core_params *c);

/* Value of element (r, c) of tile chunk (already the effective weight, in float64). */
double hc__tile_value(const hc_tile_params *p, const uint8_t *chunk, unsigned r, unsigned c);

/* Decodes rows [n0, n0 + 64) of expert e into out (64 x Kp floats, permuted column order). */
void hc__tile_decode_stripe(const hc_tile_params *p, const uint8_t *tensor, uint64_t e,
                           uint64_t nb, float *out);

#endif
