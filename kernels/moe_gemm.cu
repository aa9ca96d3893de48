// moe_gemm.cu: the grouped GEMMs of a mixture-of-experts block (runtime/gpu_moe.c): one launch
// runs a projection of every local expert over the rows routed to it (moe_args.h: the sorted
// rows in T-row tiles, each tile one expert's). Built per kind of layer like tile_mma.cu (the
// same four options, kernels/codec/kind.cuh), but only for models that have MoE layers, so
// dense models build and load nothing of it. The kernels are the dense families' bodies with
// the expert, the rows and the outputs taken from the routing tables:
//   hc_moe_gemv_t8, _t16: small M (gemm/gemv.cuh), grid (tiles_n x parts, K split, tiles)
//   hc_moe_gemv_w8: small M over items a warp owns (gemm/gemv_items.cuh), one wave of blocks
//   hc_moe_ws64, _96, _128, _160, _256, _288: large M (gemm/ws_gemm.cuh, sm_90a), grid (pairs
//                x parts, tiles); _96, _160 and _288 have no dense twin (a tile that holds r + 2
//                sqrt(r) rows at r ~ 64, ~128 and ~256: one tile an expert where tiles of 64 /
//                128 / 256 take two);
//                _96w: four stripes a block (two a consumer warpgroup), grid (groups of four x
//                parts, tiles); _24x6: six stripes a block (three a warpgroup), tiles of 24;
//                _80d: a pair at tiles of 80, two blocks an SM
//   hc_moe_ws256r, _80r: tiles of 256 / 80 and each expert's remainder in a tile of 64, grid
//                (groups x parts, tiles of either size, 2); _80r four stripes a block
//   hc_moe_skinny16, _32, _64: 8 < rows per expert <= 64 (gemm/skinny_gemm.cuh, sm_90a), one
//                persistent block per SM over (tile, part, quad) x K tiles
#include "gemm/gemv.cuh"
#include "gemm/gemv_items.cuh"
#include "gemm/skinny_gemm.cuh"
#include "gemm/ws_gemm.cuh"
#include "moe_args.h"

/* ---- small M: tile i = blockIdx.z of TOK rows (TOK is the routing's tile), stripe nb of part
 * blockIdx.x / tiles_n. The routing comes from the kernel before: the block waits for it
 * first (no weight copies before the wait: the expert is not known yet). Activations: the
 * tile's rows of x gathered by slot (rdiv = topk), or rows i * TOK.. of a sorted buffer; the
 * K split's partial sums and counters are each (tile, part)'s own region of ws and cnt. ---- */
template <int TOK>
__device__ __forceinline__ void moe_gemv(const hc_moe_args &a, const hc_mma_params &p,
                                         const hc_u16 *__restrict__ x, hc_u16 *__restrict__ out,
                                         float *__restrict__ ws, unsigned *__restrict__ cnt) {
#if HC_MOE_META_EARLY
    /* (v111: the experts' table -- written at load, not by the kernel before -- into L1 while
     * the routing finishes, a line a thread, so that the entry the record names is an L1 hit) */
    if (threadIdx.x * 16u < a.parts * a.el) prefetch_l1(a.wtab + threadIdx.x * 16u);
#endif
    HC_PDL_WAIT();
    const unsigned i = blockIdx.z;
#if HC_MOE_META_EARLY
    /* (config.h v111: the record's two words with the count, one round trip -- in bounds past
     * the count, the table holds the grid's tiles: gpu_moe.h hc__gpu_moe_ws_holds; unused there) */
    const int ntiles = ld_here(a.meta), e = ld_here(a.meta + HC_MOE_META_TILE(i)),
              rows = ld_here(a.meta + HC_MOE_META_TILE(i) + 1);
    if ((int)i >= ntiles) return;
    HC_PDL_RELEASE();
#else
    if ((int)i >= a.meta[0]) return;
    HC_PDL_RELEASE();
    const int e = a.meta[HC_MOE_META_TILE(i)], rows = a.meta[HC_MOE_META_TILE(i) + 1];
#endif
    const unsigned part = blockIdx.x / (unsigned)p.tiles_n;
    const hc_u64 nb = blockIdx.x - (hc_u64)part * p.tiles_n;
    const hc_u8 *w = (const hc_u8 *)a.wtab[part * a.el + (unsigned)e];
    const hc_u64 slot = (hc_u64)i * a.parts + part;
    const hc_u16 *xin = a.rdiv ? x : x + (hc_u64)i * TOK * p.ldx;
    hc_mma_params pe = p;
    if (a.gdiv) pe.global_div = a.gdiv[part * a.el + (unsigned)e];
    gemv_body<TOK, TOK, HC_GEMV_STAGES, false>(
        w, pe, 0, xin, (hc_u64)rows, out + part * a.ystride + (hc_u64)i * TOK * p.N,
        ws + slot * gridDim.y * p.tiles_n * 64 * TOK, cnt + slot * p.tiles_n, nb,
        a.rdiv ? a.sorted + (hc_u64)i * TOK : nullptr, a.rdiv ? a.rdiv : 1);
}
extern "C" __global__ void __launch_bounds__(HC_GEMV_THREADS, HC_GEMV_MINB)
    hc_moe_gemv_t8(hc_moe_args a, hc_mma_params p, const hc_u16 *x, hc_u16 *out, float *ws,
                   unsigned *cnt) {
    moe_gemv<8>(a, p, x, out, ws, cnt);
}
extern "C" __global__ void __launch_bounds__(HC_GEMV_THREADS, HC_MOE_GEMV16_MINB)
    hc_moe_gemv_t16(hc_moe_args a, hc_mma_params p, const hc_u16 *x, hc_u16 *out, float *ws,
                    unsigned *cnt) {
    moe_gemv<16>(a, p, x, out, ws, cnt);
}

