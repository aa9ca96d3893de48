/* gpu_families.c: the kernel-family registry (gpu_families.h): one entry per family of
 * kernels/tile_mma.cu, its shared memory written from the constants of kernels/config.h (the
 * kernels size their buffers from the same constants). A new family is one entry here, its
 * kernels in kernels/, its branch of the chooser (gpu_plan.c) and tests in tests/t_plan.c (the
 * choice) and tests/t_registry.c (its entry and shared memory). */
#include "gpu_families.h"

#include <string.h>

#include "config.h"
#include "layouts.h"

/* small M: 4 warps x (stages x (a chunk for each stripe of the block + the activation rows of
 * a stage x 128 bytes) + a zero row that the tokens past M read, where a stage holds fewer rows
 * than the partial sums) */
static size_t gemv_smem_of(unsigned stages, unsigned stripes, unsigned m_max, unsigned toks,
                           uint64_t chunk) {
    return 4 * ((size_t)stages * ((size_t)stripes * chunk + (size_t)m_max * 128) +
                (m_max < toks ? 128 : 0));
}
static size_t gemv_smem(const hc_gpu_variant *v, uint64_t chunk) {
    return gemv_smem_of(v->stages, HC_GEMV_STRIPES(v->toks, chunk), v->m_max, v->toks, chunk);
}
/* the grouped hc_moe_gemv_t16: one stripe a block (the dense t16 may take two) */
static size_t moe_gemv16_smem(uint64_t chunk) {
    return gemv_smem_of(HC_GEMV_STAGES, 1, 16, 16, chunk);
}

/* warp-owned small-M items (hc_moe_gemv_w8): 4 warps x stages x (chunk + 8 activation rows x
 * 128 bytes); its item descriptors are static */
static size_t gemv_items_smem(uint64_t chunk) {
    return 4 * (size_t)HC_GEMVW_STAGES * ((size_t)chunk + 8 * 128);
}

/* hc_mma_gemm: stages x (two chunks + the activation tile) */
static size_t mma_smem(const hc_gpu_variant *v, uint64_t chunk) {
    return (size_t)v->stages * (2 * (size_t)chunk + (size_t)v->toks * 128);
}

/* wgmma and warp-specialised: 1024-byte alignment slack + stages x round1024(activation tile +
 * the chunks of a stage) (the 128-byte swizzle wants 1024-byte aligned stages) */
static size_t ring_smem(unsigned stages, unsigned toks, unsigned chunks, uint64_t chunk) {
    return 1024 + (size_t)stages * (size_t)HC_WS_STAGE_BYTES((uint64_t)toks, chunks, chunk);
}
static size_t aligned_smem(const hc_gpu_variant *v, uint64_t chunk) {
    return ring_smem(v->stages, v->toks, 2, chunk);
}

/* warp-specialised: a block of `stripes` chunks a stage, its stages as the kernel's ring
 * (config.h HC_WS_STAGES: a tile past 256 tokens, moe-ws288, has fewer), so that a grouped
 * variant at another tile or stripe count sizes right */
static size_t ws_smem_of(unsigned toks, unsigned stripes, uint64_t chunk) {
    return ring_smem(HC_WS_STAGES(toks), toks, stripes, chunk);
}
static size_t ws_smem(const hc_gpu_variant *v, uint64_t chunk) {
    return ws_smem_of(v->toks, 2, chunk);
}
/* the stream-K form: the ring, and its whole tiles' epilogue staged past it
 * (kernels/gemm/ws_gemm.cuh ws_gemm_streamk: [toks][128 + 8] bf16) */
static size_t wsk_smem(const hc_gpu_variant *v, uint64_t chunk) {
    return ws_smem(v, chunk) + ((size_t)v->toks * (128 + 8) * 2 + 1023) / 1024 * 1024;
}

/* skinny: 1024-byte alignment slack + the stages that fit (config.h: the kernels' rule) */
static size_t skinny_smem(const hc_gpu_variant *v, uint64_t chunk) {
    return 1024 + (size_t)HC_SKINNY_STAGES_OF(v->toks, (unsigned)chunk) *
                      HC_SKINNY_STAGE_BYTES(v->toks, (unsigned)chunk);
}

/* skinny-q: the same, its stages of four activation tiles, and the warpgroups' sums past them */
static size_t skinny_q_smem(const hc_gpu_variant *v, uint64_t chunk) {
    return 1024 + (size_t)HC_SKINNY_Q_STAGES_OF(v->toks, (unsigned)chunk) *
                      HC_SKINNY_Q_STAGE_BYTES(v->toks, (unsigned)chunk) +
           HC_SKINNY_Q_SUM_BYTES(v->toks);
}

