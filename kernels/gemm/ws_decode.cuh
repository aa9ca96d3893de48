// ws_decode.cuh: what a consumer warp of the warp-specialised families (gemm/ws_gemm.cuh,
// gemm/skinny_gemm.cuh) does with a stage once its bytes have landed: its 16 rows of the
// stage's chunk into the A fragments of the four k16 steps, scaled in float32 and rounded once
// to bf16 (the large-M numerics, codec/frag.cuh).
#ifndef HC_K_GEMM_WS_DECODE_CUH
#define HC_K_GEMM_WS_DECODE_CUH

#include "codec/frag.cuh"
#include "memory/tma.cuh"

#ifdef HC_SM90A
/* Warp wl (of its warpgroup's four; lane, r0 = wl * 16 + lane / 4) decodes rows wl * 16.. of
 * the chunk at ch into a. On folded MXFP4 (HC_GEMV_MXS) each lane first rewrites one of its
 * rows' group scales as bf16 over its record, and every lane then reads the 16 it applies. */
__device__ __forceinline__ void ws_decode(hc_u8 *ch, const hc_mma_params &p, unsigned wl,
                                          unsigned lane, unsigned r0, unsigned (*a)[4]) {
#if HC_CODEC == HC_CODEC_MXFOLD && HC_GEMV_MXS
    constexpr bool SH = true;
    { /* this warp's 16 rows' 32 group scales, one a lane, as bf16 over the records */
        hc_u8 *rw = ch + HC_CODE_BYTES + (wl * 16 + (lane >> 1)) * 4;
        const unsigned rc = *(const unsigned *)rw;
        __syncwarp(); /* (the record's other lane has read it too) */
        *(hc_u16 *)(rw + (lane & 1) * 2) = (hc_u16)mxfold_bf16(rc, lane & 1);
        /* (ordered before the producer's next bulk copy into this stage, async proxy) */
        fence_proxy_async();
        __syncwarp();
    }
#else
    constexpr bool SH = false;
#endif
    rb_codes v;
    load_codes(ch, wl, lane, v);
#pragma unroll
    for (int ks = 0; ks < 4; ks++)
        scaled_frag<SH>(ch, p, r0, (unsigned)ks >> HC_LGS, words_of(v, ks), a[ks]);
}
#endif

#endif