/* ---- warp-owned items (hc_moe_gemv_w8; tiles of 8): item u = (tile i, part, stripe nb), stripes
 * fastest, so the warps at work together share a tile's activations in L2; the arguments of
 * hc_moe_gemv_t8 (ws and cnt unused: no K split). ---- */
struct moe_items {
    const hc_moe_args *a;
    const hc_mma_params *p;
    hc_u16 *out;
    __device__ __forceinline__ void fill(unsigned u, gemv_item &it) const {
        const unsigned tn = (unsigned)p->tiles_n, pt = a->parts * tn;
        const unsigned i = u / pt, r = u - i * pt, part = r / tn, nb = r - part * tn;
        const int e = a->meta[HC_MOE_META_TILE(i)], rows = a->meta[HC_MOE_META_TILE(i) + 1];
        const unsigned x = part * (unsigned)a->el + (unsigned)e;
        it.w = (const hc_u8 *)a->wtab[x] + (hc_u64)nb * p->tiles_k * HC_CHUNK_BYTES;
        it.y = out + part * a->ystride + (hc_u64)i * 8 * p->N + (hc_u64)nb * 64;
        it.rows = (unsigned)rows;
        it.nmax = p->N - (hc_u64)nb * 64 < 64 ? (unsigned)(p->N - (hc_u64)nb * 64) : 64u;
        it.gdiv = a->gdiv ? a->gdiv[x] : p->global_div;
        for (unsigned t = 0; t < 8; t++) {
            it.tok[t] = 0u; /* (a pad row: no x row) */
            if ((int)t < rows)
                it.tok[t] = a->rdiv ? (unsigned)((hc_u64)a->sorted[i * 8 + t] / a->rdiv) : i * 8 + t;
        }
    }
};
extern "C" __global__ void __launch_bounds__(HC_GEMV_THREADS)
    hc_moe_gemv_w8(hc_moe_args a, hc_mma_params p, const hc_u16 *x, hc_u16 *out, float *ws,
                   unsigned *cnt) {
    (void)ws, (void)cnt;
    HC_PDL_WAIT(); /* (the routing's tiles come from the kernel before) */
    const unsigned items = (unsigned)a.meta[0] * a.parts * (unsigned)p.tiles_n;
    HC_PDL_RELEASE();
    gemv_items_body(moe_items{&a, &p, out}, items, p, x);
}

/* ---- large M (sm_90a): block (stripe pair, tile) in the dense kernels' walk; the tensor map
 * is over the sorted activation rows (xs or the activation output, [rows][K], a box of TOKS
 * rows), tile i's tokens are its rows from tok0 (moe_args.h), outputs below tok0 + live rows.
 * ---- */
#ifdef HC_SM90A
/* gate_up's activation for ws_gemm_block (moe_args.h fuse; epilogue/moe_act.cuh ws_act), built
 * where it is used from the launch's arguments, the block's first stripe nb0 and its expert:
 * halves -- up's stripes at part 1's table (parts 2) or ustripes past gate's (stacked), SPW of
 * each or what is left of ceil(I / 64), outputs from nb0 x 64; pairs -- outputs from nb0 x 32 */
