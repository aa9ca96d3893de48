// wgmma_gemm.cuh: the wgmma family (hc_wgmma_gemm, sm_90a): hc_mma_gemm's tiles and cp.async
// pipeline (HC_WGMMA_STAGES, config.h) on wgmma m64n128k16, A in registers. The runtime uses it
// for M > 16 on sm_90a when the warp-specialised kernels cannot run (no tensor maps).
#ifndef HC_K_GEMM_WGMMA_GEMM_CUH
#define HC_K_GEMM_WGMMA_GEMM_CUH

#include "codec/frag.cuh"
#include "epilogue/store_c.cuh"
#include "memory/ktile.cuh"
#include "memory/tma.cuh"
#include "mma/wgmma.cuh"

#ifdef HC_SM90A
/* A block of two warpgroups computes 128 weight rows (warpgroup w: stripe 2 blockIdx.x + w) x
 * 128 tokens. Per K tile: each warp decodes its row block's A fragments (scaled, rounded to
 * bf16) into registers, then four wgmma m64n128k16 read the shared activation tile (written by
 * cp.async in the layout the 128-byte swizzle expects: 16-byte piece p of token t at t * 128 +
 * (p ^ (t % 8)) * 16). Same grid and arguments as hc_mma_gemm; shared memory 1024 +
 * HC_WGMMA_STAGES x round1024(16384 + 2 chunk bytes). Each tile's wgmma is waited for before
 * the next is decoded; two blocks per SM overlap the two (double-buffering A in registers cost
 * the second block and lost: bench/NOTES.md v7). */
__device__ __forceinline__ void wgmma_gemm(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                           hc_u64 expert, const hc_u16 *__restrict__ x, hc_u64 m,
                                           hc_u16 *__restrict__ y) {
    hc_u8 *smem = smem_1024();
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned g = lane >> 2, c = lane & 3;
    const unsigned wg = warp >> 2, rb = warp & 3;
    const hc_u64 cb = HC_CHUNK_BYTES, stage_bytes = (16384 + 2 * cb + 1023) / 1024 * 1024;
    const hc_u64 nb0 = (hc_u64)blockIdx.x * 2, tok0 = (hc_u64)blockIdx.y * 128;
    const bool two = nb0 + 1 < p.tiles_n;
    const hc_u8 *wsrc = w + (expert * p.tiles_n + nb0) * p.tiles_k * cb;
    const hc_u64 sstride = p.tiles_k * cb;

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.0f;

    auto issue = [&](hc_u64 kb) {
        hc_u8 *st = smem + (kb % HC_WGMMA_STAGES) * stage_bytes;
        load_ktile<128, 256>(st, st + 16384, tid, x, tok0, m, p, kb, wsrc, sstride, cb, two);
    };
#pragma unroll
    for (int s = 0; s < HC_WGMMA_STAGES - 1; s++) {
        if ((hc_u64)s < p.tiles_k) issue(s);
        cp_commit();
    }
    const unsigned r0 = rb * 16 + g;
    for (hc_u64 kb = 0; kb < p.tiles_k; kb++) {
        cp_wait<HC_WGMMA_STAGES - 2>();
        fence_proxy_async();
        __syncthreads(); /* tile kb is here; every warp's wgmma of tile kb - 1 is done */
        if (kb + HC_WGMMA_STAGES - 1 < p.tiles_k) issue(kb + HC_WGMMA_STAGES - 1);
        cp_commit();
        const hc_u8 *st = smem + (kb % HC_WGMMA_STAGES) * stage_bytes;
        const hc_u8 *ch = st + 16384 + wg * cb;
        rb_codes v;
        load_codes(ch, rb, lane, v);
        unsigned a[4][4];
#pragma unroll
        for (int ks = 0; ks < 4; ks++) scaled_frag(ch, p, r0, (unsigned)ks >> HC_LGS, words_of(v, ks), a[ks]);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ks++) wgmma_m64n128k16(d, a[ks], b_desc(st + ks * 32));
        wgmma_commit();
        wgmma_wait<0>();
    }
    cp_wait<0>();
    if (wg == 0 || two) store_c<16>(d, y, (nb0 + wg) * 64 + r0, tok0, c, p, m);
}
#endif

#endif
