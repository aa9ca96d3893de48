// moe_act.cuh: the activation between an MoE block's projections, in one place for both users:
// the activation kernel (moe_route.cu, from the gate_up outputs) and the fused epilogue of the
// grouped warp-specialised gate_up (moe_gemm.cu, from the accumulators).
#ifndef HC_K_EPILOGUE_MOE_ACT_CUH
#define HC_K_EPILOGUE_MOE_ACT_CUH

#include "codec/bf16.cuh"
#include "memory/ptx.cuh"
#include "moe_args.h"

/* act 0: silu(g) x u; 1 (gpt-oss): g clamped to <= limit, u to [-limit, limit],
 * g x sigmoid(alpha g) x (u + 1). float32 throughout. */
__device__ __forceinline__ float moe_act(float g, float u, unsigned act, float alpha, float limit) {
    if (act == 1) {
        g = fminf(g, limit);
        u = fminf(fmaxf(u, -limit), limit);
        return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
    }
    return g / (1.0f + expf(-g)) * u;
}

/* The fused epilogue of a grouped gate_up block (consumer threads 128..383, after their last
 * wgmma): the two warpgroups' float32 accumulators d go to a [TOKS][136] float32 block at smem
 * (the idle pipeline stages), then h[tok][j0 + j] = bf16(act(gate j + bias, up j + bias)) for
 * the block's tokens below m and the columns below ep.I -- gate j and up j at staged columns j
 * and 64 + j (HC_MOE_EPI_PAIR: warpgroup 0 ran the gate stripe, 1 the up stripe) or 2j and 2j + 1
 * (HC_MOE_EPI_IL: interleaved rows), e the tiles' expert. */
template <int TOKS>
__device__ __forceinline__ void act_staged(const float *d, hc_u8 *smem, unsigned tid,
                                           unsigned wgc, unsigned r0, unsigned c,
                                           const hc_moe_epi &ep, unsigned e, hc_u64 j0,
                                           hc_u64 tok0, hc_u64 m) {
    bar_sync<1, 256>();
    float *st = (float *)smem;
    const unsigned nl = wgc * 64 + r0;
#pragma unroll
    for (int i = 0; i < TOKS / 8; i++)
#pragma unroll
        for (int q = 0; q < 4; q++)
            st[(i * 8 + 2 * c + (q & 1)) * 136 + nl + (q >= 2 ? 8 : 0)] = d[i * 4 + q];
    bar_sync<1, 256>();
    const bool il = ep.mode == HC_MOE_EPI_IL;
    const float *bg = ep.bias ? ep.bias + (hc_u64)e * 2 * ep.I : nullptr;
    for (unsigned q = tid - 128; q < TOKS * 64; q += 256) {
        const unsigned tl = q >> 6, j = q & 63;
        const hc_u64 tok = tok0 + tl, col = j0 + j;
        if (tok >= m || col >= ep.I) continue;
        const float *row = st + tl * 136;
        float g = il ? row[2 * j] : row[j], u = il ? row[2 * j + 1] : row[64 + j];
        if (bg) g += bg[col], u += bg[ep.I + col];
        ep.h[tok * ep.ldh + col] = bf16_of(moe_act(g, u, ep.act, ep.alpha, ep.limit));
    }
}

#endif