template <int SPW> struct moe_act_of {
    const hc_moe_args *a;
    const hc_mma_params *p;
    hc_u64 nb0;
    unsigned e;
    __device__ __forceinline__ bool on() const { return a->fuse != 0; }
    __device__ __forceinline__ ws_act operator()() const {
        ws_act f;
        const hc_u64 ss = p->tiles_k * HC_CHUNK_BYTES; /* a stripe's bytes */
        if (a->fuse == 1) {
            const hc_u64 half = a->parts == 2 ? p->tiles_n : a->ustripes;
            const hc_u8 *up = a->parts == 2 ? (const hc_u8 *)a->wtab[a->el + e]
                                            : (const hc_u8 *)a->wtab[e] + a->ustripes * ss;
            f.wup = up + nb0 * ss, f.mode = 1, f.j0 = nb0 * 64;
            f.live = (unsigned)(half - nb0 < (hc_u64)SPW ? half - nb0 : (hc_u64)SPW);
        } else {
            f.wup = nullptr, f.mode = 2, f.j0 = nb0 * 32, f.live = 0;
        }
        f.h = a->h, f.ldh = a->ldh, f.I = a->I;
        f.bias = a->bias ? a->bias + (hc_u64)e * 2 * a->I : nullptr;
        f.act = a->act, f.alpha = a->alpha, f.limit = a->limit;
        return f;
    }
};
/* stripe group vp (2 SPW stripes) of tile i, its rows from tok0; BPS blocks an SM; HOLD:
 * ws_gemm_block's v100 (false in the kernels of two bodies) */
template <int TOKS, int SPW = 1, int BPS = 1, bool HOLD = true>
__device__ __forceinline__ void moe_ws_tile(const hc_moe_args &a, const hc_mma_params &p,
                                            hc_u16 *__restrict__ out, const hc_tmap &tmx,
                                            unsigned vp, unsigned i, hc_u64 tok0) {
    const int e = a.meta[HC_MOE_META_TILE(i)], rows = a.meta[HC_MOE_META_TILE(i) + 1];
    /* the block's first stripe: of its part's groups of 2 SPW, or (halves of a fused gate_up,
     * moe_args.h) of gate's groups of SPW, up's the same rows */
    unsigned part = 0;
    hc_u64 nb0;
    if (a.fuse == 1) {
        nb0 = (hc_u64)vp * SPW;
    } else {
        const unsigned groups = (unsigned)HC_MOE_WS_GROUPS(0u, 0u, p.tiles_n, SPW, 1u);
        part = vp / groups, nb0 = (hc_u64)(vp - part * groups) * 2 * SPW;
    }
    hc_mma_params pe = p;
    if (a.gdiv) pe.global_div = a.gdiv[part * a.el + (unsigned)e];
    ws_gemm_block<TOKS, SPW, moe_act_of<SPW>, BPS, HOLD>(
        (const hc_u8 *)a.wtab[part * a.el + (unsigned)e], pe, nb0, tok0, tok0 + (hc_u64)rows,
        out + part * a.ystride, tmx, moe_act_of<SPW>{&a, &p, nb0, (unsigned)e});
}
template <int TOKS, int SPW = 1, int BPS = 1>
__device__ __forceinline__ void moe_ws(const hc_moe_args &a, const hc_mma_params &p,
                                       hc_u16 *__restrict__ out, const hc_tmap &tmx) {
    unsigned vp, mt;
    hc_ws_walk(gridDim.x, gridDim.y, blockIdx.y * gridDim.x + blockIdx.x, &vp, &mt);
    if ((int)mt >= a.meta[0]) return;
    moe_ws_tile<TOKS, SPW, BPS>(a, p, out, tmx, vp, mt, (hc_u64)mt * TOKS);
}
/* two tile sizes (the route's T = BIG and Ts = SMALL, moe_args.h): grid z 0 the tiles of BIG
 * rows (tmx: boxes of BIG rows), z 1 those of SMALL after them (tms: boxes of SMALL); the
 * branch is on blockIdx.z, uniform, so each body keeps its own wgmma pipeline; SPW stripes a
 * consumer warpgroup in both */
