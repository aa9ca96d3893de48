/* plan.h: convert's planning pass and the writer's fill of tiled modules, which share each
 * module's decode: the pass decodes a module once, plans its tiles for every rank and keeps
 * the decoded tensor for the fill when its held form, estimated before the decode, fits a
 * budget; a module beyond it is planned from its scales and decoded again when written
 * (docs/convert.md "Decoding"). Internal to convert/. */
#ifndef HC_CONV_PLAN_H
#define HC_CONV_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "quant.h"
#include "tiles.h"

/* Decoded tensors kept by the planning pass, by bytes (HC_CONV_HOLD_BYTES): 128 MiB keeps
 * convert's peak memory within its bound, twice the largest tensor per thread + 256 MB
 * (bench/NOTES.md, convert_bench), where 1 GiB of held scales would exceed it on any
 * checkpoint over ~2 GB. */
#define HC_CONV_HOLD_DEFAULT (128ull << 20)

/* One module's decode, as the planning pass leaves it for the fill. */
typedef struct {
    hc_qtensor q;    /* when held: what the fill packs (or cuts) */
    bool held;
    bool fill_codes; /* the fill needs the codes: an unpacked source, act-order or a --tp cut */
} hc_conv_decode;

/* The modules' decodes, shared by every rank's plan. */
typedef struct {
    hc_conv_decode *v; /* per module */
    size_t n;
    uint64_t budget;     /* bytes of decoded tensors the planning pass may keep */
    uint64_t held_bytes; /* of the budget, taken: kept, and reserved for decodes under way */
    /* the rest updated atomically too */
    uint64_t held_now, held_peak; /* bytes of decodes kept (never above the budget) */
    uint64_t decodes;    /* hc__module_decode calls of the run */
    uint64_t wasted;     /* planning decodes with codes dropped for want of room */
} hc_conv_decodes;

/* One rank's plan, made by the planning pass and read by the writer's fill calls. */
typedef struct {
    const hc_model *md;
    unsigned rank, tp;
    const char *role;       /* per module: 'c', 'r' or 0 */
    hc_tile_plan *plan;     /* per module */
    bool *tiled;            /* per module */
    hc_tile_stats *stats;   /* per module, filled by the writer */
    hc_conv_decodes *dec;   /* shared by the ranks */
} hc_conv_plan;

/* Plans every module for the tp ranks of cps (in parallel, threads of them; repack 0: the
 * source layouts are kept, only MoE experts are decoded, for the checks). Refuses what
 * validate rejects, and with tp > 1 what cannot be cut. */
hc_status hc__conv_plan_modules(const hc_model *md, hc_conv_plan *cps, unsigned tp, int threads,
                                bool repack, hc_err *err);
/* The writer's fill callback of a tiled module (ctx: its rank's hc_conv_plan): the held decode
 * or a new one, the rank's cut, the tiles. */
hc_status hc__conv_fill_tiles(void *ctx, size_t i, void *dst, hc_err *err);
/* Frees what is still held (a dry run or a failed write leaves decodes unused). */
void hc__conv_decodes_free(hc_conv_decodes *d);

#endif
