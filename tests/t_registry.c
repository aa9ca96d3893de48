/* t_registry.c: the kernel-family registry (runtime/gpu_families.c) against the kernels it
 * names: each entry's kernel name, forced name, block and architecture as kernels/tile_mma.cu
 * declares them, and each variant's shared memory worked out here from kernels/config.h's
 * constants and the kernels' own comments (not read back from the registry). Which kernel the
 * chooser takes is t_plan.c's. */
#include <string.h>

#include "config.h"
#include "gpu_families.h"
#include "plan_fixtures.h"
#include "test.h"

/* Entry names, blocks and needs as kernels/tile_mma.cu declares its kernels. */
static void test_registry_entries(void) {
    static const struct {
        hc_gpu_kernel k;
        const char *entry, *forced, *arch;
        unsigned block;
        bool tmap;
    } want[] = {{HC_GK_GEMV_T1, "hc_mma_gemv_t1", NULL, NULL, 128, false},
                {HC_GK_GEMV_T8, "hc_mma_gemv_t8", "t8", NULL, 128, false},
                {HC_GK_GEMV_T16, "hc_mma_gemv_t16", "t16", NULL, 128, false},
                {HC_GK_WS64, "hc_wgmma_gemm64", "ws64", "sm_90a", 384, true},
                {HC_GK_WS128, "hc_wgmma_gemm128", "ws128", "sm_90a", 384, true},
                {HC_GK_WS256, "hc_wgmma_gemm256", "ws256", "sm_90a", 384, true},
                {HC_GK_WGMMA, "hc_wgmma_gemm", "wgmma", "sm_90a", 256, false},
                {HC_GK_MMA, "hc_mma_gemm", "mma", NULL, 256, false},
                {HC_GK_SKINNY16, "hc_skinny_gemm16", "skinny16", "sm_90a", 640, true},
                {HC_GK_SKINNY32, "hc_skinny_gemm32", "skinny32", "sm_90a", 640, true},
                {HC_GK_SKINNY64, "hc_skinny_gemm64", "skinny64", "sm_90a", 640, true},
                {HC_GK_SKINNY16Q, "hc_skinny_gemm16q", "skinny16q", "sm_90a", 640, true},
                {HC_GK_SKINNY32Q, "hc_skinny_gemm32q", "skinny32q", "sm_90a", 640, true},
                {HC_GK_SKINNY64Q, "hc_skinny_gemm64q", "skinny64q", "sm_90a", 640, true},
                {HC_GK_WS128K, "hc_wgmma_gemm128k", "ws128k", "sm_90a", 384, true}};
    CHECK_EQ_INT(sizeof want / sizeof want[0], HC_GK_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const hc_gpu_variant *v = NULL;
        const hc_gpu_family *f = hc__gpu_kernel_family(want[i].k, &v);
        CHECK(f != NULL);
        if (!f) continue;
        CHECK_STR_EQ(v->entry, want[i].entry);
        CHECK(want[i].forced ? v->forced && !strcmp(v->forced, want[i].forced) : !v->forced);
        CHECK(want[i].arch ? f->arch && !strcmp(f->arch, want[i].arch) : !f->arch);
        CHECK_EQ_INT(f->block, want[i].block);
        CHECK_EQ_INT(f->tmap, want[i].tmap);
        const bool skinny = want[i].k >= HC_GK_SKINNY16 && want[i].k <= HC_GK_SKINNY64Q;
        CHECK_EQ_INT(f->pdl,
                     (want[i].k <= HC_GK_GEMV_T16 && HC_GEMV_PDL) || (skinny && HC_SKINNY_PDL));
    }
    CHECK(hc__gpu_kernel_family(HC_GK_COUNT, NULL) == NULL);
    size_t n = 0;
    const hc_gpu_family *fams = hc__gpu_families(&n);
    CHECK_EQ_INT(n, 7);
    unsigned kf = 0;
    for (size_t i = 0; i < n; i++) kf |= fams[i].kf;
    CHECK_EQ_INT(kf, HC_KF_ALL); /* one family per HC_KF_* bit */
}

/* Shared memory as each kernel's comment in kernels/tile_mma.cu states it, for the int4 g128
 * BF16 tile (2048 code bytes + 64 x 2 scale bytes = 2176) and for the largest chunk (what a
 * module reserves). */