template <int BIG, int SMALL, int SPW = 1>
__device__ __forceinline__ void moe_ws_two(const hc_moe_args &a, const hc_mma_params &p,
                                           hc_u16 *__restrict__ out, const hc_tmap &tmx,
                                           const hc_tmap &tms) {
    unsigned vp, mt;
    hc_ws_walk(gridDim.x, gridDim.y, blockIdx.y * gridDim.x + blockIdx.x, &vp, &mt);
    const unsigned nb = (unsigned)a.tail[0];
    if (blockIdx.z == 0) {
        if (mt >= nb) return;
        moe_ws_tile<BIG, SPW, 1, false>(a, p, out, tmx, vp, mt, (hc_u64)mt * BIG);
    } else {
        if ((int)(nb + mt) >= a.meta[0]) return;
        moe_ws_tile<SMALL, SPW, 1, false>(a, p, out, tms, vp, nb + mt,
                                          (hc_u64)nb * BIG + (hc_u64)mt * SMALL);
    }
}
#define HC_MOE_WS_BODY(toks, spw, bps) moe_ws<toks, spw, bps>(a, p, out, tmx)
#define HC_MOE_WS_TWO_BODY(big, small, spw) moe_ws_two<big, small, spw>(a, p, out, tmx, tms)
#else
#define HC_MOE_WS_BODY(toks, spw, bps)                                                         \
    ((void)a, (void)p, (void)out, (void)tmx, __trap()) /* sm_90a only */
#define HC_MOE_WS_TWO_BODY(big, small, spw)                                                    \
    ((void)a, (void)p, (void)out, (void)tmx, (void)tms, __trap())
#endif
/* (bps: blocks an SM, the launch bounds and config.h HC_WS_PREGS / HC_WS_CREGS) */
#define HC_MOE_WS_KERNEL_N(name, toks, spw, bps)                                               \
    extern "C" __global__ void __launch_bounds__(HC_WS_THREADS, bps)                           \
        name(hc_moe_args a, hc_mma_params p, hc_u16 *__restrict__ out,                         \
             const __grid_constant__ hc_tmap tmx) {                                            \
        HC_MOE_WS_BODY(toks, spw, bps);                                                        \
    }
#define HC_MOE_WS_KERNEL(name, toks, spw) HC_MOE_WS_KERNEL_N(name, toks, spw, 1)
HC_MOE_WS_KERNEL(hc_moe_ws64, 64, 1)
HC_MOE_WS_KERNEL(hc_moe_ws96, 96, 1) /* (MoE only: ~64 rows an expert in one tile; v62) */
HC_MOE_WS_KERNEL(hc_moe_ws128, 128, 1)
HC_MOE_WS_KERNEL(hc_moe_ws256, 256, 1)
/* (MoE only: ~200-256 rows an expert in one tile) */
HC_MOE_WS_KERNEL(hc_moe_ws288, 288, 1)
/* (MoE only, v108: ~128 rows an expert -- 128 +- 2 sqrt(128) -- in one tile of 160, run at 128
 * where the tile holds 128 rows or fewer (v99); where tiles of 80 or 128 take two, the expert's
 * weights are decoded twice -- the decode is what a tile of 80 costs, bench/NOTES.md session 42) */
HC_MOE_WS_KERNEL(hc_moe_ws160, 160, 1)
/* four stripes a block, two a consumer warpgroup (v69: a tile's activations read once for 256
 * weight rows, twice the independent work a warp; the route's pick at ~50-90 rows an expert) */
HC_MOE_WS_KERNEL(hc_moe_ws96w, 96, 2)
/* six stripes a block, three a consumer warpgroup, tiles of 24 (v72: the route's pick at r =
 * 10-16 on the H100 until moe-skinny24 with v90 took it, session 38; forced only now --
 * weights streamed 384 rows a block behind one small activation tile, three independent
 * decodes a warp; v70's eight stripes (Humming's 24 x 512) left a third of Qwen3's gate_up
 * blocks' stripes dead (768 rows a part) and lost to moe-t16) */
HC_MOE_WS_KERNEL(hc_moe_ws24x6, 24, 3)
/* two stripes a block, tiles of 80, two blocks an SM at 104 consumer registers (v79: the
 * route's pick at r = 50-68 and 128-146 -- r = 64 holds r + 2 sqrt(r) = 80, Humming's tile
 * there; the two blocks overlap one's fill, drain and epilogue, the fused activation's too, with
 * the other's main loop, and give 16 consumer warps an SM: H100, Qwen3-like M = 1024 block
 * 270.6 us against the four-stripe one-block ws80w's 290.9, bench/NOTES.md session 33) */
HC_MOE_WS_KERNEL_N(hc_moe_ws80d, 80, 1, 2)
/* two tile sizes: an expert's whole tiles of big rows and its remainder in one of small where
 * it fits (moe_route.cu route_split), spw stripes a consumer warpgroup */
#define HC_MOE_WS_TWO_KERNEL(name, big, small, spw)                                            \
    extern "C" __global__ void __launch_bounds__(HC_WS_THREADS, 1)                             \
        name(hc_moe_args a, hc_mma_params p, hc_u16 *__restrict__ out,                         \
             const __grid_constant__ hc_tmap tmx, const __grid_constant__ hc_tmap tms) {       \
        HC_MOE_WS_TWO_BODY(big, small, spw);                                                   \
    }
