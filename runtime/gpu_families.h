/* gpu_families.h: the registry of the fast kernels' families (kernels/tile_mma.cu), one entry
 * each -- small-M, skinny, warp-specialised, wgmma, mma.sync, skinny-q: entry names, block, shared memory (from
 * kernels/config.h), argument shape, the HC_KF_* bit layouts carry (contract/layouts.h), the
 * architecture and driver entry they need, the M they serve. The module builder takes the
 * kernels to fetch and their shared memory from it, the chooser (gpu_plan.h) the rest. */
#ifndef HC_GPU_FAMILIES_H
#define HC_GPU_FAMILIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every kernel of the families, as the runtime names them (a module holds one of each). */
typedef enum {
    HC_GK_GEMV_T1,  /* hc_mma_gemv_t1: M = 1 */
    HC_GK_GEMV_T8,  /* hc_mma_gemv_t8: M <= 8 */
    HC_GK_GEMV_T16, /* hc_mma_gemv_t16: M <= 16 */
    HC_GK_WS64,     /* hc_wgmma_gemm64 */
    HC_GK_WS128,    /* hc_wgmma_gemm128 */
    HC_GK_WS256,    /* hc_wgmma_gemm256 */
    HC_GK_WGMMA,    /* hc_wgmma_gemm */
    HC_GK_MMA,      /* hc_mma_gemm */
    HC_GK_SKINNY16, /* hc_skinny_gemm16 */
    HC_GK_SKINNY32, /* hc_skinny_gemm32 */
    HC_GK_SKINNY64, /* hc_skinny_gemm64 */
    HC_GK_SKINNY16Q, /* hc_skinny_gemm16q: K in quads inside the block, no fix-up (v59) */
    HC_GK_SKINNY32Q, /* hc_skinny_gemm32q */
    HC_GK_SKINNY64Q, /* hc_skinny_gemm64q (v60) */
    HC_GK_WS128K,    /* hc_wgmma_gemm128k: ws128's tiles cut stream-K (v84; the pick in skinny64's
                      * place past 64 tokens, gpu_plan.c streamk_tiles_instead) */
    HC_GK_COUNT
} hc_gpu_kernel;

/* How a family's kernels take their arguments:
 * GEMV (w, hc_mma_params, expert, x, m, y, split-K partial sums, split-K counters);
 * GEMM (w, hc_mma_params, expert, x, m, y, tensor map of x -- read by the TMA kernels only);
 * STREAMK (GEMM's, then the segments' partial sums and a counter per output tile). */
typedef enum { HC_GPU_ARGS_GEMV, HC_GPU_ARGS_GEMM, HC_GPU_ARGS_STREAMK } hc_gpu_args;

/* The most tokens one call takes: 65535 blocks of 128 tokens (grid.y). */
#define HC_GPU_M_MAX (65535ull * 128)

typedef struct {
    hc_gpu_kernel id;
    const char *entry;  /* the kernel's name in the module */
    const char *forced; /* its name for hc_gpu_model_force_kernel, NULL: not forcible */
    unsigned toks;      /* GEMM: tokens per block tile; GEMV: tokens of its partial sums */
    unsigned m_max;     /* GEMV: the largest M it runs (activation rows a stage holds); 0 */
    unsigned stages;    /* pipeline stages (kernels/config.h) */
} hc_gpu_variant;

typedef struct hc_gpu_family {
    const char *name;      /* for messages: "warp-specialised" */
    unsigned kf;           /* HC_KF_*: the layouts whose row carries it are read by it */
    hc_gpu_args args;
    unsigned block;        /* threads per block */
    const char *arch;      /* the architecture it needs ("sm_90a"), NULL: any */
    bool tmap;             /* needs cuTensorMapEncodeTiled (libcuda.so.1) */
    bool pdl;              /* launched under programmatic dependent launch (where available) */
    uint64_t m_min, m_max; /* the tokens per call it serves */
    /* dynamic shared memory of variant v for tiles of chunk bytes */
    size_t (*smem)(const hc_gpu_variant *v, uint64_t chunk);
    unsigned nvar;
    hc_gpu_variant var[3]; /* GEMM: token tiles ascending */
} hc_gpu_family;

/* The families, in the chooser's order of preference (hc__gpu_families()[i], i < *n). */
const hc_gpu_family *hc__gpu_families(size_t *n);
/* The family and variant of kernel k (NULL for an id out of range). */
const hc_gpu_family *hc__gpu_kernel_family(hc_gpu_kernel k, const hc_gpu_variant **v);
/* Whether family f can run on architecture arch with (tmap) or without the tensor-map encoder. */
bool hc__gpu_family_runs_on(const hc_gpu_family *f, const char *arch, bool tmap);

/* ---- the grouped MoE GEMMs (kernels/moe_gemm.cu, built per kind of layer for models with MoE
 * layers): each is a dense variant's body over the routing's tiles, so its block, shared
 * memory, architecture and layouts are that variant's (like). ---- */
