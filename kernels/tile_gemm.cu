// tile_gemm.cu: Y = X W^T over the tiled layouts (docs/layouts.md), compiled at run time by
// NVRTC. hc_tile_gemm_ref is the reference kernel: one thread per output, the weights read
// through layout_core.h (the same code as the CPU executor) and summed in the same order, so
// with --fmad=false its results equal the CPU executor's bit for bit.
#include "layout_core.h"

extern "C" __global__ void hc_tile_gemm_ref(const hc_u8 *w, hc_core_params p, hc_u64 expert,
                                           const float *x, hc_u64 m, float *y) {
    hc_u64 n = (hc_u64)blockIdx.x * blockDim.x + threadIdx.x;
    hc_u64 row = blockIdx.y;
    if (n >= p.N || row >= m) return;
    const hc_u8 *stripe = w + ((expert * p.tiles_n + n / 64) * p.tiles_k) * p.chunk_bytes;
    float acc = 0.0f;
    for (hc_u64 k = 0; k < p.K; k++) {
        const hc_u8 *chunk = stripe + (k / 64) * p.chunk_bytes;
        float wv = (float)hc_core_value(&p, chunk, (unsigned)(n % 64), (unsigned)(k % 64));
        acc += x[row * p.K + k] * wv;
    }
    y[row * p.N + n] = acc;
}
