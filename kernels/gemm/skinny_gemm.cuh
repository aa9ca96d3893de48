// skinny_gemm.cuh: the skinny family (hc_skinny_gemm16, _32, _64; sm_90a, M <= 64), for the
// range where the warp-specialised kernel has too few blocks to fill the GPU and too few math
// warps per SM to hide its decode (bench/NOTES.md session 15). One persistent block per SM:
// four producer threads stream a pipeline of as many stages as fit (config.h HC_SKINNY_*), each
// the TOKS x 64 activation tile (TMA) and the chunks of four stripes (bulk copies); four
// consumer warpgroups each decode one stripe's rows into registers and run wgmma m64 x TOKS x
// k16 on it, so four stripes share one activation tile. The work -- (256-row output tile,
// token tile) x K tiles -- is cut into equal contiguous ranges, one per block (stream-K): the
// producer streams on across output tiles without draining, and a tile whose K range is cut
// between blocks is summed by epilogue/streamk.cuh. Q (hc_skinny_gemm16q/32q, v59): an output
// tile is ONE stripe, its K tiles in quads -- warpgroup w multiplies K tile 4 kb + w of item kb
// against its own activation tile -- and a block takes whole tiles, the four warpgroups' sums
// added in shared memory: no cross-block fix-up, for layers whose stripes about fill the SMs.
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
    /* a bench build's timeline goes after the segments (its workspace has room for it) */
    static constexpr __device__ bool timeline() { return true; }
    /* (v100's held descriptor: not here -- 20-196 bytes spilled, bench/NOTES.md session 42) */
    static constexpr __device__ bool held_desc() { return false; }
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
 * host's check: the item counters are 32-bit). PRE (a dense layer, launched under
 * programmatic dependent launch: config.h HC_SKINNY_PDL): the block lets the next kernel
 * launch at once and asks for its first stages' weights before it waits for the kernel before
 * (activations, outputs and the workspace are touched only after the wait); a caller whose
 * work depends on the kernel before (MoE: the routing) waits before it calls, with PRE false. */
