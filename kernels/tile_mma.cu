// tile_mma.cu: the fast kernels over the tiled layouts (docs/layouts.md): bf16 activations in,
// bf16 out, float32 accumulation on the tensor cores. Compiled at run time by NVRTC once per
// kind of layer (codec/kind.cuh: -DHC_CODEC, -DHC_SK, -DHC_LGS, -DHC_ZP, all required); N, K,
// M and the expert are run-time arguments, so every shape of a model shares its few modules.
// The measured constants of the families are config.h's. This file holds only the entry
// points; the code is in headers by role:
//   memory/   ptx.cuh (shared memory, cp.async, barriers, PDL), tma.cuh (tensor maps, TMA and
//             bulk copies, mbarrier), ktile.cuh (the cp.async K tile of the large-M kernels)
//   mma/      mma_sync.cuh (mma.sync m16n8k16, ldmatrix), wgmma.cuh (wgmma, descriptors)
//   codec/    kind.cuh (the module's kind and tile geometry), bf16.cuh, scale.cuh (scales and
//             zero points), codes.cuh (codes -> exact bf16), frag.cuh (A fragments)
//   gemm/     gemv.cuh (small M), mma_gemm.cuh, wgmma_gemm.cuh, ws_gemm.cuh (warp-specialised),
//             skinny_gemm.cuh (M <= 64, persistent, stream-K)
//   epilogue/ store_c.cuh (registers -> Y), staged.cuh (through shared memory), splitk.cuh
//             (the small-M kernels' sums over warps and blocks), streamk.cuh (the skinny
//             kernels' cut output tiles)
// Which kernel runs for a call (M, device) is the runtime's choice (docs/gpu.md).
#include "gemm/gemv.cuh"
#include "gemm/mma_gemm.cuh"
#include "gemm/skinny_gemm.cuh"
#include "gemm/wgmma_gemm.cuh"
#include "gemm/ws_gemm.cuh"

/* ---- small M (gemm/gemv.cuh): grid (tiles_n, K split), 128 threads. Dynamic shared memory:
 * 4 warps x HC_GEMV_STAGES x (chunk bytes + TOK x 128); M = 1: 4 warps x (HC_GEMV1_STAGES x
 * (chunk bytes + 128) + 128). x 16-byte aligned with K % 8 == 0 (the host gathers otherwise);
 * ws: the split's partial sums, cnt: a counter per stripe, zero between launches. ---- */
extern "C" __global__ void __launch_bounds__(HC_GEMV_THREADS, HC_GEMV_MINB)
    hc_mma_gemv_t1(const hc_u8 *w, hc_mma_params p, hc_u64 expert, const hc_u16 *x, hc_u64 m,
                   hc_u16 *y, float *ws, unsigned *cnt) {
    gemv_body<8, 1, HC_GEMV1_STAGES>(w, p, expert, x, m, y, ws, cnt, blockIdx.x);
}
extern "C" __global__ void __launch_bounds__(HC_GEMV_THREADS, HC_GEMV_MINB)
    hc_mma_gemv_t8(const hc_u8 *w, hc_mma_params p, hc_u64 expert, const hc_u16 *x, hc_u64 m,
                   hc_u16 *y, float *ws, unsigned *cnt) {
    gemv_body<8, 8, HC_GEMV_STAGES>(w, p, expert, x, m, y, ws, cnt, blockIdx.x);
}
extern "C" __global__ void __launch_bounds__(HC_GEMV_THREADS, HC_GEMV16_MINB)
    hc_mma_gemv_t16(const hc_u8 *w, hc_mma_params p, hc_u64 expert, const hc_u16 *x, hc_u64 m,
                    hc_u16 *y, float *ws, unsigned *cnt) {
    constexpr int SP = HC_GEMV_STRIPES(16u, HC_CHUNK_BYTES);
    gemv_body<16, 16, HC_GEMV_STAGES, (HC_GEMV_PDL != 0), SP>(w, p, expert, x, m, y, ws, cnt,
                                                               (hc_u64)blockIdx.x * SP);
}

/* ---- large M on mma.sync (gemm/mma_gemm.cuh) ---- */
extern "C" __global__ void __launch_bounds__(HC_GEMM_THREADS)
    hc_mma_gemm(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,
                const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y) {
    mma_gemm(w, p, expert, x, m, y);
}

