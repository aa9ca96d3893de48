/* gpu_plan.h: the launch decisions of the GPU runtime that need no GPU, as pure functions, so
 * that tests check them on any machine (tests/t_plan.c, tests/t_jit.c): which kernel runs a
 * layer for M tokens on a device (hc__gpu_choose, over the family registry gpu_families.h), and
 * the small-M kernels' K split. hc_gpu_linear is this choice plus its launch. */
#ifndef HC_GPU_PLAN_H
#define HC_GPU_PLAN_H
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "gpu_families.h"

/* The K split of the small-M kernels (hc_mma_gemv_t*): grid = tiles_n x ksplit blocks on sms
 * multiprocessors holding occ resident blocks each -- the largest split whose grid is one wave
 * of resident blocks, a warp keeping at least two tiles (ksplit <= tiles_k / 8). Measured
 * against a per-multiprocessor balance model (28672 rows split in 2: slower) and against
 * leaving resident places free for the next kernel under PDL (slower): bench/NOTES.md v24,
 * v28. */
static inline unsigned hc__gemv_ksplit(uint64_t tiles_n, uint64_t tiles_k, uint64_t sms,
                                      uint64_t occ) {
    uint64_t most = tiles_k / 8;
    if (most < 1) most = 1;
    if (tiles_n < 1 || sms < 1 || occ < 1) return 1;
    uint64_t want = sms * occ / tiles_n;
    return (unsigned)(want < 1 ? 1 : want < most ? want : most);
}

/* What the chooser needs of the device. */
typedef struct {
    const char *arch; /* "sm_90a" */
    uint64_t sms;     /* multiprocessors */
    bool tmap;        /* cuTensorMapEncodeTiled is there (libcuda.so.1) */
    uint64_t smem_sm; /* shared memory of a multiprocessor, bytes (the driver's attribute) */
    uint64_t smem_block; /* the most a block may have, static included (the opt-in attribute:
                            99 KiB on sm_86/sm_89, 163 KiB on sm_80, 227 KiB on sm_90); 0:
                            unknown, no limit */
} hc_gpu_caps;

/* Whether a kernel whose dynamic shared memory is dyn bytes can run on dev: dyn and the
 * kernels' few static bytes (at most HC_SMEM_STATIC_MARGIN; moe-w8's descriptors are its plan's
 * own check) within the block's opt-in limit. The chooser skips or refuses a variant that
 * does not fit and the module loader (gpu_modules.c) raises no kernel's attribute past it. */
#define HC_SMEM_STATIC_MARGIN 1024u
static inline bool hc__gpu_smem_fits(const hc_gpu_caps *dev, uint64_t dyn) {
    return !dev->smem_block || dyn + HC_SMEM_STATIC_MARGIN <= dev->smem_block;
}

/* What the chooser needs of the layer. */
typedef struct {
    uint64_t tiles_n, tiles_k, chunk_bytes;
    unsigned families;    /* HC_KF_* of its layout row (contract/layouts.h) */
    unsigned gemv_occ[3]; /* resident blocks per SM of the small-M variants (t1, t8, t16) with
                             this layer's shared memory (of an MoE projection:
                             the grouped moe-t8/t16, hc__gpu_moe_gemv_occupancy); 0: unknown
                             (no K split) */
    unsigned code_bits;   /* bits a stored code: 4 or 8 (0: not known -- as 8) */
} hc_gpu_shape;

/* No forced kernel: the chooser picks (hc_gpu_model_force_kernel "auto"). */
#define HC_GPU_KERNEL_AUTO (-1)

/* One launch: the kernel and how. */
typedef struct {
    const hc_gpu_family *family;
    const hc_gpu_variant *variant;
    hc_gpu_kernel kernel;
    unsigned grid[2], block; /* grid.x, grid.y; threads */
    size_t smem;             /* dynamic shared memory */
    unsigned ksplit;         /* small M: K split over grid.y blocks (1: none) */
    uint64_t part_bytes;     /* small M: bytes of the split's partial sums (used when ksplit > 1);
                                skinny: of the segments' partial sums */
    uint64_t cnt_bytes;      /* small M: bytes of its per-stripe counters (ksplit > 1), skinny:
                                of its per-output-tile counters, else 0 */
    unsigned tmap_toks;      /* GEMM by TMA: the tensor map's box of tokens; 0: no tensor map */
} hc_gpu_choice;