/* Preference order: the first family the device, the layout and M allow runs. */
static const hc_gpu_family families[] = {
    {"small-M", HC_KF_GEMV, HC_GPU_ARGS_GEMV, HC_GEMV_THREADS, NULL, false, HC_GEMV_PDL, 1, 16, gemv_smem, 3,
     {{HC_GK_GEMV_T1, "hc_mma_gemv_t1", NULL, 8, 1, HC_GEMV1_STAGES},
      {HC_GK_GEMV_T8, "hc_mma_gemv_t8", "t8", 8, 8, HC_GEMV_STAGES},
      {HC_GK_GEMV_T16, "hc_mma_gemv_t16", "t16", 16, 16, HC_GEMV_STAGES}}},
    {"skinny", HC_KF_WS, HC_GPU_ARGS_STREAMK, HC_SKINNY_THREADS, "sm_90a", true, HC_SKINNY_PDL, 1,
     128, skinny_smem, 3,
     {{HC_GK_SKINNY16, "hc_skinny_gemm16", "skinny16", 16, 0, HC_SKINNY_STAGES_MAX},
      {HC_GK_SKINNY32, "hc_skinny_gemm32", "skinny32", 32, 0, HC_SKINNY_STAGES_MAX},
      {HC_GK_SKINNY64, "hc_skinny_gemm64", "skinny64", 64, 0, HC_SKINNY_STAGES_MAX}}},
    {"warp-specialised", HC_KF_WS, HC_GPU_ARGS_GEMM, HC_WS_THREADS, "sm_90a", true, false, 17,
     HC_GPU_M_MAX, ws_smem, 3,
     {{HC_GK_WS64, "hc_wgmma_gemm64", "ws64", 64, 0, HC_WS_STAGES(64)},
      {HC_GK_WS128, "hc_wgmma_gemm128", "ws128", 128, 0, HC_WS_STAGES(128)},
      {HC_GK_WS256, "hc_wgmma_gemm256", "ws256", 256, 0, HC_WS_STAGES(256)}}},
    {"wgmma", HC_KF_WGMMA, HC_GPU_ARGS_GEMM, HC_GEMM_THREADS, "sm_90a", false, false, 17, HC_GPU_M_MAX,
     aligned_smem, 1, {{HC_GK_WGMMA, "hc_wgmma_gemm", "wgmma", 128, 0, HC_WGMMA_STAGES}}},
    /* (any M: the last resort where no small-M variant fits the device, e.g. t16 on sm_89) */
    {"mma.sync", HC_KF_MMA, HC_GPU_ARGS_GEMM, HC_GEMM_THREADS, NULL, false, false, 1, HC_GPU_M_MAX,
     mma_smem, 1, {{HC_GK_MMA, "hc_mma_gemm", "mma", 128, 0, HC_GEMM_STAGES}}},
    /* (never first: the chooser puts it in the skinny family's place where a layer's output
     * tiles of one stripe are about as many as the SMs -- gpu_plan.c quarters_instead) */
    {"skinny-q", HC_KF_WS, HC_GPU_ARGS_STREAMK, HC_SKINNY_THREADS, "sm_90a", true, HC_SKINNY_PDL, 1,
     128, skinny_q_smem, 3,
     {{HC_GK_SKINNY16Q, "hc_skinny_gemm16q", "skinny16q", 16, 0, HC_SKINNY_STAGES_MAX},
      {HC_GK_SKINNY32Q, "hc_skinny_gemm32q", "skinny32q", 32, 0, HC_SKINNY_STAGES_MAX},
      {HC_GK_SKINNY64Q, "hc_skinny_gemm64q", "skinny64q", 64, 0, HC_SKINNY_STAGES_MAX}}},
    /* (after mma.sync, which serves every M: never first -- the chooser puts it in the skinny
     * family's place past 64 tokens, gpu_plan.c streamk_tiles_instead; v84) */
    {"ws-stream-K", HC_KF_WS, HC_GPU_ARGS_STREAMK, HC_WS_THREADS, "sm_90a", true, false, 17,
     HC_GPU_M_MAX, wsk_smem, 1,
     {{HC_GK_WS128K, "hc_wgmma_gemm128k", "ws128k", 128, 0, HC_WS_STAGES(128)}}},
};
#define NFAM (sizeof families / sizeof families[0])

const hc_gpu_family *hc__gpu_families(size_t *n) {
    *n = NFAM;
    return families;
}

const hc_gpu_family *hc__gpu_kernel_family(hc_gpu_kernel k, const hc_gpu_variant **v) {
    for (size_t i = 0; i < NFAM; i++)
        for (unsigned j = 0; j < families[i].nvar; j++)
            if (families[i].var[j].id == k) {
                if (v) *v = &families[i].var[j];
                return &families[i];
            }
    return NULL;
}

