// staged.cuh: the epilogue of the warp-specialised kernels (gemm/ws_gemm.cuh): the two
// consumer warpgroups' accumulators through shared memory (the idle pipeline stages of a
// one-tile block, a region past the ring in a persistent one), so that each token's 128 outputs
// leave as 16-byte stores instead of 2-byte ones.
#ifndef HC_K_EPILOGUE_STAGED_CUH
#define HC_K_EPILOGUE_STAGED_CUH

#include "codec/bf16.cuh"
#include "memory/ptx.cuh"

/* Of a block's first `live` stripes (2 SPW a block, SPW a consumer warpgroup), how many are
 * warpgroup wgc's */
template <int SPW> __device__ __forceinline__ unsigned wg_stripes(unsigned live, unsigned wgc) {
    return wgc ? (live > SPW ? live - SPW : 0u) : (live < SPW ? live : (unsigned)SPW);
}

/* Consumer warpgroup wgc, lane row r0 and column pair c of its warp: its SPW stripes' TOKS / 8
 * C fragments each (d: SPW x TOKS / 2, stripe wgc SPW + j in d + j TOKS / 2) to a
 * [TOKS][128 SPW + 8] bf16 block at smem (the 8: conflict-free for the fragment layout), its
 * stripes j < lw only (the block's stripes that exist: lw of the warpgroup's). Every consumer
 * thread calls this after its last wgmma is done (smem: no copy of the producer's in flight
 * there), and the block is read after it returns (the entry barrier keeps the next call from
 * writing it before every consumer has read it). */
template <int TOKS, int SPW>
__device__ __forceinline__ hc_u16 *stage_sums(const float *d, hc_u8 *smem, unsigned wgc,
                                              unsigned r0, unsigned c, unsigned lw) {
    constexpr unsigned RS = 128 * SPW + 8; /* a token's row */
    bar_sync<1, 256>();
    hc_u16 *out = (hc_u16 *)smem;
    /* (a stripe past N has nothing to write; ptxas also needs the accumulator reads in a
     * block of their own: straight after the wait it serialises every wgmma, warning C7514) */
#pragma unroll
    for (int j = 0; j < SPW; j++) {
        const unsigned nl = (wgc * SPW + j) * 64 + r0;
        if ((unsigned)j < lw)
#pragma unroll
            for (int i = 0; i < TOKS / 8; i++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    out[(i * 8 + 2 * c + (e & 1)) * RS + nl + (e >= 2 ? 8 : 0)] =
                        bf16_of(d[j * (TOKS / 2) + i * 4 + e]);
    }
    bar_sync<1, 256>();
    return out;
}

/* The sums staged (stripe nb0 + wgc SPW + j of the block's first `live`), then each of the
 * block's tokens from tok0 below m has its 128 SPW outputs from row nb0 x 64 written as
 * 16-byte stores (threads 128..383: tid). */
template <int TOKS, int SPW = 1>
__device__ __forceinline__ void store_staged(const float *d, hc_u8 *smem, unsigned tid,
                                             unsigned wgc, unsigned r0, unsigned c, unsigned live,
                                             hc_u16 *__restrict__ y, hc_u64 nb0, hc_u64 tok0,
                                             const hc_mma_params &p, hc_u64 m) {
    constexpr unsigned RS = 128 * SPW + 8, PCS = 16 * SPW; /* a token's row; its 16-byte pieces */
    const hc_u16 *out = stage_sums<TOKS, SPW>(d, smem, wgc, r0, c, wg_stripes<SPW>(live, wgc));
    const bool vec = (p.N & 7) == 0 && ((size_t)y & 15) == 0;
    for (unsigned q = tid - 128; q < TOKS * PCS; q += 256) {
        const unsigned tl = q / PCS, pc = q % PCS;
        const hc_u64 tok = tok0 + tl, n = nb0 * 64 + pc * 8;
        if (tok >= m || n >= p.N) continue;
        const hc_u16 *src = out + tl * RS + pc * 8;
        if (vec) {
            *(uint4 *)(y + tok * p.N + n) = *(const uint4 *)src;
        } else {
            for (unsigned j = 0; j < 8 && n + j < p.N; j++) y[tok * p.N + n + j] = src[j];
        }
    }
}

#endif
