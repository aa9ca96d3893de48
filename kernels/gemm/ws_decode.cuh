// ws_decode.cuh: what a consumer warp of the warp-specialised families (gemm/ws_gemm.cuh,
// gemm/skinny_gemm.cuh) does with a stage once its bytes have landed: its 16 rows of the
// stage's chunk into the A fragments of the four k16 steps, scaled in float32 and rounded once
// to bf16 (the large-M numerics, codec/frag.cuh).
#ifndef HC_K_GEMM_WS_DECODE_CUH
#define HC_K_GEMM_WS_DECODE_CUH

#include "codec/frag.cuh"
#include "memory/tma.cuh"

#ifdef HC_SM90A
/* (SH: the records hold bf16 group scales once ws_decode_codes has run) */
#if HC_CODEC == HC_CODEC_MXFOLD && HC_GEMV_MXS
constexpr bool HC_WS_SH = true;
#else
constexpr bool HC_WS_SH = false;
#endif
/* ws_decode in two parts (config.h HC_WS_FINE decodes a tile's k16 steps a group at a time
 * between its wgmma): this warp's codes of the chunk into v (on folded MXFP4 after the scale
 * rewrite where first: once a chunk), then step ks's A fragment from them */
__device__ __forceinline__ void ws_decode_codes(hc_u8 *ch, unsigned wl, unsigned lane, rb_codes &v,
                                                bool first = true) {
#if HC_CODEC == HC_CODEC_MXFOLD && HC_GEMV_MXS
    if (first) { /* this warp's 16 rows' 32 group scales, one a lane, as bf16 over the records */
        hc_u8 *rw = ch + HC_CODE_BYTES + (wl * 16 + (lane >> 1)) * 4;
        const unsigned rc = *(const unsigned *)rw;
        __syncwarp(); /* (the record's other lane has read it too) */
        *(hc_u16 *)(rw + (lane & 1) * 2) = (hc_u16)mxfold_bf16(rc, lane & 1);
        /* (ordered before the producer's next bulk copy into this stage, async proxy) */
        fence_proxy_async();
        __syncwarp();
    }
#else
    (void)first;
#endif
    load_codes(ch, wl, lane, v);
}
__device__ __forceinline__ void ws_decode_step(const hc_u8 *ch, const hc_mma_params &p, unsigned r0,
                                               const rb_codes &v, int ks, unsigned *a) {
    scaled_frag<HC_WS_SH>(ch, p, r0, (unsigned)ks >> HC_LGS, words_of(v, ks), a);
}
/* Warp wl (of its warpgroup's four; lane, r0 = wl * 16 + lane / 4) decodes rows wl * 16.. of
 * the chunk at ch into a. On folded MXFP4 (HC_GEMV_MXS) each lane first rewrites one of its
 * rows' group scales as bf16 over its record, and every lane then reads the 16 it applies. */
__device__ __forceinline__ void ws_decode(hc_u8 *ch, const hc_mma_params &p, unsigned wl,
                                          unsigned lane, unsigned r0, unsigned (*a)[4]) {
    rb_codes v;
    ws_decode_codes(ch, wl, lane, v);
#pragma unroll
    for (int ks = 0; ks < 4; ks++) ws_decode_step(ch, p, r0, v, ks, a[ks]);
}
#endif

#endif
