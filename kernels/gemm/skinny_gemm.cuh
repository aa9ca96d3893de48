// skinny_gemm.cuh: the skinny family (hc_skinny_gemm16, _32, _64; sm_90a, M <= 64), for the
// range where the warp-specialised kernel has too few blocks to fill the GPU and too few math
// warps per SM to hide its decode (bench/NOTES.md session 15). One persistent block per SM:
// a producer thread streams a pipeline of as many stages as fit (config.h HC_SKINNY_*), each
// the TOKS x 64 activation tile (TMA) and the chunks of four stripes (bulk copies); four
// consumer warpgroups each decode one stripe's rows into registers and run wgmma m64 x TOKS x
// k16 on it, so four stripes share one activation tile. The work -- (256-row output tile,
// token tile) x K tiles -- is cut into equal contiguous ranges, one per block (stream-K): the
// producer streams on across output tiles without draining, and a tile whose K range is cut
// between blocks is summed by epilogue/streamk.cuh.
#ifndef HC_K_GEMM_SKINNY_GEMM_CUH
#define HC_K_GEMM_SKINNY_GEMM_CUH

#include "gemm/ws_decode.cuh"
#include "epilogue/streamk.cuh"
#include "memory/tma.cuh"
#include "mma/wgmma.cuh"

#ifdef HC_SM90A
/* An output tile of the work: its weights (the first stripe of its expert / part), its quad
 * (stripes 4 q .. 4 q + 3), its token tile's first activation row tok0 (the tensor map's row)
 * and the end of its live rows mend, Y (row tok at y + tok * N) and the NVFP4 divisor of its
 * weights. A work mapping (skinny_dense below, moe_skinny in moe_gemm.cu) gives tile u's. */
struct skinny_unit {
    const hc_u8 *w;
    hc_u16 *y;
    hc_u64 tok0, mend;
    unsigned q;
    float gdiv;
};

/* A dense layer: tile u is quad u / mtiles, token tile u % mtiles. */
template <int TOKS> struct skinny_dense {
    const hc_u8 *w;
    hc_u16 *y;
    hc_u64 m;
    unsigned mtiles;
    float gdiv;
    __device__ __forceinline__ skinny_unit at(unsigned u) const {
        const unsigned q = u / mtiles, mt = u - q * mtiles;
        return {w, y, (hc_u64)mt * TOKS, m, q, gdiv};
    }
};

/* The kernel body over `items` work items -- (output tile of work, K tile), K tiles fastest --
 * for 640 threads; ws: the segments' partial sums (gridDim.x x 2 x TOKS x 1024 bytes), cnt: a
 * counter per output tile, zero between launches; p: the layers' shape (tiles_n of a part,
 * tiles_k, N); shared memory 1024 + stages x stage bytes (config.h). items < 2^31 (the
 * host's check: the item counters are 32-bit). */