/* tiles of 256 and an expert's remainder in a tile of 64 (v63) */
HC_MOE_WS_TWO_KERNEL(hc_moe_ws256r, 256, 64, 1)
/* four stripes a block, two a consumer warpgroup, with tiles of 80 and of 64 (v78: the route's
 * pick at r = 23-49, where an expert's rows fit a tile of 64 -- H100, gpt-oss-like M = 1024 (r =
 * 32) block 1239.3 us against moe-skinny64's 1380.8, DeepSeek-like 999.7 against 1006.0,
 * bench/NOTES.md session 33; past 64 rows an expert the two-block ws80d wins) */
HC_MOE_WS_TWO_KERNEL(hc_moe_ws80r, 80, 64, 2)

/* ---- skinny (sm_90a): the dense skinny body (gemm/skinny_gemm.cuh) over output tiles (tile i,
 * part, quad) of the routing's meta[0] tiles of TOKS rows, K tiles fastest; the tensor map and
 * the outputs as the warp-specialised kernels'; ws / cnt: the stream-K segments and a counter
 * per output tile (the runtime's workspace, zero between launches); grid: one block per SM. */
#ifdef HC_SM90A
template <int TOKS> struct moe_skinny {
    /* no bench-build timeline (the MoE workspace has no room for one) */
    static constexpr __device__ bool timeline() { return false; }
    /* v100 (config.h HC_WS_HOIST): skinny_body holds its descriptor's low word in a register */
    static constexpr __device__ bool held_desc() { return HC_WS_HOIST != 0; }
    const unsigned long long *wtab;
    const int *meta;
    const float *gdivs;
    hc_u16 *out;
    hc_u64 ystride;
    unsigned el, parts, quads;
    float gdiv;
    __device__ __forceinline__ skinny_unit at(unsigned u) const {
        const unsigned pq = parts * quads, i = u / pq, r = u - i * pq, part = r / quads;
        const int e = meta[HC_MOE_META_TILE(i)], rows = meta[HC_MOE_META_TILE(i) + 1];
        const unsigned x = part * el + (unsigned)e;
        return {(const hc_u8 *)wtab[x], out + part * ystride, (hc_u64)i * TOKS,
                (hc_u64)i * TOKS + (hc_u64)rows, r - part * quads, gdivs ? gdivs[x] : gdiv};
    }
};
#define HC_MOE_SKINNY_BODY(toks)                                                               \
    {                                                                                          \
        HC_PDL_WAIT(); /* the routing's tiles come from the kernel before */                   \
        HC_PDL_RELEASE();                                                                      \
        const unsigned quads = (unsigned)((p.tiles_n + 3) / 4);                                \
        const moe_skinny<toks> work = {a.wtab,  a.meta,           a.gdiv,  out, a.ystride,     \
                                       (unsigned)a.el, a.parts, quads, p.global_div};          \
        skinny_body<toks, false>(work, (hc_u64)a.meta[0] * a.parts * quads * p.tiles_k, p, tmx, \
                                 ws, cnt);                                                     \
    }
#else
#define HC_MOE_SKINNY_BODY(toks)                                                               \
    ((void)a, (void)p, (void)out, (void)tmx, (void)ws, (void)cnt, __trap()) /* sm_90a only */
#endif
#define HC_MOE_SKINNY_KERNEL(name, toks)                                                       \
    extern "C" __global__ void __launch_bounds__(HC_SKINNY_THREADS, 1)                         \
        name(hc_moe_args a, hc_mma_params p, hc_u16 *__restrict__ out,                         \
             const __grid_constant__ hc_tmap tmx, float *ws, unsigned *cnt) {                  \
        HC_MOE_SKINNY_BODY(toks);                                                              \
    }
HC_MOE_SKINNY_KERNEL(hc_moe_skinny16, 16)
HC_MOE_SKINNY_KERNEL(hc_moe_skinny32, 32)
HC_MOE_SKINNY_KERNEL(hc_moe_skinny64, 64)
/* tiles of 24 (v91, the route's pick at r = 10-16: a tile of 32 multiplies half pad rows there;
 * 24 holds r + 2 sqrt(r) to r = 16 with a quarter less wgmma work and activation bytes -- H100,
 * Qwen3-like gate_up at r = 16: 94.1 us against skinny32's 99.0, bench/NOTES.md session 38) */
HC_MOE_SKINNY_KERNEL(hc_moe_skinny24, 24)