typedef enum {
    HC_GMK_T8,    /* hc_moe_gemv_t8: tiles of 8 rows */
    HC_GMK_T16,   /* hc_moe_gemv_t16 */
    HC_GMK_WS64,  /* hc_moe_ws64 (sm_90a) */
    HC_GMK_WS128, /* hc_moe_ws128 */
    HC_GMK_WS256, /* hc_moe_ws256 */
    HC_GMK_SKINNY16, /* hc_moe_skinny16 (sm_90a): tiles of 16 rows */
    HC_GMK_SKINNY32, /* hc_moe_skinny32: tiles of 32 rows */
    HC_GMK_SKINNY64, /* hc_moe_skinny64 */
    HC_GMK_W8,       /* hc_moe_gemv_w8: tiles of 8 rows, items a warp owns (gemm/gemv_items.cuh) */
    HC_GMK_WS96,     /* hc_moe_ws96 (sm_90a): tiles of 96 rows, no dense twin (v62; forced
                      * only since moe-ws96w took its band) */
    HC_GMK_WS256R,   /* hc_moe_ws256r (sm_90a): tiles of 256 rows and of 64 (an expert's
                      * remainder; v63: forced only) */
    HC_GMK_WS288,    /* hc_moe_ws288 (sm_90a): tiles of 288 rows, no dense twin (v68) */
    HC_GMK_WS96W,    /* hc_moe_ws96w (sm_90a): tiles of 96 rows, four stripes a block (v69) */
    HC_GMK_WS24X6,   /* hc_moe_ws24x6 (sm_90a): tiles of 24 rows, six stripes a block (v72) */
    HC_GMK_WS80R,    /* hc_moe_ws80r (sm_90a): tiles of 80 rows and of 64, four stripes a
                      * block (v78) */
    HC_GMK_WS80D,    /* hc_moe_ws80d (sm_90a): tiles of 80 rows, two blocks an SM (v79) */
    HC_GMK_SKINNY24, /* hc_moe_skinny24 (sm_90a): the skinny body at tiles of 24 rows (v91:
                      * the pick at r = 10-16) */
    HC_GMK_WS160,    /* hc_moe_ws160 (sm_90a): tiles of 160 rows, no dense twin (v108) */
    HC_GMK_COUNT
} hc_gpu_moe_kernel;

typedef struct {
    hc_gpu_moe_kernel id;
    const char *entry;  /* in moe_gemm.cu */
    const char *forced; /* its name for hc_gpu_model_force_kernel */
    hc_gpu_kernel like; /* the dense variant it mirrors */
    /* its dynamic shared memory for a layout's chunk where it is not its dense variant's
     * (family smem), else NULL: read it through hc__gpu_moe_smem */
    size_t (*smem)(uint64_t chunk);
    /* its static shared memory past the few bytes every kernel has (hc__gpu_smem_fits's
     * margin): moe-w8's item descriptors, else 0 */
    size_t stat;
    /* its token tile where it is not its dense variant's (moe-ws96, moe-ws160, moe-ws288,
     * moe-ws96w: the dense family's body and stages at another tile), else 0: read it through
     * hc__gpu_moe_like */
    unsigned toks;
    /* the route's second tile, rows (an expert's remainder past its tiles of toks: moe_args.h),
     * 0: one tile size */
    unsigned small;
    /* a warp-specialised block's stripes where not its dense variant's two (moe-ws96w: four,
     * two a consumer warpgroup; moe-ws24x6: six), else 0: read it through
     * hc__gpu_moe_stripes */
    unsigned stripes;
    /* blocks an SM where more than one (moe-ws80d: two; its launch bounds and registers,
     * config.h HC_WS_PREGS / HC_WS_CREGS; the runtime asks for the shared-memory carveout that
     * holds them), else 0 */
    unsigned bps;
} hc_gpu_moe_variant;

/* The family of grouped kernel mv, *v its dense variant at mv's token tile. */
const hc_gpu_family *hc__gpu_moe_like(const hc_gpu_moe_variant *mv, hc_gpu_variant *v);
/* The dynamic shared memory grouped kernel mv needs for tiles of chunk bytes. */
size_t hc__gpu_moe_smem(const hc_gpu_moe_variant *mv, uint64_t chunk);
/* Its token tile (rows of the routing's tiles). */
unsigned hc__gpu_moe_tile(const hc_gpu_moe_variant *mv);
/* The stripes a block of a warp-specialised grouped kernel mv takes (its grid's x: the
 * projection's stripes in groups of these, per part). */
unsigned hc__gpu_moe_stripes(const hc_gpu_moe_variant *mv);

/* The grouped kernels (hc__gpu_moe_variants()[i], i < *n == HC_GMK_COUNT). */
const hc_gpu_moe_variant *hc__gpu_moe_variants(size_t *n);

#endif
