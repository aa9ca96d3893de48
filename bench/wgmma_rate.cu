// wgmma_rate.cu: the tensor ceiling of the warp-specialised kernels' MMA shape, measured alone.
// Why: moe-ws80d at Qwen3-like M = 1024 issues as many m64n80k16 wgmma (A in registers) as
// Humming's kernel and runs at ~50% of the H100's dense bf16 rate; whether that shape itself
// (n = 80, A from registers, four warpgroups an SM) can go faster is what this answers. Each
// warpgroup loops over "K tiles" of four wgmma_rs<N> (kernels/mma/wgmma.cuh, the kernels' own
// wrappers) into one accumulator, two A register sets, committing a tile and waiting for the
// one before (wgmma_wait<1>) as ws_gemm_block does; with DEC > 0 it then rewrites the other set
// with DEC dependent integer operations a register (a stand-in for the decode: what a warp
// does between the wait and the next issue). B is one zeroed 128-byte-swizzled tile in shared
// memory (the rate does not depend on the values). Prints TFLOP/s per shape beside the
// device's stated peak inputs, then `beside`: the wgmma loop and integer chains on warps of
// their own in one block, each alone and both together (how much of the other warps' issue a
// running wgmma takes), with A in registers or (SS) in shared memory too, and the ALU warps
// optionally storing to shared memory as a decoder feeding SS wgmma would (session 42: SS takes
// the same share as RS, bench/NOTES.md). A bench program (not part of the library); built on the lent
// GPU by nvcc:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels -Icontract \
//       bench/wgmma_rate.cu -o wgmma_rate && ./wgmma_rate
#include <cstdio>
#include <cuda_runtime.h>

#include "mma/wgmma.cuh"

#ifdef HC_SM90A
/* a K tile: four k16 steps, S stripes (accumulators d[j], A sets a[j]) behind one B tile */
template <int N, int S>
__device__ __forceinline__ void tile(float (*d)[N / 2], unsigned (*a)[4][4], hc_u64 db, bool first) {
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ks++)
#pragma unroll
        for (int j = 0; j < S; j++) wgmma_rs<N>(d[j], a[j][ks], db + 2 * ks, first && ks == 0 ? 0u : 1u);
}

/* m64n80k16 with A from shared memory too (SS: both operands by descriptor; da: A's 64 rows x
 * k16, K-major rows of 128 bytes with the 128-byte swizzle, as B's) -- the `beside` rows' other
 * mode, bench-only: the library's kernels keep A in registers */
__device__ __forceinline__ void wgmma_ss80(float *d, hc_u64 da, hc_u64 db, unsigned acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, "
                 "%6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
                 "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, "
                 "%39}, %40, %41, p, 1, 1, 0, 0;\n}\n"
                 : HC_D8(0), HC_D8(8), HC_D8(16), HC_D8(24), HC_D8(32)
                 : "l"(da), "l"(db), "r"(acc));
}
#endif

template <int N, int WGS, int BPS, int DEC, int S = 1, bool FINE = false>
__global__ void __launch_bounds__(128 * WGS, BPS) rate(float *out, int iters) {
#ifdef HC_SM90A
    __shared__ __align__(1024) unsigned char b[(N * 128 + 1023) / 1024 * 1024];
    for (unsigned i = threadIdx.x; i < sizeof b / 4; i += blockDim.x) ((unsigned *)b)[i] = 0u;
    __syncthreads();
    const hc_u64 db = b_desc(b);
    float d[S][N / 2];
    unsigned a0[S][4][4], a1[S][4][4];
#pragma unroll
    for (int k = 0; k < 4 * S; k++)
#pragma unroll
        for (int j = 0; j < 4; j++) a0[0][k][j] = a1[0][k][j] = threadIdx.x * 16u + k * 4u + j;
    auto dec = [&](unsigned (*a)[4][4], int it) {
#pragma unroll
        for (int k = 0; k < 4 * S; k++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int q = 0; q < DEC; q++) a[0][k][j] = (a[0][k][j] ^ (a[0][k][j] >> 3)) + (unsigned)it;
        /* (a branch after the decode, as the kernels' barrier waits are; b[0] is zero. ptxas
         * still computes the next set's operations into temporaries between the current tile's
         * wgmma, which the kernels' SASS does not: so these rows mix the compiler's schedule
         * into the hardware's -- `beside` below asks the hardware alone, bench/NOTES.md
         * session 41) */
        while (*(volatile unsigned *)b != 0u) {
        }
    };
    if constexpr (FINE) {
        /* a commit group a k16 step: the next tile's step ks is rewritten once this set's step ks
         * of the tile before is done (wgmma_wait<4>), not once its whole tile is */
        static_assert(S == 1, "one stripe a warpgroup");
        auto fine = [&](unsigned (*a)[4][4], unsigned (*an)[4][4], int it, bool first) {
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < 4; ks++) {
                wgmma_rs<N>(d[0], a[0][ks], db + 2 * ks, first && ks == 0 ? 0u : 1u);
                wgmma_commit();
                if (first) continue;
                wgmma_wait<4>();
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int q = 0; q < DEC; q++)
                        an[0][ks][j] = (an[0][ks][j] ^ (an[0][ks][j] >> 3)) + (unsigned)it;
                while (*(volatile unsigned *)b != 0u) {
                }
            }
        };
        fine(a0, a1, 0, true);
        for (int it = 1; it < iters; it += 2) {
            fine(a1, a0, it, false);
            fine(a0, a1, it, false);
        }
    } else {
    tile<N, S>(d, a0, db, true);
    wgmma_commit();
    for (int it = 1; it < iters; it += 2) {
        tile<N, S>(d, a1, db, false);
        wgmma_commit();
        wgmma_wait<1>();
        dec(a0, it);
        tile<N, S>(d, a0, db, false);
        wgmma_commit();
        wgmma_wait<1>();
        dec(a1, it);
    }
    }
    wgmma_wait<0>();
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < N / 2; i++)
#pragma unroll
        for (int j = 0; j < S; j++) s += d[j][i];
    if (s == 12345.0f) out[blockIdx.x] = s; /* (never: keeps the sums live) */
