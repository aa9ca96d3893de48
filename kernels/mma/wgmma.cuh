// wgmma.cuh: the warpgroup instructions of the large-M kernels on sm_90a: wgmma m64nNk16
// with A in registers and B in shared memory (its descriptor), the fence / commit / wait
// around them, and setmaxnreg (registers moved between a block's warpgroups).
#ifndef HC_K_MMA_WGMMA_CUH
#define HC_K_MMA_WGMMA_CUH

#include "memory/ptx.cuh"

#ifdef HC_SM90A
/* eight (four) accumulator operands d[i..] of a wgmma inline assembly statement */
#define HC_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define HC_D8(i) HC_D4(i), HC_D4(i + 4)
/* wgmma_rs<N>(d, a, db, acc) = wgmma_m64nNk16: d[N / 2] += A (this warp's 16 of the
 * warpgroup's 64 weight rows x k16, bf16 in registers) x B (N tokens x k16, bf16 in shared
 * memory, K-major rows of 128 bytes with the 128-byte swizzle; db its descriptor); acc 0: d =
 * A x B (its old values ignored: a new sum starts without writing d first, which would make
 * ptxas wait for every wgmma before the loop's next step -- its note C7517). N: a tile's tokens
 * (16, 24, 32, 64, 80, 96, 128, 160, 256). */
template <int N>
__device__ __forceinline__ void wgmma_rs(float *d, const unsigned *a, hc_u64 db, unsigned acc = 1u);

/* one width: its accumulator operands (DREGS, then D...), the four A registers, the
 * descriptor's and acc's operand numbers */
#define HC_WGMMA_RS(N, DREGS, AREGS, DESC, ACC, ...)                                             \
    __device__ __forceinline__ void wgmma_m64n##N##k16(float *d, const unsigned *a, hc_u64 db,   \
                                                       unsigned acc = 1u) {                     \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #ACC ", 0;\n"                         \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" DREGS "}, {"     \
                     AREGS "}, %" #DESC ", p, 1, 1, 0;\n}\n"                                      \
                     : __VA_ARGS__                                                             \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));           \
    }                                                                                          \
    template <>                                                                                \
    __device__ __forceinline__ void wgmma_rs<N>(float *d, const unsigned *a, hc_u64 db,          \
                                                unsigned acc) {                                \
        wgmma_m64n##N##k16(d, a, db, acc);                                                     \
    }
HC_WGMMA_RS(16, "%0, %1, %2, %3, %4, %5, %6, %7",
            "%8, %9, %10, %11", 12, 13, HC_D8(0))
HC_WGMMA_RS(24, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11",
            "%12, %13, %14, %15", 16, 17, HC_D8(0), HC_D4(8))
HC_WGMMA_RS(32, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15",
            "%16, %17, %18, %19", 20, 21, HC_D8(0), HC_D8(8))
HC_WGMMA_RS(64, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31",
            "%32, %33, %34, %35", 36, 37, HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24))
HC_WGMMA_RS(80, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39",
            "%40, %41, %42, %43", 44, 45, HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24), HC_D8(32))
HC_WGMMA_RS(96, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47",
            "%48, %49, %50, %51", 52, 53, HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24), HC_D8(32), HC_D8(40))
HC_WGMMA_RS(128, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63",
            "%64, %65, %66, %67", 68, 69, HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24), HC_D8(32), HC_D8(40), HC_D8(48), HC_D8(56))
HC_WGMMA_RS(160, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79",
            "%80, %81, %82, %83", 84, 85, HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24), HC_D8(32), HC_D8(40), HC_D8(48), HC_D8(56), HC_D8(64), HC_D8(72))
HC_WGMMA_RS(256, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127",
            "%128, %129, %130, %131", 132, 133, HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24), HC_D8(32), HC_D8(40), HC_D8(48), HC_D8(56), HC_D8(64), HC_D8(72), HC_D8(80), HC_D8(88), HC_D8(96), HC_D8(104), HC_D8(112), HC_D8(120))
#undef HC_WGMMA_RS
/* the descriptor of a B operand at p: K-major rows of 128 bytes, 128-byte swizzle, 8-row
 * groups 1024 bytes apart */
__device__ __forceinline__ hc_u64 b_desc(const void *p) {
    hc_u64 a = smem_addr(p);
    return ((a & 0x3FFFF) >> 4) | (1ull << 16) | ((hc_u64)(1024 >> 4) << 32) | (1ull << 62);
}
/* the accumulators and A registers are ready for the wgmma that follow */
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
/* until at most N committed groups are still running */
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* A 64-column K tile's four k16 steps, W tokens wide: A in a[4][4], B the activation tile of
 * descriptor dhi:dlo (+ 2 a k16 step: 32 bytes); first: the first K tile of a sum (its first
 * wgmma starts it). Past 256 tokens (wgmma's widest n) a step is two wgmma: tokens 0-255 into
 * d[0..127], the rest (their B rows 256 x 128 bytes on: + 2048 in the descriptor's 16-byte
 * units) into d[128..]. */
template <int W>
__device__ __forceinline__ void wgmma_tile(float *d, unsigned (*a)[4], unsigned dhi, unsigned dlo,
                                           bool first) {
    static_assert(W <= 512, "two wgmma a k16 step at most");
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ks++) {
        const unsigned acc = ks > 0 || !first ? 1u : 0u;
        if constexpr (W <= 256) {
            wgmma_rs<W>(d, a[ks], (hc_u64)dhi << 32 | (dlo + 2 * ks), acc);
        } else {
            wgmma_rs<256>(d, a[ks], (hc_u64)dhi << 32 | (dlo + 2 * ks), acc);
            wgmma_rs<W - 256>(d + 128, a[ks], (hc_u64)dhi << 32 | (dlo + 2048 + 2 * ks), acc);
        }
    }
}
/* The same, committed as one group, where a tile's rows may be fewer (v99, config.h
 * HC_WS_NARROW): narrow (uniform over the warpgroup, and for a sum over all its K tiles) runs
 * the K tile NW tokens wide -- the tokens past NW (zeros or another tile's rows in B) are not
 * multiplied and their sums d[NW / 2 ..] keep what they held. (Each branch commits its own
 * group: a commit after the two paths join costs an empty wgmma, ptxas's C7519.) */
template <int W, int NW>
__device__ __forceinline__ void wgmma_tile_commit(float *d, unsigned (*a)[4], unsigned dhi,
                                                  unsigned dlo, bool first, bool narrow) {
    if constexpr (NW > 0 && NW < W) {
        if (narrow) {
            wgmma_tile<NW>(d, a, dhi, dlo, first);
            wgmma_commit();
            return;
        }
    }
    wgmma_tile<W>(d, a, dhi, dlo, first);
    wgmma_commit();
}
/* this warpgroup's registers per thread lowered / raised to N */
template <int N> __device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N> __device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
#endif

#endif