template <int TOKS, bool PRE, class Work, bool Q = false>
__device__ __forceinline__ void skinny_body(const Work &work, hc_u64 items, const hc_mma_params &p,
                                            const hc_tmap &tmx, float *__restrict__ ws,
                                            unsigned *__restrict__ cnt) {
    constexpr unsigned XB = TOKS * 128; /* bytes of an activation tile (of 64 K) */
    constexpr unsigned XS = Q ? 4 * XB : XB; /* a stage's activation tiles: one, or four (Q) */
    constexpr unsigned SB = Q ? HC_SKINNY_Q_STAGE_BYTES(TOKS, HC_CHUNK_BYTES)
                              : HC_SKINNY_STAGE_BYTES(TOKS, HC_CHUNK_BYTES);
    constexpr unsigned NS = Q ? HC_SKINNY_Q_STAGES_OF(TOKS, HC_CHUNK_BYTES)
                              : HC_SKINNY_STAGES_OF(TOKS, HC_CHUNK_BYTES);
    static_assert(NS >= 2, "a skinny pipeline needs two stages");
    __shared__ __align__(8) unsigned long long full[NS], empty[NS], seg_done, first_ready;
    __shared__ unsigned last, first_last, shape[2];
    hc_u8 *smem = smem_1024();
    const unsigned tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const hc_u64 cb = HC_CHUNK_BYTES, tk = p.tiles_k;
    const unsigned tk32 = (unsigned)tk;
    /* the items of an output tile: its K tiles, or (Q) its quads of K tiles */
    const unsigned ipu = Q ? (tk32 + 3u) / 4u : tk32;
#if HC_GEMV_DIAG == 2
    const unsigned long long tl0 = gtimer(); /* (the timeline: entry, first stage, last sums) */
    unsigned long long tl1 = 0, tl2 = 0;
#endif
    if (PRE) HC_PDL_RELEASE(); /* (its blocks fit on an SM only as this kernel's leave) */
    /* the blocks that take part: every block of the grid while each gets HC_SKINNY_MIN_TILES
     * items (the dense host sizes the grid so), fewer when the work is known only here (a MoE
     * call's tiles): a range is never empty, so every block between a tile's first and last
     * one arrives at its counter; the others leave at once */
    /* (Q: whole output tiles a block, never cut -- no fix-up) */
    const unsigned units = Q ? (unsigned)items / ipu : 0u;
    const hc_u64 g = Q ? (gridDim.x < units ? gridDim.x : units)
                       : hc_streamk_blocks(items, gridDim.x, HC_SKINNY_MIN_TILES),
                 blk = blockIdx.x;
    if (blk >= g || items == 0) return;
    const unsigned t0 = Q ? hc_streamk_start((unsigned)blk, units, (unsigned)g) * ipu
                          : hc_streamk_start((unsigned)blk, (unsigned)items, (unsigned)g);
    const unsigned t1 = Q ? hc_streamk_start((unsigned)blk + 1, units, (unsigned)g) * ipu
                          : hc_streamk_start((unsigned)blk + 1, (unsigned)items, (unsigned)g);
    /* the first segment's arrival is handed off to one thread where the segment is cut at its
     * start and is not the block's last (config.h HC_SKINNY_HANDOFF): the consumers store it
     * and go on. (Each side finds the case from t0 and t1: a value kept across the producers'
     * register cut would spill.) */
    auto handed_off = [&](unsigned uf0) {
        return !Q && HC_SKINNY_HANDOFF && HC_GEMV_DIAG != 3 && t0 != uf0 && uf0 + tk32 < t1;
    };
    if (tid == 0) {
        for (unsigned s = 0; s < NS; s++) {
            mbar_init(smem_addr(&full[s]), 4);   /* the four producer warps */
            /* the sixteen consumer warps (config.h HC_EMPTY_LANES of each) */
            mbar_init(smem_addr(&empty[s]), 16 * HC_EMPTY_LANES);
        }
        mbar_init(smem_addr(&seg_done), 16);   /* the consumer warps, their first segment stored */
        mbar_init(smem_addr(&first_ready), 1); /* the handoff thread, first_last written */
        shape[0] = (unsigned)items, shape[1] = (unsigned)g;
        mbar_init_fence();
    }
    __syncthreads();
    if (warp < 4) {
        /* ---- producers: lane 0 of warp j copies stripe j's chunk of every item (warp 0 also
         * the activation tile), so that the copy issue is spread over the SM's four
         * schedulers as the consumer warps are; Q: the stripe's chunk of the item's K tile
         * 4 kb + j and that K tile's activations ---- */
        setmaxnreg_dec<24>();
        if (lane != 0) return;
        const unsigned j = warp;
        const hc_u64 tmap = (hc_u64)&tmx;
        unsigned u = t0 / ipu, kb = t0 - u * ipu, s = 0, ph = 0, t = t0;
        skinny_unit un = work.at(u);
        /* stripe j of the tile's quad: live (the last quad of a layer may have fewer), its
         * chunk of item t (running: the chunks of a stripe follow each other), the bytes this
         * warp's copies land on an item's barrier */
        bool live;
        const hc_u8 *src;
        unsigned mine;
        auto start = [&]() {
            if constexpr (Q) {
                live = true, mine = (unsigned)cb + XB;
                src = un.w + ((hc_u64)un.q * tk + 4 * (hc_u64)kb + j) * cb;
            } else {
                live = 4 * (hc_u64)un.q + j < p.tiles_n;
                src = un.w + ((4 * (hc_u64)un.q + j) * tk + kb) * cb;
                mine = (live ? (unsigned)cb : 0u) + (j == 0 ? XB : 0u);
            }
        };
        /* item t's weights into stage s (its barrier told of the stage's bytes before), then on
         * to item t + 1. Q: a K tile past the layer's (the last quad may be short) takes the
         * stripe's last chunk again -- finite weights -- against activations that the tensor
         * map's bounds make zeros, so that every warpgroup's wgmma run unconditionally (one in
         * a divergent path makes ptxas serialise them all: C7520) and add exact zeros */
        auto weights = [&]() {
            const hc_u64 past = Q && 4 * kb + j >= tk32 ? 4 * kb + j + 1 - tk32 : 0u;
            if (live) {
                const unsigned dst = smem_addr(smem + s * SB) + XS + j * (unsigned)cb;
                load_once<HC_L2_HINTS>(dst, src - past * cb, (unsigned)cb, smem_addr(&full[s]));
            }
            src += Q ? 4 * cb : cb;
            if (++s == NS) s = 0, ph ^= 1;
            if (++kb == ipu && t + 1 < t1) {
                kb = 0, un = work.at(++u);
                start();
            }
        };
        /* an activation tile: read again by the next output tiles of its token tile (the
         * block's next quads), so kept in L2 past the weights where HC_L2_HINTS says */
        auto xload = [&](unsigned dst, unsigned c0, unsigned c1, unsigned bar) {
            tma_load_kept<HC_L2_HINTS>(dst, tmap, c0, c1, bar);
        };
        start();
        if (PRE) {
            /* under programmatic dependent launch: the first stages' weights are asked for
             * before the kernel before is done (they do not depend on it); warp 0 then waits
             * for it and adds those stages' activation tiles (the barriers expect them) */
            const unsigned npre = t1 - t0 < NS ? t1 - t0 : NS;
            for (; t < t0 + npre; t++) {
                mbar_arrive_expect_tx(smem_addr(&full[s]), mine);
                weights();
            }
            if (Q || j == 0) {
                HC_PDL_WAIT();
                unsigned ua = t0 / ipu, ka = t0 - ua * ipu;
                hc_u64 tok = work.at(ua).tok0;
                for (unsigned i = 0; i < npre; i++) {
                    xload(smem_addr(smem + i * SB + (Q ? j * XB : 0u)), (Q ? 4 * ka + j : ka) * 64,
                          (unsigned)tok, smem_addr(&full[i]));
                    if (++ka == ipu && i + 1 < npre) ka = 0, tok = work.at(++ua).tok0;
                }
            }
        }
        for (; t < t1; t++) {
            if (t - t0 >= NS) mbar_wait(smem_addr(&empty[s]), ph ^ 1);
            mbar_arrive_expect_tx(smem_addr(&full[s]), mine);
            if (Q || j == 0)
                xload(smem_addr(smem + s * SB + (Q ? j * XB : 0u)), (Q ? 4 * kb + j : kb) * 64,
                      (unsigned)un.tok0, smem_addr(&full[s]));
            weights();
        }
        if (!Q && j == 3) {
            /* the handoff: the first segment's arrival, once the consumers' stores are ordered
             * before it (seg_done: each warp's lane 0 after __syncwarp), made by this thread once
             * its copies are all asked for -- late, but the tile's other blocks run to the
             * launch's end, so the arrival is seldom the last. Its range is found again from the
             * shape in shared memory: what is kept across the loop costs the producers' 24
             * registers. */
            const unsigned w = shape[0], gb = shape[1], b = blockIdx.x;
            const unsigned f0 = hc_streamk_start(b, w, gb), f1 = hc_streamk_start(b + 1, w, gb);
            const unsigned uf = f0 / tk32, uf0 = uf * tk32;
            if (HC_SKINNY_HANDOFF && HC_GEMV_DIAG != 3 && f0 != uf0 && uf0 + tk32 < f1) {
                mbar_wait(smem_addr(&seg_done), 0);
                if (PRE) HC_PDL_WAIT(); /* (passed: the consumers waited before their stores) */
                hc_u64 b0, b1;
                streamk_span(uf0, tk32, b, w, gb, b0, b1);
                first_last = arrive_one(&cnt[uf], (unsigned)(b1 - b0));
                mbar_arrive(smem_addr(&first_ready));
            }
        }
        return;
    }
    /* ---- consumers ---- */
    setmaxnreg_inc<112>(); /* 128 x 24 + 512 x 112 registers: within the block's 640 x 96 */
    const unsigned wgc = (warp - 4) >> 2, wl = warp & 3, gq = lane >> 2, c = lane & 3;
    const unsigned r0 = wl * 16 + gq, ctid = tid - 128;
    float d[TOKS / 2]; /* (a segment's first wgmma ignores its old values: no zeroing) */
    /* SETS register sets of A fragments, item t's in set (its stage) % SETS: SETS - 1 items'
     * wgmma stay in flight while the next item is decoded (config.h HC_SKINNY_SETS) */
    constexpr unsigned SETS = HC_SKINNY_SETS(TOKS, NS);
    static_assert(SETS == 2 || SETS == 3, "two or three sets of A fragments");
    static_assert(NS % SETS == 0, "a set follows its stage: the ring is a whole number of set laps");
    unsigned a0[4][4], a1[4][4], a2[SETS == 3 ? 4 : 1][4];
    /* the stage ring is unrolled (below): stage S's addresses are these bases plus constants */
    hc_u8 *const chunk0 = smem + XS + wgc * cb; /* stage 0's chunk of this warpgroup */
    const unsigned full0 = smem_addr(&full[0]), empty0 = smem_addr(&empty[0]);
    /* + SB >> 4 a stage, + 2 a k16 step (Q: this warpgroup's activation tile) */
    const hc_u64 desc0 = b_desc(smem + (Q ? wgc * XB : 0u));
    /* (v100, where the work source asks for it: the descriptor's low word held in a register --
     * NVVM otherwise rebuilds it from the shared window's base in every item) */
    const unsigned dlo = Work::held_desc() ? held((unsigned)desc0) : (unsigned)desc0;
    const unsigned dhi = (unsigned)(desc0 >> 32);
    /* the output tile u of item t (un), its first item u0, the open segment's first item */
    unsigned t = t0, u = t0 / ipu, u0 = u * ipu, seg = t0;
    skinny_unit un = work.at(u);
    hc_mma_params pd = p; /* the shape with the divisor of the tile being decoded */
    pd.global_div = un.gdiv;
    /* waits for stage s (phase ph) and decodes this warp's A fragments into a */
    auto decode = [&](unsigned s, unsigned ph, unsigned (*a)[4]) {
        mbar_wait(full0 + 8 * s, ph);
        ws_decode(chunk0 + s * SB, pd, wl, lane, r0, a);
    };
    /* the register set of stage s's item (s a constant wherever it is called) */
    auto set_of = [&](const unsigned s) -> unsigned(*)[4] {
        return s % SETS == 0 ? a0 : s % SETS == 1 ? a1 : (unsigned(*)[4])a2;
    };
    /* item t in stage S, its A in set S % SETS (decoded before): its wgmma; stage S - SETS + 1
     * released once item t - SETS + 1's wgmma are done; the next item decoded into that item's
     * set unless t ends the segment e (true: the caller ends it) */
    unsigned e = 0, ph = 0; /* the segment's end; the phase of the stages' current lap */
    auto item = [&](const unsigned S) -> bool { /* (S a constant at every call) */
        const unsigned SN = S + 1 == NS ? 0 : S + 1;
        constexpr unsigned LAG = SETS - 1;
        unsigned(*a)[4] = set_of(S);
        unsigned(*an)[4] = set_of(SN);
        const unsigned dls = dlo + ((S * SB) >> 4);
        wgmma_tile<TOKS>(d, a, dhi, dls, t == seg);
        wgmma_commit();
        wgmma_wait<LAG>();
        if (t >= t0 + LAG) ring_release(empty0 + 8 * (S >= LAG ? S - LAG : S + NS - LAG), lane);
        if (t + 1 == e) return true;
        decode(SN, SN == 0 ? ph ^ 1 : ph, an);
        t++;
        return false;
    };
    /* the open segment's sums to Y, or through the fix-up (its last item t) */
    /* which cut tiles this block sums at its end, where its arrival was the last: bit 0 the
     * first segment's (arrived at in place: no handoff), bit 1 the last segment's */
    unsigned sums = 0;
    auto finish = [&]() {
        const hc_u64 n0 = (Q ? (hc_u64)un.q : 4 * (hc_u64)un.q + wgc) * 64;
        if constexpr (Q) {
            /* the four warpgroups' sums of one stripe, added in warpgroup order by the first
             * (the same bits every run) through shared memory past the ring; the first barrier
             * keeps the previous tile's sums until they are read */
            float *const ps = (float *)(smem + NS * SB);
            const unsigned lt = ctid & 127u;
            bar_sync<1, 512>();
            if (wgc > 0)
#pragma unroll
                for (int i = 0; i < TOKS / 2; i++) ps[((wgc - 1) * (TOKS / 2) + i) * 128 + lt] = d[i];
            bar_sync<1, 512>();
            if (wgc == 0 && n0 < p.N) {
#pragma unroll
                for (int h = 0; h < 3; h++)
#pragma unroll
                    for (int i = 0; i < TOKS / 2; i++) d[i] += ps[(h * (TOKS / 2) + i) * 128 + lt];
                frag_store_tile<TOKS>(d, un.y, n0, r0, c, un.tok0, un.mend, p.N);
            }
        } else if (seg != u0 || t + 1 != u0 + tk32) { /* a cut tile: the segment to the workspace */
            streamk_store<TOKS, 512>(d, ws, blk, seg == t0 ? 0u : 1u, ctid);
            if (seg == t0 && handed_off(u0)) { /* (the block's first segment, not its last) */
                __syncwarp();
                if (lane == 0) mbar_arrive(smem_addr(&seg_done));
            } else if (streamk_arrive<512>(cnt, u, u0, tk, blk, ctid, items, g, last)) {
                sums |= t + 1 == t1 ? 2u : 1u;
            }
        } else if (n0 < p.N) {
            frag_store_tile<TOKS>(d, un.y, n0, r0, c, un.tok0, un.mend, p.N);
        }
    };
    if (PRE) HC_PDL_WAIT(); /* before the first write of Y or the workspace */
    decode(0, 0, a0);
#if HC_GEMV_DIAG == 2
    tl1 = gtimer();
#endif
    unsigned s = 0; /* item t's stage */
    for (;;) { /* a segment: items t .. e - 1, of tile u */
        e = u0 + ipu < t1 ? u0 + ipu : t1;
        bool ended = false;
        while (!ended) {
            switch (s) { /* (a case past the ring's last stage is empty: the lap ends) */
#define HC_SKINNY_ITEM(S)                                                                      \
    case S:                                                                                    \
        if constexpr (S < NS) {                                                                \
            if (item(S)) {                                                                     \
                s = S, ended = true;                                                           \
                break;                                                                         \
            }                                                                                  \
        }                                                                                      \
        [[fallthrough]];
                HC_SKINNY_ITEM(0) HC_SKINNY_ITEM(1) HC_SKINNY_ITEM(2) HC_SKINNY_ITEM(3)
                HC_SKINNY_ITEM(4) HC_SKINNY_ITEM(5) HC_SKINNY_ITEM(6) HC_SKINNY_ITEM(7)
                HC_SKINNY_ITEM(8) HC_SKINNY_ITEM(9) HC_SKINNY_ITEM(10) HC_SKINNY_ITEM(11)
#undef HC_SKINNY_ITEM
            default:
                break;
            }
            if (!ended) s = 0, ph ^= 1;
        }
        static_assert(NS <= 12 && NS % 2 == 0, "the ring's cases above: at most 12, even");
        /* item e - 1 (stage s) was the segment's last: the next tile's first item (e) is
         * decoded now, under its own divisor, while the last wgmma finish */
        const bool more = e < t1;
        const unsigned sn = s + 1 == NS ? 0 : s + 1, phn = sn == 0 ? ph ^ 1 : ph;
        if (more) {
            pd.global_div = work.at(u + 1).gdiv; /* (the rest of the tile is read after finish) */
            if (sn % SETS == 1) /* (the sets are registers: indexed by constants only) */
                decode(sn, phn, a1);
            else if (SETS == 3 && sn % SETS == 2)
                decode(sn, phn, (unsigned(*)[4])a2);
            else
                decode(sn, phn, a0);
        }
        wgmma_wait<0>();
#if HC_GEMV_DIAG == 2
        if (!more) tl2 = gtimer();
#endif
        finish();
        if (!more) break;
        t = e, seg = e, u++, u0 += ipu, un = work.at(u), s = sn, ph = phn;
    }
    if constexpr (!Q) {
    /* the sums of the cut tiles whose last arrival this block made, first segment's tile
     * first: that arrival made in place (sums bit 0) or by the handoff thread (first_last);
     * one call site, so that the sum is inlined once */
    const unsigned uf = t0 / tk32;
    if (handed_off(uf * tk32)) {
        mbar_wait(smem_addr(&first_ready), 0);
        sums |= first_last;
    }
#pragma unroll 1
    for (unsigned k = 0; k < 2; k++) {
        if (!(sums >> k & 1u)) continue;
        const unsigned tu = k == 0 ? uf : u;
        const skinny_unit su = work.at(tu);
        hc_u64 b0, b1;
        streamk_span((hc_u64)tu * tk32, tk, blk, items, g, b0, b1);
        streamk_sum<TOKS, 512>(d, ws, cnt, tu, (hc_u64)tu * tk32, b0, b1, ctid, items, g, su.y,
                               (4 * (hc_u64)su.q + wgc) * 64, r0, c, su.tok0, su.mend, p.N);
    }
    }
#if HC_GEMV_DIAG == 2
    /* a dense launch's record (5 words a block) after its segments (gridDim.x of them) */
    if constexpr (Work::timeline())
        if (ctid == 0)
            diag_timeline((unsigned long long *)(ws + (hc_u64)gridDim.x * 2 * 256 * TOKS) + blk * 5,
                          tl0, tl1, tl2);
#endif
}

/* A dense layer's entry (hc_skinny_gemm*: the arguments of hc_wgmma_gemm64 plus ws and cnt;
 * grid: the host's block count). */
template <int TOKS, bool Q = false>
__device__ __forceinline__ void skinny_gemm(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                            hc_u64 expert, hc_u64 m, hc_u16 *__restrict__ y,
                                            const hc_tmap &tmx, float *__restrict__ ws,
                                            unsigned *__restrict__ cnt) {
    const unsigned mtiles = (unsigned)((m + TOKS - 1) / TOKS);
    const skinny_dense<TOKS> work = {w + expert * p.tiles_n * p.tiles_k * HC_CHUNK_BYTES, y, m,
                                     mtiles, p.global_div};
    const hc_u64 items = Q ? p.tiles_n * mtiles * ((p.tiles_k + 3) / 4)
                           : (p.tiles_n + 3) / 4 * mtiles * p.tiles_k;
    skinny_body<TOKS, HC_SKINNY_PDL != 0, skinny_dense<TOKS>, Q>(work, items, p, tmx, ws, cnt);
}
#endif

#endif