bool hc__gpu_family_runs_on(const hc_gpu_family *f, const char *arch, bool tmap) {
    return (!f->arch || !strcmp(f->arch, arch)) && (!f->tmap || tmap);
}

static const hc_gpu_moe_variant moe_variants[HC_GMK_COUNT] = {
    {.id = HC_GMK_T8, .entry = "hc_moe_gemv_t8", .forced = "moe-t8", .like = HC_GK_GEMV_T8},
    {.id = HC_GMK_T16, .entry = "hc_moe_gemv_t16", .forced = "moe-t16", .like = HC_GK_GEMV_T16,
     .smem = moe_gemv16_smem},
    {.id = HC_GMK_WS64, .entry = "hc_moe_ws64", .forced = "moe-ws64", .like = HC_GK_WS64},
    {.id = HC_GMK_WS128, .entry = "hc_moe_ws128", .forced = "moe-ws128", .like = HC_GK_WS128},
    {.id = HC_GMK_WS256, .entry = "hc_moe_ws256", .forced = "moe-ws256", .like = HC_GK_WS256},
    {.id = HC_GMK_SKINNY16, .entry = "hc_moe_skinny16", .forced = "moe-skinny16",
     .like = HC_GK_SKINNY16},
    {.id = HC_GMK_SKINNY32, .entry = "hc_moe_skinny32", .forced = "moe-skinny32",
     .like = HC_GK_SKINNY32},
    {.id = HC_GMK_SKINNY64, .entry = "hc_moe_skinny64", .forced = "moe-skinny64",
     .like = HC_GK_SKINNY64},
    {.id = HC_GMK_W8, .entry = "hc_moe_gemv_w8", .forced = "moe-w8", .like = HC_GK_GEMV_T8,
     .smem = gemv_items_smem, .stat = HC_GEMVW_DESC_BYTES},
    {.id = HC_GMK_WS96, .entry = "hc_moe_ws96", .forced = "moe-ws96", .like = HC_GK_WS64,
     .toks = 96},
    {.id = HC_GMK_WS256R, .entry = "hc_moe_ws256r", .forced = "moe-ws256r", .like = HC_GK_WS256,
     .small = 64},
    {.id = HC_GMK_WS288, .entry = "hc_moe_ws288", .forced = "moe-ws288", .like = HC_GK_WS256,
     .toks = 288},
    {.id = HC_GMK_WS96W, .entry = "hc_moe_ws96w", .forced = "moe-ws96w", .like = HC_GK_WS64,
     .toks = 96, .stripes = 4},
    {.id = HC_GMK_WS24X6, .entry = "hc_moe_ws24x6", .forced = "moe-ws24x6", .like = HC_GK_WS64,
     .toks = 24, .stripes = 6},
    {.id = HC_GMK_WS80R, .entry = "hc_moe_ws80r", .forced = "moe-ws80r", .like = HC_GK_WS64,
     .toks = 80, .stripes = 4, .small = 64},
    {.id = HC_GMK_WS80D, .entry = "hc_moe_ws80d", .forced = "moe-ws80d", .like = HC_GK_WS64,
     .toks = 80, .bps = 2},
    {.id = HC_GMK_SKINNY24, .entry = "hc_moe_skinny24", .forced = "moe-skinny24",
     .like = HC_GK_SKINNY32, .toks = 24},
    {.id = HC_GMK_WS160, .entry = "hc_moe_ws160", .forced = "moe-ws160", .like = HC_GK_WS128,
     .toks = 160},
};

const hc_gpu_family *hc__gpu_moe_like(const hc_gpu_moe_variant *mv, hc_gpu_variant *v) {
    const hc_gpu_variant *dv = NULL;
    const hc_gpu_family *f = hc__gpu_kernel_family(mv->like, &dv);
    *v = *dv;
    if (mv->toks) v->toks = mv->toks;
    return f;
}

size_t hc__gpu_moe_smem(const hc_gpu_moe_variant *mv, uint64_t chunk) {
    if (mv->smem) return mv->smem(chunk);
    hc_gpu_variant v;
    const hc_gpu_family *f = hc__gpu_moe_like(mv, &v);
    if (mv->stripes) return ws_smem_of(v.toks, mv->stripes, chunk); /* (warp-specialised only) */
    return f->smem(&v, chunk);
}

unsigned hc__gpu_moe_stripes(const hc_gpu_moe_variant *mv) {
    return mv->stripes ? mv->stripes : 2;
}

unsigned hc__gpu_moe_tile(const hc_gpu_moe_variant *mv) {
    hc_gpu_variant v;
    hc__gpu_moe_like(mv, &v);
    return v.toks;
}

const hc_gpu_moe_variant *hc__gpu_moe_variants(size_t *n) {
    *n = HC_GMK_COUNT;
    return moe_variants;
}