#else
    (void)out, (void)iters;
#endif
}

/* The same hardware question without the compiler's scheduling in it: warpgroups 0-1 run the
 * wgmma loop (DEC 0) when MODE & 1, warpgroup 2 runs 16 independent integer chains of ALU
 * operations a K tile when MODE & 2, each on its own warps -- if the wgmma warps' tensor work and
 * the other warps' ALU issue overlap on the SM's sub-partitions, both together take the longer
 * of the two alone. */
template <int N, int ALU, int MODE, bool SS = false, bool ST = false>
__global__ void __launch_bounds__(384, 1) beside(float *out, int iters) {
#ifdef HC_SM90A
    static_assert(!SS || N == 80, "SS: n = 80 only");
    /* B's tile, then (SS) A's 64 x 64 tile, then (ST) the ALU warps' 2 KB store area */
    __shared__ __align__(1024) unsigned char b[(N * 128 + 1023) / 1024 * 1024 + 8192 + 2048];
    for (unsigned i = threadIdx.x; i < sizeof b / 4; i += blockDim.x) ((unsigned *)b)[i] = 0u;
    __syncthreads();
    if (threadIdx.x >= 256) {
        if (!(MODE & 2)) return;
        unsigned r[16];
#pragma unroll
        for (int j = 0; j < 16; j++) r[j] = threadIdx.x + j;
        /* ST: a 16-byte shared store every 16 operations, as a decoder writing bf16 weights for
         * SS wgmma would (64 x 64 bf16 = 8 KB a K tile over 128 threads: 4 stores a thread) */
        const unsigned st = (unsigned)__cvta_generic_to_shared(b + sizeof b - 2048) + (threadIdx.x - 256) * 16u;
        for (int it = 0; it < iters; it++)
#pragma unroll
            for (int q = 0; q < ALU / 16; q++) {
#pragma unroll
                for (int j = 0; j < 16; j++) r[j] = (r[j] ^ (r[j] >> 3)) + (unsigned)it;
                if (ST)
                    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(st), "r"(r[0]), "r"(r[5]),
                                 "r"(r[10]), "r"(r[15])
                                 : "memory");
            }
        unsigned x = 0;
#pragma unroll
        for (int j = 0; j < 16; j++) x ^= r[j];
        if (x == 12345u) out[blockIdx.x] = (float)x;
        return;
    }
    if (!(MODE & 1)) return;
    const hc_u64 db = b_desc(b);
    float d[1][N / 2];
    if constexpr (SS) {
        const hc_u64 da = b_desc(b + (N * 128 + 1023) / 1024 * 1024);
        for (int it = 0; it < iters; it++) {
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < 4; ks++) wgmma_ss80(d[0], da + 2 * ks, db + 2 * ks, it || ks ? 1u : 0u);
            wgmma_commit();
            wgmma_wait<1>();
        }
    } else {
        unsigned a[1][4][4];
#pragma unroll
        for (int k = 0; k < 4; k++)
#pragma unroll
            for (int j = 0; j < 4; j++) a[0][k][j] = threadIdx.x * 16u + k * 4u + j;
        tile<N, 1>(d, a, db, true);
        wgmma_commit();
        for (int it = 1; it < iters; it++) {
            tile<N, 1>(d, a, db, false);
            wgmma_commit();
            wgmma_wait<1>();
        }
    }
    wgmma_wait<0>();
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < N / 2; i++) s += d[0][i];
    if (s == 12345.0f) out[blockIdx.x] = s;
