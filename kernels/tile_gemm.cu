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

// hc_tile_gemv_int4: small-M path for 4-bit integer tiles (tile64-int, code_bits 4), memory
// bound: one block per 64-row stripe (and expert), four warps sharing its K tiles; each lane
// loads its 16-byte fragment vectors (coalesced: a warp reads 512 contiguous bytes per row
// block), decodes 8 codes per word and accumulates X W^T for its rows; lanes of a row group
// and the warps then reduce. M <= HC_GEMV_MAX_M tokens.
#define HC_GEMV_MAX_M 8
extern "C" __global__ void __launch_bounds__(128)
hc_tile_gemv_int4(const hc_u8 *w, hc_core_params p, hc_u64 expert, const float *x, hc_u64 m,
                  float *y) {
    __shared__ float red[4][64][HC_GEMV_MAX_M];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const hc_u64 nb = blockIdx.x;
    const hc_u8 *stripe = w + ((expert * p.tiles_n + nb) * p.tiles_k) * p.chunk_bytes;
    float acc[8][HC_GEMV_MAX_M]; /* rows rb*16 + lane/4 (+8) for rb 0..3 */
    for (int i = 0; i < 8; i++)
        for (int t = 0; t < HC_GEMV_MAX_M; t++) acc[i][t] = 0.0f;
    for (hc_u64 kb = warp; kb < p.tiles_k; kb += 4) {
        const hc_u8 *chunk = stripe + kb * p.chunk_bytes;
        const uint4 *vec = (const uint4 *)chunk;
        for (unsigned rb = 0; rb < 4; rb++) {
            uint4 v = __ldg(&vec[rb * 32 + lane]);
            unsigned words[4] = {v.x, v.y, v.z, v.w};
            unsigned r0 = rb * 16 + lane / 4, r8 = r0 + 8;
            for (unsigned ks = 0; ks < 4; ks++) {
                unsigned wd = words[ks];
                unsigned c0 = ks * 16 + (lane % 4) * 2;
                hc_u64 k0 = kb * 64 + c0;
                for (unsigned a = 0; a < 8; a++) {
                    unsigned nib = (a % 2) * 4 + a / 2;
                    unsigned u = (wd >> (4 * nib)) & 15u;
                    unsigned r = (a & 2) ? r8 : r0;
                    unsigned c = c0 + (a & 1) + ((a & 4) ? 8 : 0);
                    hc_u64 k = k0 + (a & 1) + ((a & 4) ? 8 : 0);
                    if (k >= p.K) continue;
                    unsigned j = p.S > 1 ? c / p.g : 0;
                    float s = (float)hc_core_scale(&p, chunk, r, j);
                    float q;
                    if (p.sign_magnitude) q = (u & 8) ? -(float)(u & 7) : (float)(u & 7);
                    else q = (float)u - (float)(p.zeros ? chunk[p.code_bytes + p.scale_bytes + r * p.S + j]
                                                         : p.zero_const);
                    float wv = q * s;
                    int ri = (int)rb * 2 + ((a & 2) ? 1 : 0);
                    for (hc_u64 t = 0; t < m && t < HC_GEMV_MAX_M; t++)
                        acc[ri][t] += wv * x[t * p.K + k];
                }
            }
        }
    }
    /* the four lanes of a row group hold parts of the same rows */
    for (int i = 0; i < 8; i++)
        for (int t = 0; t < HC_GEMV_MAX_M; t++) {
            float vsum = acc[i][t];
            vsum += __shfl_xor_sync(0xffffffffu, vsum, 1);
            vsum += __shfl_xor_sync(0xffffffffu, vsum, 2);
            acc[i][t] = vsum;
        }
    if (lane % 4 == 0)
        for (int i = 0; i < 8; i++) {
            unsigned r = (unsigned)(i / 2) * 16 + lane / 4 + (i % 2) * 8;
            for (int t = 0; t < HC_GEMV_MAX_M; t++) red[warp][r][t] = acc[i][t];
        }
    __syncthreads();
    for (unsigned idx = threadIdx.x; idx < 64 * HC_GEMV_MAX_M; idx += blockDim.x) {
        unsigned r = idx / HC_GEMV_MAX_M, t = idx % HC_GEMV_MAX_M;
        hc_u64 n = nb * 64 + r;
        if (n >= p.N || t >= m) continue;
        y[t * p.N + n] = red[0][r][t] + red[1][r][t] + red[2][r][t] + red[3][r][t];
    }
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
