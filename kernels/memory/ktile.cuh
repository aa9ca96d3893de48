// ktile.cuh: the cp.async copy of one K tile for the two cp.async large-M kernels (hc_mma_gemm,
// hc_wgmma_gemm): an activation tile into shared memory with the 128-byte swizzle, and the
// block's two weight chunks.
#ifndef HC_K_MEMORY_KTILE_CUH
#define HC_K_MEMORY_KTILE_CUH

#include "codec/bf16.cuh"
#include "memory/ptx.cuh"

/* K tile kb, copied by NT cooperating threads (thread tid): the activation tile (TOKS tokens x
 * 64 columns from token tok0, zero beyond m and K) into xs with the 128-byte swizzle (16-byte
 * piece q of token t at t * 128 + (q ^ t % 8) * 16), and the block's two weight chunks
 * (stripes wsrc and wsrc + sstride; the second only when two) into cs and cs + cb. */
template <int TOKS, int NT>
__device__ __forceinline__ void load_ktile(hc_u8 *xs, hc_u8 *cs, unsigned tid, const hc_u16 *x,
                                           hc_u64 tok0, hc_u64 m, const hc_mma_params &p,
                                           hc_u64 kb, const hc_u8 *wsrc, hc_u64 sstride,
                                           hc_u64 cb, bool two) {
#pragma unroll
    for (int i = 0; i < TOKS * 8 / NT; i++) {
        unsigned q = tid + i * NT, t = q >> 3, pc = q & 7;
        hc_u64 tok = tok0 + t, k = kb * 64 + pc * 8;
        bool ok = tok < m && k < p.K;
        cp16(xs + t * 128 + ((pc ^ (t & 7)) * 16), ok ? x + tok * p.ldx + k : x, ok ? 16 : 0);
    }
    const unsigned cpieces = (unsigned)(cb / 16);
    for (unsigned q = tid; q < 2 * cpieces; q += NT) {
        unsigned s = q >= cpieces;
        if (s && !two) continue;
        unsigned qq = q - s * cpieces;
        cp16(cs + s * cb + qq * 16, wsrc + s * sstride + kb * cb + qq * 16, 16);
    }
}

#endif
