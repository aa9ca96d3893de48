// tma.cuh: the asynchronous copies of the warp-specialised kernels (sm_90a): the host's tensor
// map, TMA tile loads and bulk copies that complete on an mbarrier, the mbarrier itself, and
// the fence that orders generic-proxy writes of shared memory before async-proxy accesses.
#ifndef HC_K_MEMORY_TMA_CUH
#define HC_K_MEMORY_TMA_CUH

#include "config.h"
#include "memory/ptx.cuh"

/* a CUtensorMap, as the host encodes it (cuTensorMapEncodeTiled) */
struct __align__(64) hc_tmap {
    unsigned long long v[16];
};

#ifdef HC_SM90A
__device__ __forceinline__ void mbar_init(unsigned a, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(count) : "memory");
}
/* the barriers' initialisation made visible to the async proxy (before any copy uses them) */
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned a) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(a) : "memory");
}
/* a consumer warp's release of a ring stage it has read (barrier bar, its lane lane): every lane
 * or lane 0 alone after the warp's reads, as config.h HC_EMPTY_LANES says -- the barrier counts
 * HC_EMPTY_LANES a consumer warp */
__device__ __forceinline__ void ring_release(unsigned bar, unsigned lane) {
    __syncwarp();
    if (HC_EMPTY_LANES == 32 || lane == 0) mbar_arrive(bar);
}
/* arrives and expects bytes more to land (the copies that complete_tx on the barrier) */
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned a, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(bytes)
                 : "memory");
}
/* waits for the phase of the given parity to complete; with HC_MBAR_SUSPEND_NS (config.h) the
 * waiting thread may be suspended up to that long a try instead of spinning */
__device__ __forceinline__ void mbar_wait(unsigned a, unsigned parity) {
    unsigned done = 0;
    while (!done)
#if HC_MBAR_SUSPEND_NS
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
                     "selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done)
                     : "r"(a), "r"(parity), "n"(HC_MBAR_SUSPEND_NS)
                     : "memory");
#else
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
#endif
}
/* TMA: the box at coordinates (c0, c1) of tensor map tmap (its generic address) into shared
 * address dst, completing on barrier bar */
__device__ __forceinline__ void tma_load_2d(unsigned dst, hc_u64 tmap, unsigned c0, unsigned c1,
                                            unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
                 "l"(tmap), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
/* L2 eviction priorities for the copies below (config.h HC_L2_HINTS): data read once (the
 * skinny kernels' weights) goes first, data read again by the block's next output tiles (their
 * activation tile) last */
__device__ __forceinline__ hc_u64 l2_evict_first() {
    hc_u64 pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}
__device__ __forceinline__ hc_u64 l2_evict_last() {
    hc_u64 pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}
/* tma_load_2d with an L2 policy (l2_evict_*) */
__device__ __forceinline__ void tma_load_2d_hint(unsigned dst, hc_u64 tmap, unsigned c0,
                                                 unsigned c1, unsigned bar, hc_u64 pol) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
                 "l"(tmap), "r"(c0), "r"(c1), "r"(bar), "l"(pol)
                 : "memory");
}
/* bytes (a multiple of 16) global -> shared address dst, completing on barrier bar */
__device__ __forceinline__ void bulk_load(unsigned dst, const void *src, unsigned bytes,
                                          unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
/* bulk_load with an L2 policy (l2_evict_*) */
__device__ __forceinline__ void bulk_load_hint(unsigned dst, const void *src, unsigned bytes,
                                               unsigned bar, hc_u64 pol) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1], %2, [%3], %4;" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar), "l"(pol)
                 : "memory");
}
/* the producers' copies under a kernel family's L2 constant HINT (config.h HC_L2_HINTS): a
 * weight chunk, read once, evict_first; an activation tile, read again by the next output tiles
 * of its token tile, evict_last; the plain copies where HINT is 0 (the policy is made at each
 * copy: no register kept across the loop) */
template <int HINT>
__device__ __forceinline__ void load_once(unsigned dst, const void *src, unsigned bytes,
                                          unsigned bar) {
    if (HINT)
        bulk_load_hint(dst, src, bytes, bar, l2_evict_first());
    else
        bulk_load(dst, src, bytes, bar);
}
template <int HINT>
__device__ __forceinline__ void tma_load_kept(unsigned dst, hc_u64 tmap, unsigned c0, unsigned c1,
                                              unsigned bar) {
    if (HINT)
        tma_load_2d_hint(dst, tmap, c0, c1, bar, l2_evict_last());
    else
        tma_load_2d(dst, tmap, c0, c1, bar);
}
/* this thread's shared-memory writes ordered before later async-proxy reads and writes */
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
#endif

#endif