template <int TOKS, class Work>
__device__ __forceinline__ void skinny_body(const Work &work, hc_u64 items, const hc_mma_params &p,
                                            const hc_tmap &tmx, float *__restrict__ ws,
                                            unsigned *__restrict__ cnt) {
    constexpr unsigned XB = TOKS * 128; /* bytes of a stage's activation tile */
    constexpr unsigned SB = HC_SKINNY_STAGE_BYTES(TOKS, HC_CHUNK_BYTES);
    constexpr unsigned NS = HC_SKINNY_STAGES_OF(TOKS, HC_CHUNK_BYTES);
    static_assert(NS >= 2, "a skinny pipeline needs two stages");
    __shared__ __align__(8) unsigned long long full[NS], empty[NS];
    __shared__ unsigned last;
    hc_u8 *smem = smem_1024();
    const unsigned tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const hc_u64 cb = HC_CHUNK_BYTES, tk = p.tiles_k;
    const unsigned tk32 = (unsigned)tk;
    /* the blocks that take part: every block of the grid while each gets HC_SKINNY_MIN_TILES
     * items (the dense host sizes the grid so), fewer when the work is known only here (a MoE
     * call's tiles): a range is never empty, so every block between a tile's first and last
     * one arrives at its counter; the others leave at once */
    const hc_u64 g = hc_streamk_blocks(items, gridDim.x, HC_SKINNY_MIN_TILES), blk = blockIdx.x;
    if (blk >= g || items == 0) return;
    const unsigned t0 = (unsigned)hc_streamk_start(blk, items, g);
    const unsigned t1 = (unsigned)hc_streamk_start(blk + 1, items, g);
    if (tid == 0) {
        for (unsigned s = 0; s < NS; s++) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), 16);
        }
        mbar_init_fence();
    }
    __syncthreads();
    if (warp < 4) { /* ---- producer ---- */
        setmaxnreg_dec<24>();
        if (tid != 0) return;
        const hc_u64 tmap = (hc_u64)&tmx;
        unsigned u = t0 / tk32, kb = t0 - u * tk32, s = 0, ph = 0;
        skinny_unit un = work.at(u);
        for (unsigned t = t0; t < t1; t++) {
            const hc_u64 left = p.tiles_n - 4 * (hc_u64)un.q;
            const unsigned live = left < 4 ? (unsigned)left : 4u;
            if (t - t0 >= NS) mbar_wait(smem_addr(&empty[s]), ph ^ 1);
            const unsigned st = smem_addr(smem + s * SB), fb = smem_addr(&full[s]);
            mbar_arrive_expect_tx(fb, XB + live * (unsigned)cb);
            tma_load_2d(st, tmap, kb * 64, (unsigned)un.tok0, fb);
            for (unsigned j = 0; j < live; j++)
                bulk_load(st + XB + j * (unsigned)cb, un.w + ((4 * (hc_u64)un.q + j) * tk + kb) * cb,
                          (unsigned)cb, fb);
            if (++s == NS) s = 0, ph ^= 1;
            if (++kb == tk32 && t + 1 < t1) kb = 0, un = work.at(++u);
        }
        return;
    }
    /* ---- consumers ---- */
    setmaxnreg_inc<112>(); /* 128 x 24 + 512 x 112 registers: within the block's 640 x 96 */
    const unsigned wgc = (warp - 4) >> 2, wl = warp & 3, gq = lane >> 2, c = lane & 3;
    const unsigned r0 = wl * 16 + gq, ctid = tid - 128;
    float d[TOKS / 2]; /* (a segment's first wgmma ignores its old values: no zeroing) */
    unsigned a0[4][4], a1[4][4];
    /* the current output tile u (un), its first item u0 and the first item of the open
     * segment; pd: the shape with the divisor of the tile being decoded (one item ahead) */
    unsigned u = t0 / tk32, u0 = u * tk32, seg = t0;
    skinny_unit un = work.at(u);
    hc_mma_params pd = p;
    pd.global_div = un.gdiv;
    /* waits for the tile in stage s (phase ph) and decodes this warp's A fragments into a */
    auto decode = [&](unsigned s, unsigned ph, unsigned (*a)[4]) {
        mbar_wait(smem_addr(&full[s]), ph);
        ws_decode(smem + s * SB + XB + wgc * cb, pd, wl, lane, r0, a);
    };
    /* the open segment ends with item t: its sums to Y, or through the fix-up */
    auto finish = [&](unsigned t) {
        const hc_u64 n0 = (4 * (hc_u64)un.q + wgc) * 64;
        if (seg != u0 || t + 1 != u0 + tk32) {
            streamk_fixup<TOKS, 512>(d, ws, cnt, u, u0, tk, blk, seg == t0 ? 0u : 1u, ctid, items,
                                     g, last, un.y, n0, r0, c, un.tok0, un.mend, p.N);
        } else if (n0 < p.N) {
#pragma unroll
            for (int i = 0; i < TOKS / 8; i++)
                frag_store4(make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]),
                            (unsigned)i, un.y, n0, r0, c, un.tok0, un.mend, p.N);
        }
        seg = t + 1;
        if (t + 1 == u0 + tk32 && t + 1 < t1) u++, u0 += tk32, un = work.at(u);
    };
    /* issues item t's wgmma (stage s, A in a), releases stage sp (item t - 1) once its wgmma are
     * done, decodes item t + 1 into an (stage sn, phase phn), and ends the segment at t */
    auto step = [&](unsigned t, unsigned s, unsigned (*a)[4], unsigned (*an)[4], unsigned sn,
                    unsigned phn, unsigned sp) {
        const hc_u64 desc = b_desc(smem + s * SB); /* k16 step ks: 32 bytes on, + 2 */
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ks++)
            wgmma_rs<TOKS>(d, a[ks], desc + 2 * ks, ks > 0 || t != seg ? 1u : 0u);
        wgmma_commit();
        wgmma_wait<1>();
        if (t > t0) {
            __syncwarp();
            if (lane == 0) mbar_arrive(smem_addr(&empty[sp]));
        }
        if (t + 1 < t1) {
            if (t + 1 == u0 + tk32) pd.global_div = work.at(u + 1).gdiv; /* the next tile's */
            decode(sn, phn, an);
        }
        if (t + 1 == t1 || t + 1 == u0 + tk32) {
            wgmma_wait<0>();
            finish(t);
        }
    };
    if (t0 < t1) decode(0, 0, a0);
    unsigned s = 0, ph = 0, sp = NS - 1;
    for (unsigned t = t0; t < t1; t += 2) {
        unsigned s1 = s + 1 == NS ? 0 : s + 1, ph1 = s1 == 0 ? ph ^ 1 : ph;
        step(t, s, a0, a1, s1, ph1, sp);
        if (t + 1 >= t1) break;
        unsigned s2 = s1 + 1 == NS ? 0 : s1 + 1, ph2 = s2 == 0 ? ph1 ^ 1 : ph1;
        step(t + 1, s1, a1, a0, s2, ph2, s);
        sp = s1, s = s2, ph = ph2;
    }
}

/* A dense layer's entry (hc_skinny_gemm*: the arguments of hc_wgmma_gemm64 plus ws and cnt;
 * grid: the host's block count). */
template <int TOKS>
__device__ __forceinline__ void skinny_gemm(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                            hc_u64 expert, hc_u64 m, hc_u16 *__restrict__ y,
                                            const hc_tmap &tmx, float *__restrict__ ws,
                                            unsigned *__restrict__ cnt) {
    const unsigned mtiles = (unsigned)((m + TOKS - 1) / TOKS);
    const skinny_dense<TOKS> work = {w + expert * p.tiles_n * p.tiles_k * HC_CHUNK_BYTES, y, m,
                                     mtiles, p.global_div};
    skinny_body<TOKS>(work, (p.tiles_n + 3) / 4 * mtiles * p.tiles_k, p, tmx, ws, cnt);
}
#endif

#endif
