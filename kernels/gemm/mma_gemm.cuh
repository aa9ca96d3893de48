// mma_gemm.cuh: the mma.sync family (hc_mma_gemm: M > 16 where wgmma is not available),
// matrix bound. A block of eight warps computes 128 weight rows x 128 tokens over all of K with
// a cp.async pipeline (HC_GEMM_STAGES, config.h) of (two chunks + a swizzled 128 x 64
// activation tile); each weight is decoded, scaled in float32 and rounded once to bf16 (as
// dequantize-then-GEMM would), activations go through ldmatrix.
#ifndef HC_K_GEMM_MMA_GEMM_CUH
#define HC_K_GEMM_MMA_GEMM_CUH

#include "codec/frag.cuh"
#include "epilogue/store_c.cuh"
#include "memory/ktile.cuh"
#include "mma/mma_sync.cuh"

/* x: [m][ldx] bf16 with K % 8 == 0, ldx % 8 == 0 and 16-byte alignment (the host gathers
 * otherwise); grid (ceil(tiles_n / 2), ceil(m / 128)); 256 threads; dynamic shared memory
 * HC_GEMM_STAGES x (2 chunk bytes + 16384). */
__device__ __forceinline__ void mma_gemm(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                         hc_u64 expert, const hc_u16 *__restrict__ x, hc_u64 m,
                                         hc_u16 *__restrict__ y) {
    hc_u8 *smem = hc_smem;
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned g = lane >> 2, c = lane & 3;
    const unsigned wr = warp & 3, wc = warp >> 2; /* 32-row quarter, 64-token half */
    const hc_u64 cb = HC_CHUNK_BYTES, stage_bytes = 2 * cb + 16384;
    const hc_u64 nb0 = (hc_u64)blockIdx.x * 2, tok0 = (hc_u64)blockIdx.y * 128;
    const bool two = nb0 + 1 < p.tiles_n;
    const hc_u8 *wsrc = w + (expert * p.tiles_n + nb0) * p.tiles_k * cb;
    const hc_u64 sstride = p.tiles_k * cb; /* stripe to stripe */

    float acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int mt = 0; mt < 8; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][mt][e] = 0.0f;

    auto issue = [&](hc_u64 kb) {
        hc_u8 *st = smem + (kb % HC_GEMM_STAGES) * stage_bytes;
        load_ktile<128, 256>(st + 2 * cb, st, tid, x, tok0, m, p, kb, wsrc, sstride, cb, two);
    };
#pragma unroll
    for (int s = 0; s < HC_GEMM_STAGES - 1; s++) {
        if ((hc_u64)s < p.tiles_k) issue(s);
        cp_commit();
    }
    for (hc_u64 kb = 0; kb < p.tiles_k; kb++) {
        cp_wait<HC_GEMM_STAGES - 2>();
        __syncthreads();
        if (kb + HC_GEMM_STAGES - 1 < p.tiles_k) issue(kb + HC_GEMM_STAGES - 1);
        cp_commit();
        const hc_u8 *st = smem + (kb % HC_GEMM_STAGES) * stage_bytes;
        const hc_u8 *ch = st + (wr >> 1) * cb;
        const hc_u8 *xs = st + 2 * cb;
        rb_codes v[2];
#pragma unroll
        for (int i = 0; i < 2; i++) load_codes(ch, (wr & 1) * 2 + i, lane, v[i]);
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            unsigned b[8][2];
#pragma unroll
            for (int mp = 0; mp < 4; mp++) {
                unsigned mi = lane >> 3, t = wc * 64 + mp * 16 + (mi >> 1) * 8 + (lane & 7);
                unsigned pc = ks * 2 + (mi & 1);
                unsigned addr = smem_addr(xs + t * 128 + ((pc ^ (t & 7)) * 16));
                ldmatrix_x4(addr, b[2 * mp][0], b[2 * mp][1], b[2 * mp + 1][0], b[2 * mp + 1][1]);
            }
            const unsigned j = (unsigned)ks >> HC_LGS;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                unsigned a[4];
                scaled_frag(ch, p, ((wr & 1) * 2 + i) * 16 + g, j, words_of(v[i], ks), a);
#pragma unroll
                for (int mt = 0; mt < 8; mt++) mma_bf16(acc[i][mt], a, b[mt][0], b[mt][1]);
            }
        }
    }
    cp_wait<0>();
#pragma unroll
    for (int i = 0; i < 2; i++)
        store_c<8>(&acc[i][0][0], y, (nb0 + (wr >> 1)) * 64 + ((wr & 1) * 2 + i) * 16 + g,
                   tok0 + wc * 64, c, p, m);
}

#endif