/* Forced grouped MoE kernels are HC_GPU_MOE_FORCED + their hc_gpu_moe_kernel; "moe-act-apart"
 * (the MoE activation in a launch of its own, hc_moe_act, where hc__gpu_moe_fuse_plan would
 * put it in gate_up's epilogue; beside whichever kernel runs: the tests' reference for the
 * fused epilogue) is HC_GPU_MOE_ACT_APART. */
#define HC_GPU_MOE_FORCED 1000
#define HC_GPU_MOE_ACT_APART 2000
/* "moe-w8-lap": moe-w8 forced on a grid of one block, so that each warp's ring of item
 * descriptors (kernels/gemm/gemv_items.cuh) laps even on the tests' small layers */
#define HC_GPU_MOE_W8_LAP 2001
/* The forced kernel (HC_GPU_KERNEL_AUTO, an hc_gpu_kernel or HC_GPU_MOE_FORCED + an
 * hc_gpu_moe_kernel) a name stands for: NULL, "" or "auto", "t8", "t16", "mma", "wgmma",
 * "ws64", "ws128", "ws256", "skinny16", "skinny32", "skinny64", "skinny16q", "skinny32q",
 * "skinny64q", "moe-t8", "moe-t16", "moe-ws64", "moe-ws128", "moe-ws256", "moe-skinny16",
 * "moe-skinny32", "moe-skinny64", "moe-w8", "moe-ws96", "moe-ws256r", "moe-ws288",
 * "moe-ws96w", "moe-ws24x6", "moe-ws80r", "moe-ws80d", "moe-skinny24", "moe-ws160",
 * "moe-act-apart", "moe-w8-lap".
 * HC_USAGE naming it for any other. */
hc_status hc__gpu_force_parse(const char *name, int *forced, hc_err *err);
/* HC_UNSUPPORTED, naming the kernel and the device, when a forced kernel cannot run on dev. */
hc_status hc__gpu_force_check(const hc_gpu_caps *dev, int forced, hc_err *err);

/* The kernel for m tokens of a layer on dev: the forced kernel where its family serves m, else
 * the first family (in the registry's order: small-M for M <= 16, skinny for M <= 64,
 * warp-specialised, wgmma, mma.sync) the device and the layout allow -- but for 8 < M <= 16
 * skinny's tiles of 16 where every block gets at least 16 of its work items (a large layer,
 * gpu_plan.c HC_SKINNY16_MIN_ITEMS). Small M: the variant for
 * M with the K split of hc__gemv_ksplit. Skinny: the smallest token tile holding M (else the
 * largest), a persistent grid of one block per SM, fewer where a block would get under
 * HC_SKINNY_MIN_TILES work items. Warp-specialised: the largest token tile at most half empty,
 * made smaller while the grid would leave a quarter of the SMs idle. Refusals (err, without the
 * layer's name): M above HC_GPU_M_MAX, a forced kernel the device or the layout does not have,
 * a grid over 65535 blocks, no family for M. */
hc_status hc__gpu_choose(const hc_gpu_caps *dev, const hc_gpu_shape *layer, uint64_t m,
                        int forced, hc_gpu_choice *out, hc_err *err);

/* ---- mixture of experts (runtime/gpu_moe.c) ---- */

/* A call's routing shape: slots (tokens x topk) over el local experts, and the grouped kernel
 * and token tile T the projections run with (the routing tables are sorted for T; a
 * projection's launch may run another kernel of the same tile: hc_gpu_moe_launch.kernel). */
