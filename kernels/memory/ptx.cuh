// ptx.cuh: the memory-side PTX of every kernel in tile_mma.cu: the dynamic shared memory and
// its addresses, cp.async (16 bytes global -> shared, bypassing L1), named barriers,
// programmatic dependent launch, the test for the sm_90a-only instructions, and a block's
// arrival at a last-arrival counter (arrive_last).
#ifndef HC_K_MEMORY_PTX_CUH
#define HC_K_MEMORY_PTX_CUH

#include "layout_core.h"

/* sm_90a: wgmma, TMA and bulk copies, mbarrier waits, setmaxnreg. Kernels that need them trap
 * elsewhere (the host launches them on sm_90a only). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HC_SM90A 1
#endif

/* programmatic dependent launch (sm_90): wait for the kernel before, let the next one start */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define HC_PDL_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define HC_PDL_RELEASE() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define HC_PDL_WAIT() ((void)0)
#define HC_PDL_RELEASE() ((void)0)
#endif

/* HC_GEMV_DIAG, for measurements only (a bench build adds -DHC_GEMV_DIAG=1, 2 or 3, docs/gpu.md
 * "Measurements"; the runtime's default modules never do): 1, the small-M kernels only copy
 * (gemm/gemv.cuh); 2, the small-M and the dense skinny kernels record per block its SM and
 * four readings of the global timer after their workspace's sums (diag_timeline); 3, the
 * skinny kernels store a cut tile's segment and skip the fix-up (epilogue/streamk.cuh) */
#ifndef HC_GEMV_DIAG
#define HC_GEMV_DIAG 0
#endif
#if HC_GEMV_DIAG == 2
__device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
/* A block's record: its SM, the timer at t0, t1, t2 (the kernel's own moments) and now */
__device__ __forceinline__ void diag_timeline(unsigned long long *r, unsigned long long t0,
                                              unsigned long long t1, unsigned long long t2) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    r[0] = smid, r[1] = t0, r[2] = t1, r[3] = t2, r[4] = gtimer();
}
#endif

/* dynamic shared memory of every kernel here (its layout is each kernel's own) */
extern __shared__ __align__(1024) hc_u8 hc_smem[];

__device__ __forceinline__ unsigned smem_addr(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
/* The dynamic shared memory rounded up to 1024 bytes (the 128-byte swizzle's period), by
 * pointer arithmetic on hc_smem so that the compiler still knows the space (a pointer cast
 * from an integer would make every access a generic load). */
__device__ __forceinline__ hc_u8 *smem_1024() {
    return hc_smem + ((1024u - (smem_addr(hc_smem) & 1023u)) & 1023u);
}
/* x, held in a register where it is used: the compiler may not recompute it from its inputs
 * there (NVVM sinks a lane's address arithmetic into a hot loop to save registers -- ~13 SASS
 * instructions a K tile in moe-ws80d, config.h v100) */
__device__ __forceinline__ unsigned held(unsigned x) {
    asm volatile("mov.b32 %0, %0;" : "+r"(x));
    return x;
}
/* 16 bytes global -> shared, bypassing L1; src_bytes 0 fills zeros */
__device__ __forceinline__ void cp16(void *dst, const void *src, unsigned src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
}
/* cp16 under a predicate, without a branch: src_bytes 0 fills zeros; nothing when !on */
__device__ __forceinline__ void cp16_if(unsigned dst, const void *src, unsigned src_bytes, bool on) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %3, 0;\n"
                 "@p cp.async.cg.shared.global [%0], [%1], 16, %2;\n}" ::"r"(dst),
                 "l"(src), "r"(src_bytes), "r"((unsigned)on));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}
/* named barrier ID over N threads (a subset of the block) */
template <int ID, int N> __device__ __forceinline__ void bar_sync() {
    asm volatile("bar.sync %0, %1;" ::"n"(ID), "n"(N) : "memory");
}

/* A line of global memory (128 bytes at p) fetched into this SM's L1 ahead of its loads. */
__device__ __forceinline__ void prefetch_l1(const void *p) {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}

/* A 32-bit global load issued where it stands (volatile: the compiler neither sinks it below a
 * branch nor drops it), so that loads written together leave together. */
__device__ __forceinline__ int ld_here(const int *p) {
    int v;
    asm volatile("ld.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* A block's arrival at counter *cnt after its threads' global writes, for a last-arrival
 * finisher (the K split's, the stream-K fix-up's, the routing's count): bar() -- the arriving
 * threads' barrier -- orders every thread's writes before thread `lead`'s fence.acq_rel and
 * atomic add (a release, cumulative over what the barrier ordered before it); in the block
 * that arrives last the same thread's second fence (an acquire), passed on by the second bar(),
 * orders its threads' later reads after every arrival's writes. One thread fences where every
 * thread did with __threadfence (fence.sc: MEMBAR.SC.GPU); acq_rel is what message passing
 * needs (v56). last: a __shared__ word of the caller's. Returns, in every thread, whether the
 * block arrived last (the arrivals before it numbered before_last). */
/* The lead thread's part: a release (fence, then the atomic add), and where the arrival is the
 * last, an acquire; whatever was ordered before it in the block (a barrier, an mbarrier wait)
 * is published with it. */
__device__ __forceinline__ bool arrive_one(unsigned *cnt, unsigned before_last) {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    const bool l = atomicAdd(cnt, 1u) == before_last;
    if (l) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    return l;
}
template <class Bar>
__device__ __forceinline__ bool arrive_last(unsigned *cnt, unsigned before_last, bool lead,
                                            unsigned &last, Bar bar) {
    bar();
    if (lead) last = arrive_one(cnt, before_last);
    bar();
    return last;
}

#endif
