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

// hc_tile_gemv_int4_m<M>: small-M path for 4-bit integer tiles (tile64-int, code_bits 4),
// memory bound. One block per 64-row stripe (and expert); its four warps share the stripe's K
// tiles. Each lane loads its four 16-byte fragment vectors of a tile (a warp reads 512
// contiguous bytes per row block), takes the activations of its 16 columns once per tile, and
// accumulates for its 8 rows; a row's scale and zero point are applied once per tile when the
// layout has one scale column (S = 1), per element otherwise. Lanes of a row group, then the
// warps, reduce; with gridDim.y > 1 the K tiles are split over blocks whose partial sums are
// added into y (zeroed by the caller) atomically. M (tokens, at most the variant's M) is a
// compile-time bound.
/* One scale of a tile row (S = 1): F32, BF16 or F16 bits from the chunk's scale area. */
__device__ __forceinline__ float row_scale(const hc_u8 *sc, unsigned r, unsigned kind) {
    if (kind == 0) return __ldg((const float *)sc + r);
    unsigned short h = __ldg((const unsigned short *)sc + r);
    if (kind == 1) return __int_as_float((int)((unsigned)h << 16));
    return (float)hc_core_f16(h); /* once per row and tile: the plain decoder will do */
}

/* The fields the small-M path reads (few, so few registers). */
struct hc_gemv_params {
    hc_u64 tiles_n, tiles_k, chunk_bytes, N, K;
    unsigned code_bytes, scale_bytes, zero_const, zeros, sign_magnitude, scale_kind;
};

template <int M>
__device__ __forceinline__ void gemv_int4(const hc_u8 *w, const hc_gemv_params &p, hc_u64 expert,
                                          const float *x, hc_u64 m, float *y) {
    __shared__ float red[4][64][M];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const hc_u64 nb = blockIdx.x;
    const hc_u8 *stripe = w + ((expert * p.tiles_n + nb) * p.tiles_k) * p.chunk_bytes;
    float acc[8][M]; /* rows rb*16 + lane/4 (+8) for rb 0..3 */
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int t = 0; t < M; t++) acc[i][t] = 0.0f;
    const hc_u64 step = 4 * (hc_u64)gridDim.y;
    hc_u64 kb = (hc_u64)blockIdx.y * 4 + warp;
    /* the next tile's fragment vectors are loaded before this one is used: two in flight */
    uint4 nv[4];
    if (kb < p.tiles_k)
#pragma unroll
        for (int rb = 0; rb < 4; rb++) nv[rb] = __ldg((const uint4 *)(stripe + kb * p.chunk_bytes) + rb * 32 + lane);
    for (; kb < p.tiles_k; kb += step) {
        const hc_u8 *chunk = stripe + kb * p.chunk_bytes;
        uint4 v[4];
#pragma unroll
        for (int rb = 0; rb < 4; rb++) v[rb] = nv[rb];
        if (kb + step < p.tiles_k)
#pragma unroll
            for (int rb = 0; rb < 4; rb++)
                nv[rb] = __ldg((const uint4 *)(stripe + (kb + step) * p.chunk_bytes) + rb * 32 + lane);
        const hc_u8 *sc = chunk + p.code_bytes;
        float s1[8], z1[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            unsigned r = (unsigned)(i / 2) * 16 + lane / 4 + (i % 2) * 8;
            s1[i] = row_scale(sc, r, p.scale_kind);
            z1[i] = 8388608.0f + (p.sign_magnitude ? 0.0f
                                  : p.zeros ? (float)sc[p.scale_bytes + r] : (float)p.zero_const);
        }
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            const unsigned c0 = ks * 16 + (lane % 4) * 2;
            float xv[4][M]; /* columns c0, c0 + 1, c0 + 8, c0 + 9 */
#pragma unroll
            for (int q = 0; q < 4; q++) {
                hc_u64 k = kb * 64 + c0 + (q & 1) + (q & 2 ? 8 : 0);
#pragma unroll
                for (int t = 0; t < M; t++)
                    xv[q][t] = (k < p.K && (hc_u64)t < m) ? __ldg(&x[(hc_u64)t * p.K + k]) : 0.0f;
            }
#pragma unroll
            for (int rb = 0; rb < 4; rb++) {
                unsigned wd = ks == 0 ? v[rb].x : ks == 1 ? v[rb].y : ks == 2 ? v[rb].z : v[rb].w;
#pragma unroll
                for (int a = 0; a < 8; a++) {
                    const int nib = (a % 2) * 4 + a / 2;
                    const int ri = rb * 2 + ((a & 2) ? 1 : 0);
                    const int q = (a & 1) + ((a & 4) ? 2 : 0);
                    unsigned u = (wd >> (4 * nib)) & 15u;
                    /* 2^23 + u by bits, then one subtraction: no int-to-float conversion */
                    float f = __int_as_float(0x4B000000 | (int)(u & (p.sign_magnitude ? 7u : 15u)));
                    float cq = p.sign_magnitude ? ((u & 8) ? 8388608.0f - f : f - 8388608.0f)
                                                : f - z1[ri];
                    float wv = cq * s1[ri];
#pragma unroll
                    for (int t = 0; t < M; t++) acc[ri][t] = fmaf(wv, xv[q][t], acc[ri][t]);
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int t = 0; t < M; t++) {
            float vsum = acc[i][t];
            vsum += __shfl_xor_sync(0xffffffffu, vsum, 1);
            vsum += __shfl_xor_sync(0xffffffffu, vsum, 2);
            acc[i][t] = vsum;
        }
    if (lane % 4 == 0)
#pragma unroll
        for (int i = 0; i < 8; i++) {
            unsigned r = (unsigned)(i / 2) * 16 + lane / 4 + (i % 2) * 8;
#pragma unroll
            for (int t = 0; t < M; t++) red[warp][r][t] = acc[i][t];
        }
    __syncthreads();
    for (unsigned idx = threadIdx.x; idx < 64 * M; idx += blockDim.x) {
        unsigned r = idx / M, t = idx % M;
        hc_u64 n = nb * 64 + r;
        if (n >= p.N || t >= m) continue;
        float sum = red[0][r][t] + red[1][r][t] + red[2][r][t] + red[3][r][t];
        if (gridDim.y > 1) atomicAdd(&y[t * p.N + n], sum); /* y starts at zero */
        else y[t * p.N + n] = sum;
    }
}

#define HC_GEMV_VARIANT(M)                                                                      \
    extern "C" __global__ void __launch_bounds__(128)                                          \
        hc_tile_gemv_int4_m##M(const hc_u8 *w, hc_gemv_params p, hc_u64 expert, const float *x, \
                               hc_u64 m, float *y) {                                            \
        gemv_int4<M>(w, p, expert, x, m, y);                                                    \
    }
HC_GEMV_VARIANT(1)
HC_GEMV_VARIANT(2)
HC_GEMV_VARIANT(4)
HC_GEMV_VARIANT(8)

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