typedef struct {
    hc_gpu_moe_kernel kernel;
    bool forced;                 /* kernel was forced: every projection runs it */
    unsigned tile;               /* T */
    unsigned tile_small;         /* Ts: an expert's remainder in a tile of Ts rows (moe_args.h),
                                  * 0: tiles of T only */
    uint64_t touched;            /* the most experts the slots can reach: min(el, slots) */
    uint64_t tiles_max;          /* the most tiles: (slots + touched (T - 1)) / T; with Ts,
                                  * slots / T + touched (also the most of one size: the
                                  * grouped GEMMs' grid.y) */
    uint64_t rows_max;           /* the most sorted rows, pads included: tiles_max x T; with
                                  * Ts, slots + touched (max(T - Ts, Ts) - 1), at least T */
    unsigned sort_blocks;        /* the routing sort's blocks: 1 (hc_moe_route) or 2..32
                                  * (hc_moe_route_count, then _place) */
} hc_gpu_moe_route;

/* The grouped kernel for `slots` slots over el experts (forced: HC_GPU_KERNEL_AUTO or an
 * hc_gpu_moe_kernel), the layers' HC_KF_* bits ANDed in families and the wider of their code
 * widths code_bits (4 or 8; 0 as 8): r = ceil(slots / touched)
 * rows per touched expert, and the tile T that holds r + 2 sqrt(r) rows (the spread of an
 * expert's count around r), the smallest of 8, 16, 32, 64: T = 8 the small-M kernel's tiles of
 * 8; else where the device and the layout have them the skinny kernel of T rows for r <= 64
 * and the warp-specialised 128 or 256 rows above; else tiles of 16 (bench/NOTES.md MoE v5: at
 * r = 8, 16, 32 the tile of about 2r measured fastest on the three bench blocks, e.g. Qwen3-like
 * M = 256 skinny32 185.6 vs t16 235.5 us a block; MoE v2: a 64-row tile at r = 16 slower than
 * tiles of 16, 174 vs
 * 126 us). Refusals: no slot or expert, a tile count over 65535 (grid). The skinny kernels'
 * launch (hc__gpu_moe_gemm_plan): one block per SM, 2 x SMs stream-K segments of 256 x T
 * float32 sums and a counter per (tile, part, 4-stripe quad). */
hc_status hc__gpu_moe_route_plan(const hc_gpu_caps *dev, unsigned families, unsigned code_bits,
                                uint64_t slots, uint64_t el, int forced, hc_gpu_moe_route *out,
                                hc_err *err);

/* One grouped GEMM launch of layer l (parts 1, or 2 for separate gate and up layers) for route
 * r: the kernel -- the route's, or where the route runs moe-t8 unforced, moe-w8 for a
 * projection of short K with at least an item for each warp of its wave (MoE down at M >= 16) --
 * grid, block, shared memory; small M also the K split (hc__gemv_ksplit over the stripes of
 * every possible tile) and its workspace (partial sums and counters per tile and part). */
typedef struct {
    hc_gpu_moe_kernel kernel;
    hc_gpu_args args; /* its family's kernel arguments */
    unsigned grid[3], block;
    size_t smem;
    unsigned ksplit;
    uint64_t part_bytes, cnt_bytes;
} hc_gpu_moe_launch;
hc_status hc__gpu_moe_gemm_plan(const hc_gpu_caps *dev, const hc_gpu_shape *l, unsigned parts,
                               const hc_gpu_moe_route *r, hc_gpu_moe_launch *out, hc_err *err);

/* The MoE activation in gate_up's epilogue (moe_args.h fuse; kernels/epilogue/moe_act.cuh)
 * for launch lu, a layer of `parts` gate_up parts (interleaved rows where interleaved),
 * intermediate size I: 0 where it cannot (not a warp-specialised launch, an act-order down --
 * hc_moe_act permutes its columns --, gate and up with NVFP4 divisors of their own, stacked
 * halves not on a stripe boundary; a route of one tile size or two alike); 2 (pairs) for
 * interleaved rows; else 1 (halves), *ustripes up's first stripe past gate's where stacked
 * (I / 64, else 0) and lu's grid.x made the groups of half a block's stripes over one half's
 * ceil(I / 64). */
unsigned hc__gpu_moe_fuse_plan(hc_gpu_moe_launch *lu, unsigned parts, bool interleaved, uint64_t I,
                               bool part_divisors, bool down_perm, uint64_t *ustripes);

#endif