#else
    (void)out, (void)iters;
#endif
}

template <int N, int ALU, bool SS = false, bool ST = false> static void run_beside(int sms, float *out) {
    const int iters = 4001;
    float ms[4] = {0, 0, 0, 0};
    void (*k[4])(float *, int) = {nullptr, beside<N, ALU, 1, SS, ST>, beside<N, ALU, 2, SS, ST>,
                                  beside<N, ALU, 3, SS, ST>};
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    for (int m = 1; m < 4; m++) {
        k[m]<<<sms, 384>>>(out, 101);
        cudaEventRecord(e0);
        k[m]<<<sms, 384>>>(out, iters);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms[m], e0, e1);
    }
    cudaError_t err = cudaGetLastError();
    printf("n=%3d, two wgmma warpgroups (A in %s) and one of %d ALU operations a K tile%s, an SM: "
           "wgmma alone %.3f ms, ALU alone %.3f ms, both %.3f ms (overlapped: %.3f; serial: %.3f)%s%s\n",
           N, SS ? "shared memory" : "registers", ALU, ST ? " (a 16-byte shared store every 16)" : "", ms[1], ms[2], ms[3], ms[1] > ms[2] ? ms[1] : ms[2], ms[1] + ms[2],
           err ? "  error: " : "", err ? cudaGetErrorString(err) : "");
    cudaEventDestroy(e0), cudaEventDestroy(e1);
}

template <int N, int WGS, int BPS, int DEC, int S = 1, bool FINE = false>
static void run(int sms, float *out) {
    const int iters = 4001, blocks = sms * BPS;
    auto k = rate<N, WGS, BPS, DEC, S, FINE>;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    k<<<blocks, 128 * WGS>>>(out, 101); /* (warm) */
    cudaEventRecord(e0);
    k<<<blocks, 128 * WGS>>>(out, iters);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, e0, e1);
    const double fma = (double)blocks * WGS * S * iters * 4 * 64.0 * N * 16;
    cudaError_t err = cudaGetLastError();
    printf("n=%3d  stripes a warpgroup %d  warpgroups an SM %d (%d a block x %d)  decode ops a "
           "register %2d%s:  %7.1f TFLOP/s  (%.3f ms)%s%s\n",
           N, S, WGS * BPS, WGS, BPS, DEC, FINE ? " (a group a k16 step)" : "", 2 * fma / (ms * 1e-3) / 1e12, ms,
           err ? "  error: " : "", err ? cudaGetErrorString(err) : "");
    cudaEventDestroy(e0), cudaEventDestroy(e1);
}

int main() {
    int sms = 0, clk = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
    cudaDeviceProp pr;
    cudaGetDeviceProperties(&pr, 0);
    printf("%s: %d SMs, max SM clock %d MHz; dense bf16 at 1024 FMA a clock a sub-partition pair "
           "(2048 an SM): %.0f TFLOP/s at that clock\n",
           pr.name, sms, clk / 1000, 2.0 * 2048 * sms * clk * 1e3 / 1e12);
    float *out;
    cudaMalloc(&out, 4096 * sizeof(float));
    run<80, 2, 2, 0>(sms, out);
    run<80, 2, 1, 0>(sms, out);
    run<80, 1, 1, 0>(sms, out);
    run<128, 2, 1, 0>(sms, out);
    run<128, 2, 2, 0>(sms, out);
    run<80, 2, 1, 1, 2>(sms, out);
    run<80, 2, 1, 4, 2>(sms, out);
    run<80, 2, 2, 4>(sms, out);
    run<80, 2, 2, 8>(sms, out);
    run<80, 2, 1, 4>(sms, out);
    run<80, 2, 1, 8>(sms, out);
    run<80, 2, 2, 4, 1, true>(sms, out);
    run<80, 2, 2, 8, 1, true>(sms, out);
    run<128, 2, 1, 4>(sms, out);
    run<256, 2, 1, 4>(sms, out);
    run_beside<80, 160>(sms, out);
    run_beside<80, 320>(sms, out);
    run_beside<80, 640>(sms, out);
    run_beside<80, 160, true>(sms, out);
    run_beside<80, 320, true>(sms, out);
    run_beside<80, 640, true>(sms, out);
    run_beside<80, 320, false, true>(sms, out);
    run_beside<80, 320, true, true>(sms, out);
    run_beside<80, 640, true, true>(sms, out);
    cudaFree(out);
    return 0;
}
