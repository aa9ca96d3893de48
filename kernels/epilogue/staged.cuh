// staged.cuh: the epilogue of the warp-specialised kernels (gemm/ws_gemm.cuh): the two
// consumer warpgroups' accumulators through shared memory (their pipeline stages are idle by
// then), so that each token's 128 outputs leave as 16-byte stores instead of 2-byte ones.
#ifndef HC_K_EPILOGUE_STAGED_CUH
#define HC_K_EPILOGUE_STAGED_CUH

#include "codec/bf16.cuh"
#include "memory/ptx.cuh"

/* Consumer warpgroup wgc (threads 128..383: tid), lane row r0 and column pair c of its warp: its
 * TOKS / 8 C fragments d go to a [TOKS][136] bf16 block at smem (136: conflict-free for the
 * fragment layout), then each of the block's tokens from tok0 has its 128 outputs from row
 * nb0 * 64 written (the second stripe only when two). Every consumer thread calls this after
 * its last wgmma is done; the producer has nothing in flight. */
template <int TOKS>
__device__ __forceinline__ void store_staged(const float *d, hc_u8 *smem, unsigned tid,
                                             unsigned wgc, unsigned r0, unsigned c, bool two,
                                             hc_u16 *__restrict__ y, hc_u64 nb0, hc_u64 tok0,
                                             const hc_mma_params &p, hc_u64 m) {
    bar_sync<1, 256>();
    hc_u16 *out = (hc_u16 *)smem;
    const unsigned nl = wgc * 64 + r0;
    /* (a stripe past N has nothing to write; ptxas also needs the accumulator reads in a
     * block of their own: straight after the wait it serialises every wgmma, warning C7514) */
    if (wgc == 0 || two)
#pragma unroll
        for (int i = 0; i < TOKS / 8; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                out[(i * 8 + 2 * c + (e & 1)) * 136 + nl + (e >= 2 ? 8 : 0)] = bf16_of(d[i * 4 + e]);
    bar_sync<1, 256>();
    const bool vec = (p.N & 7) == 0 && ((size_t)y & 15) == 0;
    for (unsigned q = tid - 128; q < TOKS * 16; q += 256) {
        const unsigned tl = q >> 4, pc = q & 15;
        const hc_u64 tok = tok0 + tl, n = nb0 * 64 + pc * 8;
        if (tok >= m || n >= p.N) continue;
        const hc_u16 *src = out + tl * 136 + pc * 8;
        if (vec) {
            *(uint4 *)(y + tok * p.N + n) = *(const uint4 *)src;
        } else {
            for (unsigned j = 0; j < 8 && n + j < p.N; j++) y[tok * p.N + n + j] = src[j];
        }
    }
}

#endif