/* ---- large M on wgmma (sm_90a; gemm/wgmma_gemm.cuh): two blocks per SM ---- */
extern "C" __global__ void __launch_bounds__(HC_GEMM_THREADS, 2)
    hc_wgmma_gemm(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,
                  const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y) {
#ifdef HC_SM90A
    wgmma_gemm(w, p, expert, x, m, y);
#else
    (void)w, (void)p, (void)expert, (void)x, (void)m, (void)y;
    __trap(); /* the host launches this kernel on sm_90a only */
#endif
}

/* ---- large M, warp-specialised (sm_90a; gemm/ws_gemm.cuh): one entry point per token tile,
 * 64 and 128 for 16 < M <= 128 and for layers with few stripes (more blocks; bench/NOTES.md
 * v18), 256 above ---- */
#ifdef HC_SM90A
#define HC_WS_BODY(toks) ws_gemm<toks>(w, p, expert, m, y, tmx)
#else
#define HC_WS_BODY(toks) \
    ((void)w, (void)p, (void)expert, (void)m, (void)y, (void)tmx, __trap()) /* sm_90a only */
#endif
#define HC_WS_KERNEL(name, toks)                                                               \
    extern "C" __global__ void __launch_bounds__(HC_WS_THREADS, 1)                             \
        name(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,                      \
             const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y,                   \
             const __grid_constant__ hc_tmap tmx) {                                            \
        (void)x;                                                                               \
        HC_WS_BODY(toks);                                                                      \
    }
HC_WS_KERNEL(hc_wgmma_gemm256, 256)
HC_WS_KERNEL(hc_wgmma_gemm64, 64)
HC_WS_KERNEL(hc_wgmma_gemm128, 128)
/* the same tiles cut stream-K over a grid of the SMs ("ws128k", v84: the pick at 64 < M <= 128
 * on layers of few stripes; ws / cnt as the skinny kernels': the segments' sums and a counter
 * per output tile) */
#ifdef HC_SM90A
#define HC_WSK_BODY(toks) ws_gemm_streamk<toks>(w, p, expert, m, y, tmx, ws, cnt)
#else
#define HC_WSK_BODY(toks)                                                                      \
    ((void)w, (void)p, (void)expert, (void)m, (void)y, (void)tmx, (void)ws, (void)cnt, __trap())
#endif
extern "C" __global__ void __launch_bounds__(HC_WS_THREADS, 1)
    hc_wgmma_gemm128k(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,
                      const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y,
                      const __grid_constant__ hc_tmap tmx, float *ws, unsigned *cnt) {
    (void)x;
    HC_WSK_BODY(128);
}

/* ---- skinny (sm_90a; gemm/skinny_gemm.cuh): one entry point per token tile; ws: the
 * segments' partial sums, cnt: a counter per output tile, zero between launches ---- */
#ifdef HC_SM90A
#define HC_SKINNY_BODY(toks, q) skinny_gemm<toks, q>(w, p, expert, m, y, tmx, ws, cnt)
#else
#define HC_SKINNY_BODY(toks, q)                                                                \
    ((void)w, (void)p, (void)expert, (void)m, (void)y, (void)tmx, (void)ws, (void)cnt,         \
     __trap()) /* sm_90a only */
#endif
#define HC_SKINNY_KERNEL(name, toks, q)                                                        \
    extern "C" __global__ void __launch_bounds__(HC_SKINNY_THREADS, 1)                         \
        name(const hc_u8 *__restrict__ w, hc_mma_params p, hc_u64 expert,                      \
             const hc_u16 *__restrict__ x, hc_u64 m, hc_u16 *__restrict__ y,                   \
             const __grid_constant__ hc_tmap tmx, float *ws, unsigned *cnt) {                  \
        (void)x;                                                                               \
        HC_SKINNY_BODY(toks, q);                                                               \
    }
HC_SKINNY_KERNEL(hc_skinny_gemm16, 16, false)
HC_SKINNY_KERNEL(hc_skinny_gemm32, 32, false)
HC_SKINNY_KERNEL(hc_skinny_gemm64, 64, false)
/* K in quads inside the block, whole output tiles of one stripe (no fix-up; v59) */
HC_SKINNY_KERNEL(hc_skinny_gemm16q, 16, true)
HC_SKINNY_KERNEL(hc_skinny_gemm32q, 32, true)
HC_SKINNY_KERNEL(hc_skinny_gemm64q, 64, true)
