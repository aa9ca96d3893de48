// moe_act.cuh: a mixture-of-experts block's activation between its projections, in one place
// for both of its uses -- hc_moe_act (moe_route.cu), the launch of its own after gate_up, and
// the warp-specialised gate_up kernels' epilogue that applies it before anything leaves the
// block (store_act, below: gpu_moe.c decides which runs). Both read gate and up as bf16 (the
// GEMM's outputs rounded once), add the biases and compute in float32, so the two give the same
// bits.
#ifndef HC_K_EPILOGUE_MOE_ACT_CUH
#define HC_K_EPILOGUE_MOE_ACT_CUH

#include "codec/bf16.cuh"
#include "memory/ptx.cuh"

__device__ __forceinline__ float f_of_bf16(hc_u16 v) { return __uint_as_float((unsigned)v << 16); }

/* act 0: silu(g) x u; 1 (gpt-oss): g clamped to <= limit, u to [-limit, limit],
 * g x sigmoid(alpha x g) x (u + 1). The exponential and the division are the approximate ones
 * (ex2.approx, rcp.approx: a few float32 ulp, far below the bf16 rounding that follows; a g
 * below about -87 gives 0 where the exact form gives a number under 1e-36): the accurate expf
 * and IEEE division made the activation compute-bound, in the fused epilogue and its own launch
 * alike (bench/NOTES.md v77) */
__device__ __forceinline__ float moe_act(float g, float u, unsigned act, float alpha, float limit) {
    if (act == 1) {
        g = fminf(g, limit);
        u = fminf(fmaxf(u, -limit), limit);
        return __fdividef(g, 1.0f + __expf(-alpha * g)) * (u + 1.0f);
    }
    return __fdividef(g, 1.0f + __expf(-g)) * u;
}

/* Gate and up of 8 outputs from two 16-byte pieces of bf16: pairs (interleaved rows) -- a and
 * b hold (gate, up) of outputs 0-3 and 4-7; halves -- a gate's 8, b up's 8 */
__device__ __forceinline__ void gate_up_of(uint4 a, uint4 b, bool pairs, float g[8], float u[8]) {
    const unsigned wa[4] = {a.x, a.y, a.z, a.w}, wb[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
    for (int k = 0; k < 8; k++) {
        if (pairs) {
            const unsigned w = k < 4 ? wa[k] : wb[k - 4];
            g[k] = f_of_bf16((hc_u16)(w & 0xFFFFu)), u[k] = f_of_bf16((hc_u16)(w >> 16));
        } else {
            const unsigned gw = wa[k / 2], uw = wb[k / 2];
            g[k] = f_of_bf16((hc_u16)(k % 2 ? gw >> 16 : gw & 0xFFFFu));
            u[k] = f_of_bf16((hc_u16)(k % 2 ? uw >> 16 : uw & 0xFFFFu));
        }
    }
}

/* What a gate_up block needs to apply the activation itself (the grouped kernels' hc_moe_args
 * carry it; moe_gemm.cu moe_ws_tile / moe_ws_item fill it per block or item). mode 1, halves: the block's first SPW
 * stripes are gate's stripes j0 .., its next SPW the same rows of up (wup: up's first such
 * stripe; live of each half); mode 2, pairs: rows 2 j and 2 j + 1 of the block's 2 SPW stripes
 * are gate and up of output j (interleaved, gpt-oss), outputs from j0 = nb0 x 32. Outputs
 * h[row][j] for j < I (ldh a row), biases bias[j] (gate) and bias[I + j] (up), or none. */
struct ws_act {
    const hc_u8 *wup;
    hc_u16 *h;
    const float *bias;
    hc_u64 ldh, I, j0;
    unsigned mode, live, act;
    float alpha, limit;
};
/* The dense kernels' (and an unfused launch's) stand-in: ws_gemm_block asks on() and, only
 * where it is true, builds the ws_act where it uses it (the producer's chunks, the epilogue),
 * so that nothing of it stays in registers across the main loop. */
struct ws_no_act {
    __device__ __forceinline__ bool on() const { return false; }
    __device__ __forceinline__ ws_act operator()() const { return ws_act{}; }
};

/* The block's staged bf16 sums (epilogue/staged.cuh stage_sums: [TOKS][RS], stripe st at
 * columns st x 64 ..) through the activation into h: each of the block's tokens below m has its
 * 64 SPW outputs from column j0 written, 8 a thread at a time (16-byte stores where the row and
 * I allow), and each of its pad rows (m and past, within the tile) zeros there -- h as the
 * separate launch leaves it, so that down's pad rows multiply zeros, not a stale workspace.
 * Consumer threads only (tid 128..383), after stage_sums. */
template <int TOKS, int SPW>
__device__ __forceinline__ void store_act(const hc_u16 *out, unsigned tid, const ws_act &fa,
                                          hc_u64 tok0, hc_u64 m) {
    constexpr unsigned RS = 128 * SPW + 8, PCS = 8 * SPW; /* a token's staged row; its pieces */
    const bool vec = (fa.ldh & 7) == 0 && ((size_t)fa.h & 15) == 0;
    for (unsigned q = tid - 128; q < TOKS * PCS; q += 256) {
        const unsigned tl = q / PCS, pc = q % PCS;
        const hc_u64 tok = tok0 + tl, j = fa.j0 + pc * 8;
        if (j >= fa.I) continue;
        hc_u16 *dst = fa.h + tok * fa.ldh + j;
        if (tok >= m) { /* a pad row of the tile: zeros, as hc_moe_act writes them */
            if (vec && j + 8 <= fa.I) *(uint4 *)dst = make_uint4(0, 0, 0, 0);
            else for (int k = 0; k < 8 && j + k < fa.I; k++) dst[k] = 0;
            continue;
        }
        /* two 16-byte reads of the staged row: halves -- gate's 8 at column c = 8 pc, up's at
         * 64 SPW + c; pairs -- the 16 interleaved (gate, up) from 2 c */
        const hc_u16 *row = out + tl * RS + (fa.mode == 1 ? pc * 8 : pc * 16);
        float g[8], u[8], v[8];
        gate_up_of(*(const uint4 *)row, *(const uint4 *)(row + (fa.mode == 1 ? 64 * SPW : 8)),
                   fa.mode != 1, g, u);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            if (fa.bias && j + k < fa.I) g[k] += fa.bias[j + k], u[k] += fa.bias[fa.I + j + k];
            v[k] = moe_act(g[k], u[k], fa.act, fa.alpha, fa.limit);
        }
        if (vec && j + 8 <= fa.I) {
            *(uint4 *)dst = make_uint4(bf2_pack(v[0], v[1]), bf2_pack(v[2], v[3]),
                                       bf2_pack(v[4], v[5]), bf2_pack(v[6], v[7]));
        } else {
            for (int k = 0; k < 8 && j + k < fa.I; k++) dst[k] = bf16_of(v[k]);
        }
    }
}

#endif
