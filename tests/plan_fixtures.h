/* plan_fixtures.h: what the GPU-decision tests (t_plan.c, t_moe_plan.c, t_registry.c) share: the H200 as the
 * chooser sees it, a layer shape, and the skinny kernels' shared-memory rules written from
 * kernels/config.h's constants (the expected figures, not the registry's). */
#ifndef HC_TEST_PLAN_FIXTURES_H
#define HC_TEST_PLAN_FIXTURES_H

#include "config.h"
#include "gpu_plan.h"
#include "layouts.h"

/* The H200 (and the H100 SXM, which the chooser sees the same): sm_90a, 132 SMs, the driver's
 * tensor-map encoder present. */
static const hc_gpu_caps h200 = {"sm_90a", 132, true, 233472, 232448};

static inline size_t round1024(size_t v) { return (v + 1023) / 1024 * 1024; }

/* A layer of N x K (64 x 64 tiles) with tiles of chunk bytes (of 8-bit codes from 4096 bytes,
 * a tile's 4096 codes, else 4-bit), read by every family, whose small-M kernels keep 4 blocks
 * per SM resident. */
static inline hc_gpu_shape layer(uint64_t n, uint64_t k, uint64_t chunk) {
    return (hc_gpu_shape){(n + 63) / 64, (k + 63) / 64, chunk, HC_KF_ALL, {4, 4, 4},
                          chunk >= 4096 ? 8u : 4u};
}

/* the skinny kernels' stages: as many as 224 KiB hold, at most 12, an even number
 * (kernels/config.h) */
static inline size_t skinny_stages(size_t toks, size_t c) {
    size_t n = (224 * 1024) / round1024(toks * 128 + 4 * c);
    return (n < 12 ? n : 12) & ~(size_t)1;
}

/* skinny-q's stages (v59): four activation tiles a stage, in what 224 KiB hold past the three
 * warpgroups' sums (toks / 2 floats x 128 threads each), at most 12, an even number */
static inline size_t skinny_q_stages(size_t toks, size_t c) {
    size_t n = (224 * 1024 - 3 * 128 * toks / 2 * 4) / round1024(4 * toks * 128 + 4 * c);
    return (n < 12 ? n : 12) & ~(size_t)1;
}

#endif
