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
        float wv = (float)hc__core_value(&p, chunk, (unsigned)(n % 64), (unsigned)(k % 64));
        acc += x[row * p.K + k] * wv;
    }
    y[row * p.N + n] = acc;
}

// hc_stream_read: the bandwidth peer: every 16 bytes of a buffer read once (a grid-stride
// loop), folded into one word per block so the reads cannot be removed.
extern "C" __global__ void hc_stream_read(const uint4 *buf, hc_u64 n16, unsigned *out) {
    unsigned acc = 0;
    for (hc_u64 i = (hc_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n16;
         i += (hc_u64)gridDim.x * blockDim.x) {
        uint4 v = __ldg(&buf[i]);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) out[blockIdx.x % 1024] = acc;
}

// hc_gather_x: bf16 activations for the fast kernels (tile_mma.cu) when they cannot be read in
// place: columns gathered by the act-order permutation (perm may be NULL) and zero-padded from
// K to ldo columns.
extern "C" __global__ void hc_gather_x(const unsigned short *x, hc_u64 m, hc_u64 K,
                                       const int *perm, unsigned short *xo, hc_u64 ldo) {
    hc_u64 total = m * ldo;
    for (hc_u64 i = (hc_u64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (hc_u64)gridDim.x * blockDim.x) {
        hc_u64 t = i / ldo, k = i % ldo;
        xo[i] = k < K ? x[t * K + (perm ? (hc_u64)perm[k] : k)] : (unsigned short)0;
    }
}