static void test_registry_shared_memory(void) {
    const size_t chunks[] = {2176, HC_CHUNK_MAX};
    for (int i = 0; i < 2; i++) {
        size_t c = chunks[i];
        size_t want[HC_GK_COUNT] = {
            4 * (HC_GEMV1_STAGES * (c + 128) + 128), /* t1: one row a stage, and a zero row */
            4 * HC_GEMV_STAGES * (c + 8 * 128),
            4 * HC_GEMV_STAGES * ((c <= 3328 ? 2 : 1) * c + 16 * 128), /* t16: two stripes */
            1024 + HC_WIDE_STAGES * round1024(64 * 128 + 2 * c),
            1024 + HC_WIDE_STAGES * round1024(128 * 128 + 2 * c),
            1024 + HC_WIDE_STAGES * round1024(256 * 128 + 2 * c),
            1024 + HC_WGMMA_STAGES * round1024(16384 + 2 * c),
            HC_GEMM_STAGES * (2 * c + 16384),
            1024 + skinny_stages(16, c) * round1024(16 * 128 + 4 * c),
            1024 + skinny_stages(32, c) * round1024(32 * 128 + 4 * c),
            1024 + skinny_stages(64, c) * round1024(64 * 128 + 4 * c),
            /* skinny-q: four activation tiles a stage, three warpgroups' sums past the ring */
            1024 + skinny_q_stages(16, c) * round1024(4 * 16 * 128 + 4 * c) + 3 * 128 * 8 * 4,
            1024 + skinny_q_stages(32, c) * round1024(4 * 32 * 128 + 4 * c) + 3 * 128 * 16 * 4,
            1024 + skinny_q_stages(64, c) * round1024(4 * 64 * 128 + 4 * c) + 3 * 128 * 32 * 4,
            /* ws128k: ws128's ring, and its whole tiles' bf16 sums staged past it */
            1024 + HC_WIDE_STAGES * round1024(128 * 128 + 2 * c) + round1024(128 * 136 * 2)};
        for (int k = 0; k < HC_GK_COUNT; k++) {
            const hc_gpu_variant *v = NULL;
            const hc_gpu_family *f = hc__gpu_kernel_family((hc_gpu_kernel)k, &v);
            CHECK_EQ_U64(f->smem(v, c), want[k]);
            CHECK(f->smem(v, c) <= 227 * 1024); /* what an H200 block may have */
        }
    }
    /* the figures of the defaults (bench/NOTES.md), by hand */
    if (HC_GEMV1_STAGES == 6 && HC_GEMV_STAGES == 4 && HC_WIDE_STAGES == 5) {
        const hc_gpu_variant *v;
        const hc_gpu_family *f = hc__gpu_kernel_family(HC_GK_GEMV_T1, &v);
        CHECK_EQ_U64(f->smem(v, 2176), 55808);
        f = hc__gpu_kernel_family(HC_GK_WS256, &v);
        CHECK_EQ_U64(f->smem(v, 2176), 190464);
    }
    if (HC_SKINNY_SMEM == 224 * 1024 && HC_SKINNY_STAGES_MAX == 12) {
        const hc_gpu_variant *v;
        /* 8192 + 4 x 2176 = 16896 -> 17408 a stage, 229376 / 17408 = 13 fit: 12 */
        const hc_gpu_family *f = hc__gpu_kernel_family(HC_GK_SKINNY64, &v);
        CHECK_EQ_U64(f->smem(v, 2176), 1024 + 12 * 17408);
        /* 2048 + 8704 -> 11264, 20 fit: 12 */
        f = hc__gpu_kernel_family(HC_GK_SKINNY16, &v);
        CHECK_EQ_U64(f->smem(v, 2176), 1024 + 12 * 11264);
        /* the largest chunk: 8192 + 21504 = 29696 a stage, 7 fit: 6 (an even number) */
        f = hc__gpu_kernel_family(HC_GK_SKINNY64, &v);
        CHECK_EQ_U64(f->smem(v, HC_CHUNK_MAX), 1024 + 6 * 29696);
        /* skinny16q: 8192 + 8704 -> 17408 a stage, (229376 - 12288) / 17408 = 12.5: 12;
         * skinny32q: 16384 + 8704 -> 25600, 204800 / 25600 = 8; skinny64q: 32768 + 8704 ->
         * 41984, (229376 - 49152) / 41984 = 4.3: 4; at the largest chunk 32768 + 21504 =
         * 54272, 3.3: 2 (an even number) */
        f = hc__gpu_kernel_family(HC_GK_SKINNY16Q, &v);
        CHECK_EQ_U64(f->smem(v, 2176), 1024 + 12 * 17408 + 12288);
        f = hc__gpu_kernel_family(HC_GK_SKINNY32Q, &v);
        CHECK_EQ_U64(f->smem(v, 2176), 1024 + 8 * 25600 + 24576);
        f = hc__gpu_kernel_family(HC_GK_SKINNY64Q, &v);
        CHECK_EQ_U64(f->smem(v, 2176), 1024 + 4 * 41984 + 49152);
        CHECK_EQ_U64(f->smem(v, HC_CHUNK_MAX), 1024 + 2 * 54272 + 49152);
    }
}

void suite_registry(void) {
    RUN(test_registry_entries);
    RUN(test_registry_shared_memory);
}
