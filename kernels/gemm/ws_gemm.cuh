// ws_gemm.cuh: the warp-specialised family (hc_wgmma_gemm64, _128, _256; sm_90a, M > 16; the
// grouped MoE kernels' other tiles and block shapes too): 128 weight rows x TOKS tokens per
// block (the dense kernels); one producer thread fills a pipeline of HC_WS_STAGES(TOKS)
// (config.h) with TMA (activations) and bulk copies (chunks), the consumer warpgroups decode
// their rows into registers and run wgmma m64nTk16 while the copies of the next tiles land.
#ifndef HC_K_GEMM_WS_GEMM_CUH
#define HC_K_GEMM_WS_GEMM_CUH

#include "gemm/ws_decode.cuh"
#include "epilogue/moe_act.cuh"
#include "epilogue/staged.cuh"
#include "epilogue/streamk.cuh"
#include "memory/tma.cuh"
#include "mma/wgmma.cuh"
#include "ws_walk.h"

#ifdef HC_SM90A
/* A consumer warp's place -- its warpgroup wgc, its warp wl in it, its lane, its first row r0 --
 * and the ring's stage-0 wgmma descriptor, for ws_gemm_block's and ws_consume's K loops (v100,
 * config.h HC_WS_HOIST): where HOIST, the place is held in registers (memory/ptx.cuh held), not
 * recomputed from the thread index in every decode, and a stage's descriptor is stage 0's plus
 * an offset (shared addresses below 2^18 never carry out of its 14-bit address field). */
template <bool HOIST> struct ws_place {
    unsigned wgc, wl, lane, r0;
    hc_u64 db0;
    __device__ __forceinline__ ws_place(unsigned wgc_, unsigned wl_, unsigned lane_, unsigned r0_,
                                        hc_u8 *smem)
        : wgc(HOIST ? held(wgc_) : wgc_), wl(HOIST ? held(wl_) : wl_),
          lane(HOIST ? held(lane_) : lane_), r0(HOIST ? held(r0_) : r0_), db0(b_desc(smem)) {}
    /* the wgmma descriptor of stage s (stage_bytes apart from smem) */
    __device__ __forceinline__ hc_u64 desc(hc_u8 *smem, unsigned s, hc_u64 stage_bytes) const {
        return HOIST ? db0 + (s * stage_bytes >> 4) : b_desc(smem + s * stage_bytes);
    }
    /* this warp's A fragments of its warpgroup's SPW stripes, from the chunks at ch (cb bytes
     * apart, the stage's activation tile before them) */
    template <int SPW>
    __device__ __forceinline__ void decode(hc_u8 *ch, const hc_mma_params &p, hc_u64 cb,
                                           unsigned (*a)[4][4]) const {
#pragma unroll
        for (int j = 0; j < SPW; j++) ws_decode(ch + (wgc * SPW + j) * cb, p, wl, lane, r0, a[j]);
    }
};

/* A block computes 128 weight rows (stripes 2 b and 2 b + 1) x TOKS tokens with one producer
 * warpgroup and two consumer warpgroups (the dense kernels; other shapes below).
 * - Producer (one thread; the warpgroup's registers cut to 40, config.h HC_WS_PREGS -- 24 at
 *   two blocks an SM): for each K tile, once its
 *   stage is empty, one TMA copy brings the TOKS x 64 activation tile (tmx: the host's tensor
 *   map of X, [m][ldx] bf16, box 64 x TOKS, 128-byte swizzle, zeros outside m x K; past 256
 *   tokens two copies of a box of TOKS / 2 rows, config.h HC_WS_BOX) and one
 *   bulk copy per stripe its weight chunk; the stage's full barrier completes when the bytes
 *   land.
 * - Consumer warpgroup c (registers raised to 232, HC_WS_CREGS -- 104 at two blocks an SM)
 *   owns stripe 2 b + c: each warp
 *   decodes its 16 rows of tile kb + 1 (scaled, rounded to bf16) into registers while the wgmma
 *   m64 x TOKS x k16 of tile kb run, A from those registers, B the activation tile; after tile
 *   kb's wgmma are issued it waits for tile kb - 1's and releases that stage (empty barrier).
 * Blocks walk the (stripe pair, token tile) grid in groups of HC_WIDE_GROUP token tiles so that
 * the weights and activations of the blocks in flight stay in L2. Arguments of hc_wgmma_gemm
 * plus tmx; grid ((tiles_n + 1) / 2, ceil(m / TOKS)); 384 threads; shared memory 1024 +
 * HC_WS_STAGES(TOKS) x round1024(TOKS x 128 + 2 chunk bytes).
 * ws_gemm_block is one block: stripes nb0 and nb0 + 1 of the weights at w (the expert's first
 * stripe), tokens tok0.. of the tensor map's rows, outputs for tokens below m. SPW = 2 (the
 * grouped moe-ws96w): stripes nb0 .. nb0 + 3, consumer warpgroup c owning 2 c and 2 c + 1 (its
 * warps decode both, two wgmma a k16 step), a stage's four chunks behind one activation tile;
 * SPW = 3 (moe-ws24x6) the same with six stripes a block. actf (the grouped gate_up with the
 * activation in its epilogue, epilogue/moe_act.cuh; ws_no_act otherwise): where actf.on(), in
 * halves mode the stage's chunks are gate's stripes nb0 .. (from w) and up's same rows (from
 * wup), live of each, and the outputs go through the activation into h instead of y. */
template <int TOKS, int SPW = 1, class ACTF = ws_no_act, int BPS = 1, bool HOLD = true>
__device__ __forceinline__ void ws_gemm_block(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                              hc_u64 nb0, hc_u64 tok0, hc_u64 m,
                                              hc_u16 *__restrict__ y, const hc_tmap &tmx,
                                              const ACTF &actf = ACTF()) {
    constexpr unsigned XB = TOKS * 128; /* bytes of a stage's activation tile */
    constexpr int NS = HC_WS_STAGES(TOKS), BOX = HC_WS_BOX(TOKS);
    static_assert(TOKS % BOX == 0 && BOX * 128 % 1024 == 0, "whole boxes of whole swizzle rows");
    static_assert(NS >= 3, "a stage in the wgmma, one decoding, one loading");
    /* (two stripes a warpgroup at 128 tokens spill in the int8 kind with zero points: t_jit;
     * three hold 3 x 4 x 4 x 2 A registers, so a tile of at most 24) */
    static_assert(SPW == 1 || (SPW == 2 && TOKS <= 96) || (SPW == 3 && TOKS <= 24),
                  "two stripes a warpgroup up to 96 tokens, three up to 24");
    constexpr unsigned NST = 2 * SPW; /* stripes a block */
    __shared__ __align__(8) unsigned long long full[NS], empty[NS];
    hc_u8 *smem = smem_1024();
    const unsigned tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const hc_u64 cb = HC_CHUNK_BYTES, stage_bytes = HC_WS_STAGE_BYTES(TOKS, NST, cb);
    /* the block's stripes that exist (the layer's last block may have fewer; written apart for
     * a pair so that ptxas sees at most two copies and keeps the pair kernels' code) */
    const unsigned live = SPW == 1 ? (nb0 + 1 < p.tiles_n ? 2u : 1u)
                                   : p.tiles_n - nb0 < NST ? (unsigned)(p.tiles_n - nb0) : NST;
    const hc_u64 tiles = p.tiles_k;
    /* (v99: a tile of at most NW rows runs its wgmma NW tokens wide) */
    constexpr int NW = SPW == 1 ? HC_WS_NARROW_OF(TOKS) : 0;
    const bool narrow = NW > 0 && m - tok0 <= (hc_u64)NW;
    if (tid == 0) {
        for (int s = 0; s < NS; s++) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), 8 * HC_EMPTY_LANES);
        }
        mbar_init_fence();
    }
    __syncthreads();
    if (warp < 4) { /* ---- producer ---- */
        setmaxnreg_dec<HC_WS_PREGS(BPS)>();
        if (tid != 0) return;
        const hc_u8 *wsrc = w + nb0 * tiles * cb;
        const hc_u64 sstride = tiles * cb;
        /* chunks a stage: the block's live stripes, or in halves mode live of gate's (slots 0 ..)
         * and as many of up's (slots SPW ..) */
        const ws_act fa = actf.on() ? actf() : ws_act{};
        const bool halves = fa.mode == 1;
        const unsigned nld = halves ? 2 * fa.live : live, hl = halves ? fa.live : NST;
        const unsigned tx = XB + nld * (unsigned)cb;
        const hc_u64 tmap = (hc_u64)&tmx;
        unsigned s = 0, ph = 0;
        for (hc_u64 kb = 0; kb < tiles; kb++) {
            if (kb >= NS) mbar_wait(smem_addr(&empty[s]), ph ^ 1);
            const unsigned st = smem_addr(smem + s * stage_bytes), fb = smem_addr(&full[s]);
            mbar_arrive_expect_tx(fb, tx);
#pragma unroll
            for (int h = 0; h < TOKS / BOX; h++) /* (boxes of 1024-byte multiples) */
                tma_load_2d(st + h * BOX * 128, tmap, (unsigned)(kb * 64), (unsigned)tok0 + h * BOX,
                            fb);
            for (unsigned q = 0; q < nld; q++) {
                const bool up = q >= hl; /* (halves mode only) */
                const hc_u8 *src = up ? fa.wup + (q - hl) * sstride : wsrc + q * sstride;
                bulk_load(st + XB + (up ? SPW + q - hl : q) * (unsigned)cb, src + kb * cb,
                          (unsigned)cb, fb);
            }
            if (++s == NS) s = 0, ph ^= 1;
        }
        return;
    }
    /* ---- consumers ---- */
    setmaxnreg_inc<HC_WS_CREGS(BPS)>();
    const unsigned wgc = (warp - 4) >> 2, wl = warp & 3, g = lane >> 2, c = lane & 3;
    const unsigned r0 = wl * 16 + g;
    /* SPW stripes a warpgroup: stripe nb0 + wgc SPW + j in d[j], its A fragments in a[j] (a
     * stripe past the layer decodes what its stage holds; its sums are never stored). Two: the
     * first K tile's wgmma start the sums (zeros written before them make ptxas serialise
     * every wgmma, C7515) */
    float d[SPW][TOKS / 2];
    if constexpr (SPW == 1) {
#pragma unroll
        for (int i = 0; i < TOKS / 2; i++) d[0][i] = 0.0f;
    }
    unsigned a0[SPW][4][4], a1[SPW][4][4];
    /* (v100: the lane's place held in registers, not recomputed in every decode -- up to 256
     * tokens, and not in a kernel of two bodies (HOLD false): moe-ws256r spilled in the FP8
     * kind; at 288 the loop is not unrolled and it saved nothing. At two blocks an SM the
     * ring's barrier addresses too: 1.9 SASS instructions a tile fewer in moe-ws80d, ~1 more
     * at one block an SM) */
    constexpr bool HOIST = HC_WS_HOIST && HOLD && TOKS <= 256, HOLDB = HOIST && BPS > 1;
    const ws_place<HOIST> pl(wgc, wl, lane, r0, smem);
    const unsigned fullh = HOLDB ? held(smem_addr(&full[0])) : 0u;
    const unsigned emptyh = HOLDB ? held(smem_addr(&empty[0])) : 0u;
    /* waits for tile kb in stage s (phase ph) and decodes this warp's A fragments into a */
    auto decode = [&](unsigned s, unsigned ph, unsigned (*a)[4][4]) {
        mbar_wait(HOLDB ? fullh + 8 * s : smem_addr(&full[s]), ph);
        pl.template decode<SPW>(smem + s * stage_bytes + XB, p, cb, a);
    };
    /* issues tile kb's wgmma (stage s, A in a), then decodes tile kb + 1 into an (stage sn,
     * phase phn) and releases stage sp (tile kb - 1) once its wgmma are done */
    const unsigned nt = (unsigned)tiles; /* (32 bits: a tensor map coordinate, kb x 64) */
    auto step = [&](unsigned kb, unsigned s, unsigned (*a)[4][4], unsigned (*an)[4][4], unsigned sn,
                    unsigned phn, unsigned sp) {
        const hc_u64 db = pl.desc(smem, s, stage_bytes);
        if constexpr (SPW == 1) {
            wgmma_tile_commit<TOKS, NW>(d[0], a[0], (unsigned)(db >> 32), (unsigned)db, false,
                                        narrow);
        } else {
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < 4; ks++)
#pragma unroll
                for (int j = 0; j < SPW; j++)
                    wgmma_rs<TOKS>(d[j], a[j][ks], db + 2 * ks, kb > 0 || ks > 0 ? 1u : 0u);
            wgmma_commit();
        }
        wgmma_wait<1>();
        if (kb > 0) ring_release(HOLDB ? emptyh + 8 * sp : smem_addr(&empty[sp]), lane);
        if (kb + 1 < nt) decode(sn, phn, an);
    };
    if (tiles > 0) decode(0, 0, a0);
    /* (v95: two laps of the ring a trip, every step's stage, phase and A set a constant -- where
     * NVRTC keeps it in registers: one stripe a warpgroup, one wgmma a k16 step, five stages) */
    constexpr bool UNROLLED = HC_WS_UNROLL && SPW == 1 && TOKS <= 256 && NS <= 5;
    if constexpr (UNROLLED) {
        for (unsigned kb0 = 0; kb0 < nt; kb0 += 2 * NS) {
#pragma unroll
            for (unsigned i = 0; i < 2 * NS; i++) {
                if (kb0 + i >= nt) break;
                step(kb0 + i, i % NS, i & 1 ? a1 : a0, i & 1 ? a0 : a1, (i + 1) % NS,
                     ((i + 1) % (2 * NS)) / NS, (i + NS - 1) % NS);
            }
        }
    } else {
        unsigned s = 0, ph = 0, sp = NS - 1;
        for (hc_u64 kb = 0; kb < tiles; kb += 2) {
            unsigned s1 = s + 1 == NS ? 0 : s + 1, ph1 = s1 == 0 ? ph ^ 1 : ph;
            step(kb, s, a0, a1, s1, ph1, sp);
            if (kb + 1 >= tiles) break;
            unsigned s2 = s1 + 1 == NS ? 0 : s1 + 1, ph2 = s2 == 0 ? ph1 ^ 1 : ph1;
            step(kb + 1, s1, a1, a0, s2, ph2, s);
            sp = s1, s = s2, ph = ph2;
        }
    }
    wgmma_wait<0>();
    if (SPW > 1 && tiles == 0) /* (no K tile: no wgmma started the sums) */
#pragma unroll
        for (int j = 0; j < SPW; j++)
#pragma unroll
            for (int i = 0; i < TOKS / 2; i++) d[j][i] = 0.0f;
    if (actf.on()) {
        const ws_act fa = actf();
        /* (halves: live of gate's and as many of up's -- each warpgroup its half's) */
        const unsigned lw = fa.mode == 1 ? fa.live : wg_stripes<SPW>(live, wgc);
        store_act<TOKS, SPW>(stage_sums<TOKS, SPW>(&d[0][0], smem, wgc, r0, c, lw), tid, fa, tok0,
                             m);
        return;
    }
    store_staged<TOKS, SPW>(&d[0][0], smem, tid, wgc, r0, c, live, y, nb0, tok0, p, m);
}

/* ---- the persistent form (the dense stream-K ws128k, v84): a block walks work items, its ring
 * carried from one to the next. ws_gemm_block above is the same producer and consumer steps for
 * one item, written out once more on purpose: built from the functions below it compiled to
 * other register choices -- 8 bytes spilled in moe-ws96w's int8 kind with zero points
 * (bench/NOTES.md v83). The grouped kernels on this form (moe-ws24p / moe-ws80p, v83) were
 * measured and deleted: no faster than their one-tile grids (session 34). ---- */

/* The shape of a block's stage ring: TOKS x 64 activations and 2 SPW chunks a stage, NS
 * stages (config.h HC_WS_STAGES), each padded to 1024 bytes */
template <int TOKS, int SPW> struct ws_shape {
    static constexpr unsigned XB = TOKS * 128; /* bytes of a stage's activation tile */
    static constexpr int NS = HC_WS_STAGES(TOKS), BOX = HC_WS_BOX(TOKS);
    static constexpr unsigned NST = 2 * SPW; /* stripes a block */
    static_assert(TOKS % BOX == 0 && BOX * 128 % 1024 == 0, "whole boxes of whole swizzle rows");
    /* (two stripes a warpgroup at 128 tokens spill in the int8 kind with zero points: t_jit;
     * three hold 3 x 4 x 4 x 2 A registers, so a tile of at most 24) */
    static_assert(SPW == 1 || (SPW == 2 && TOKS <= 96) || (SPW == 3 && TOKS <= 24),
                  "two stripes a warpgroup up to 96 tokens, three up to 24");
    static __device__ __forceinline__ hc_u64 stage_bytes() {
        return HC_WS_STAGE_BYTES(TOKS, NST, (hc_u64)HC_CHUNK_BYTES);
    }
    /* the item's stripes that exist (the layer's last block may have fewer; written apart for
     * a pair so that ptxas sees at most two copies and keeps the pair kernels' code) */
    static __device__ __forceinline__ unsigned live(hc_u64 nb0, hc_u64 tiles_n) {
        return SPW == 1 ? (nb0 + 1 < tiles_n ? 2u : 1u)
                        : tiles_n - nb0 < NST ? (unsigned)(tiles_n - nb0) : NST;
    }
};

/* The producer thread's share of one item: its K tiles k0 .. k1 - 1 into the ring from stage
 * *s (phase *ph), *g the K tiles loaded before it (a stage is refilled once the consumers
 * released it). */
template <int TOKS, int SPW, class ACTF>
__device__ __forceinline__ void ws_produce(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                           hc_u64 nb0, hc_u64 tok0, hc_u64 k0, hc_u64 k1,
                                           const ACTF &actf,
                                           const hc_tmap &tmx, hc_u8 *smem,
                                           unsigned long long *full, unsigned long long *empty,
                                           unsigned &s, unsigned &ph, hc_u64 &g) {
    using S = ws_shape<TOKS, SPW>;
    const hc_u64 cb = HC_CHUNK_BYTES, stage_bytes = S::stage_bytes();
    const hc_u64 tiles = p.tiles_k, sstride = tiles * cb;
    const hc_u8 *wsrc = w + nb0 * sstride;
    /* chunks a stage: the item's live stripes, or in halves mode live of gate's (slots 0 ..) and
     * as many of up's (slots SPW ..) */
    const ws_act fa = actf.on() ? actf() : ws_act{};
    const bool halves = fa.mode == 1;
    const unsigned nld = halves ? 2 * fa.live : S::live(nb0, p.tiles_n);
    const unsigned hl = halves ? fa.live : S::NST;
    const unsigned tx = S::XB + nld * (unsigned)cb;
    const hc_u64 tmap = (hc_u64)&tmx;
    for (hc_u64 kb = k0; kb < k1; kb++, g++) {
        if (g >= (hc_u64)S::NS) mbar_wait(smem_addr(&empty[s]), ph ^ 1);
        const unsigned st = smem_addr(smem + s * stage_bytes), fb = smem_addr(&full[s]);
        mbar_arrive_expect_tx(fb, tx);
#pragma unroll
        for (int h = 0; h < TOKS / S::BOX; h++) /* (boxes of 1024-byte multiples: one swizzle) */
            tma_load_2d(st + h * S::BOX * 128, tmap, (unsigned)(kb * 64),
                        (unsigned)tok0 + h * S::BOX, fb);
        for (unsigned q = 0; q < nld; q++) {
            const bool up = q >= hl; /* (halves mode only) */
            const hc_u8 *src = up ? fa.wup + (q - hl) * sstride : wsrc + q * sstride;
            bulk_load(st + S::XB + (up ? SPW + q - hl : q) * (unsigned)cb, src + kb * cb,
                      (unsigned)cb, fb);
        }
        if (++s == S::NS) s = 0, ph ^= 1;
    }
}

/* A consumer thread's share of one item's K tiles k0 .. k1 - 1 (its warpgroup's stripes' sums
 * in d) from stage *s (phase *ph) on, every stage it took released (the item's last one too,
 * for the next item's loads), *s / *ph left at the next item's first; then epi(d, wgc, r0, c),
 * the item's epilogue (the ring may be refilling already: it stages nothing there; d is its to
 * overwrite). */
template <int TOKS, int SPW, class EPI>
__device__ __forceinline__ void ws_consume(const hc_mma_params &p, hc_u64 k0, hc_u64 k1,
                                           hc_u8 *smem, unsigned long long *full,
                                           unsigned long long *empty, unsigned &s, unsigned &ph,
                                           const EPI &epi) {
    using S = ws_shape<TOKS, SPW>;
    constexpr int NS = S::NS;
    const hc_u64 cb = HC_CHUNK_BYTES, stage_bytes = S::stage_bytes();
    const unsigned tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const unsigned wgc = (warp - 4) >> 2, wl = warp & 3, g = lane >> 2, c = lane & 3;
    const unsigned r0 = wl * 16 + g;
    const hc_u64 tiles = k1 - k0; /* (kb below counts from the item's first K tile) */
    /* SPW stripes a warpgroup: stripe nb0 + wgc SPW + j in d[j], its A fragments in a[j] (a
     * stripe past the layer decodes what its stage holds; its sums are never stored). Two: the
     * first K tile's wgmma start the sums (zeros written before them make ptxas serialise
     * every wgmma, C7515) */
    float d[SPW][TOKS / 2];
    if constexpr (SPW == 1) {
#pragma unroll
        for (int i = 0; i < TOKS / 2; i++) d[0][i] = 0.0f;
    }
    unsigned a0[SPW][4][4], a1[SPW][4][4];
    /* (v100, as ws_gemm_block's) */
    const ws_place<HC_WS_HOIST && TOKS <= 256> pl(wgc, wl, lane, r0, smem);
    /* waits for tile kb in stage sd (phase phd) and decodes this warp's A fragments into a */
    auto decode = [&](unsigned sd, unsigned phd, unsigned (*a)[4][4]) {
        mbar_wait(smem_addr(&full[sd]), phd);
        pl.template decode<SPW>(smem + sd * stage_bytes + S::XB, p, cb, a);
    };
    /* gives stage sr (its wgmma done) back to the producer */
    auto release = [&](unsigned sr) { ring_release(smem_addr(&empty[sr]), lane); };
    /* issues tile kb's wgmma (stage sk, A in a), then decodes tile kb + 1 into an (stage sn,
     * phase phn) and releases stage sp (tile kb - 1) once its wgmma are done */
    auto step = [&](hc_u64 kb, unsigned sk, unsigned (*a)[4][4], unsigned (*an)[4][4], unsigned sn,
                    unsigned phn, unsigned sp) {
        const hc_u64 db = pl.desc(smem, sk, stage_bytes);
        if constexpr (SPW == 1) {
            wgmma_tile<TOKS>(d[0], a[0], (unsigned)(db >> 32), (unsigned)db, false);
        } else {
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < 4; ks++)
#pragma unroll
                for (int j = 0; j < SPW; j++)
                    wgmma_rs<TOKS>(d[j], a[j][ks], db + 2 * ks, kb > 0 || ks > 0 ? 1u : 0u);
        }
        wgmma_commit();
        wgmma_wait<1>();
        if (kb > 0) release(sp);
        if (kb + 1 < tiles) decode(sn, phn, an);
    };
    if (tiles > 0) decode(s, ph, a0);
    unsigned sp = NS - 1;
    for (hc_u64 kb = 0; kb < tiles; kb += 2) {
        unsigned s1 = s + 1 == NS ? 0 : s + 1, ph1 = s1 == 0 ? ph ^ 1 : ph;
        step(kb, s, a0, a1, s1, ph1, sp);
        if (kb + 1 >= tiles) break;
        unsigned s2 = s1 + 1 == NS ? 0 : s1 + 1, ph2 = s2 == 0 ? ph1 ^ 1 : ph1;
        step(kb + 1, s1, a1, a0, s2, ph2, s);
        sp = s1, s = s2, ph = ph2;
    }
    wgmma_wait<0>();
    if (tiles > 0) {
        /* the item's last stage: an odd count of tiles left the loop at its first step (the last
         * stage s, the next one past it), an even count at its end (the last sp, s already the
         * next) */
        if (tiles & 1) {
            release(s);
            s = s + 1 == NS ? 0 : s + 1, ph = s == 0 ? ph ^ 1 : ph;
        } else {
            release(sp);
        }
    }
    if (SPW > 1 && tiles == 0) /* (no K tile: no wgmma started the sums) */
#pragma unroll
        for (int j = 0; j < SPW; j++)
#pragma unroll
            for (int i = 0; i < TOKS / 2; i++) d[j][i] = 0.0f;
    epi(&d[0][0], wgc, r0, c);
}

/* A whole tile's epilogue in a persistent block: the sums staged at stg -- past the ring --
 * then stored to y or through actf's activation */
template <int TOKS, int SPW, class ACTF>
__device__ __forceinline__ void ws_store_item(const float *d, unsigned wgc, unsigned r0,
                                              unsigned c, hc_u8 *stg, const hc_mma_params &p,
                                              hc_u64 nb0, hc_u64 tok0, hc_u64 m,
                                              hc_u16 *__restrict__ y, const ACTF &actf) {
    const unsigned tid = threadIdx.x, live = ws_shape<TOKS, SPW>::live(nb0, p.tiles_n);
    if (actf.on()) {
        const ws_act fa = actf();
        /* (halves: live of gate's and as many of up's -- each warpgroup its half's) */
        const unsigned lw = fa.mode == 1 ? fa.live : wg_stripes<SPW>(live, wgc);
        store_act<TOKS, SPW>(stage_sums<TOKS, SPW>(d, stg, wgc, r0, c, lw), tid, fa, tok0, m);
        return;
    }
    store_staged<TOKS, SPW>(d, stg, tid, wgc, r0, c, live, y, nb0, tok0, p, m);
}

/* The block's ring barriers: full[s] (the producer's copies landed), empty[s] (the 8 consumer
 * warps done with stage s) */
template <int NS>
__device__ __forceinline__ void ws_ring_init(unsigned long long *full, unsigned long long *empty) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < NS; s++) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), 8 * HC_EMPTY_LANES);
        }
        mbar_init_fence();
    }
    __syncthreads();
}

/* One work item of a persistent block (ws_gemm_items): stripes nb0 .. of the weights at w (the
 * expert's first stripe; p its shape and NVFP4 divisor), tokens tok0 .. of the tensor map's
 * rows, K tiles k0 .. k1 - 1, outputs for tokens below m into y or through actf's activation */
template <class ACTF> struct ws_item {
    const hc_u8 *w;
    hc_mma_params p;
    hc_u64 nb0, tok0, k0, k1, m;
    hc_u16 *y;
    ACTF actf;
};

/* A persistent block over the items src.get(0, it), src.get(1, it), .. (false past its last),
 * each stored by src.store(it, d, wgc, r0, c, stg): the producer runs on into the next item's
 * K tiles while the consumers finish the last one's and store it, so the ring stays full from
 * item to item; the ring's stages and phases carry over, every stage a consumer took is
 * released, and an epilogue stages its sums at stg, past the ring (shared memory for it: the
 * registry's, runtime/gpu_families.c). The dense stream-K kernel's items are K ranges of its
 * tiles (ws_streamk_items below). */
template <int TOKS, int SPW, class ACTF, int BPS, class SRC>
__device__ __forceinline__ void ws_gemm_items(const SRC &src, const hc_tmap &tmx) {
    using S = ws_shape<TOKS, SPW>;
    __shared__ __align__(8) unsigned long long full[S::NS], empty[S::NS];
    hc_u8 *smem = smem_1024();
    ws_ring_init<S::NS>(full, empty);
    unsigned s = 0, ph = 0;
    ws_item<ACTF> it;
    if (threadIdx.x < 128) { /* ---- producer ---- */
        setmaxnreg_dec<HC_WS_PREGS(BPS)>();
        if (threadIdx.x != 0) return;
        hc_u64 g = 0; /* K tiles loaded, every item's */
        for (unsigned k = 0; src.get(k, it); k++)
            ws_produce<TOKS, SPW>(it.w, it.p, it.nb0, it.tok0, it.k0, it.k1, it.actf, tmx, smem,
                                  full, empty, s, ph, g);
        return;
    }
    /* ---- consumers ---- */
    setmaxnreg_inc<HC_WS_CREGS(BPS)>();
    hc_u8 *const stg = smem + S::NS * S::stage_bytes();
    for (unsigned k = 0; src.get(k, it); k++)
        ws_consume<TOKS, SPW>(it.p, it.k0, it.k1, smem, full, empty, s, ph,
                              [&](float *d, unsigned wgc, unsigned r0, unsigned c) {
                                  src.store(it, d, wgc, r0, c, stg);
                              });
}

/* The dense kernels: grid ((tiles_n + 1) / 2, ceil(m / TOKS)). */
template <int TOKS>
__device__ __forceinline__ void ws_gemm(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                        hc_u64 expert, hc_u64 m, hc_u16 *__restrict__ y,
                                        const hc_tmap &tmx) {
    unsigned vp, mt;
    hc_ws_walk(gridDim.x, gridDim.y, blockIdx.y * gridDim.x + blockIdx.x, &vp, &mt);
    ws_gemm_block<TOKS>(w + expert * p.tiles_n * p.tiles_k * HC_CHUNK_BYTES, p, (hc_u64)vp * 2,
                        (hc_u64)mt * TOKS, m, y, tmx);
}

/* ---- the dense stream-K form (hc_wgmma_gemm128k, v84): a grid of
 * g blocks cuts the work items -- output tiles (pair, token tile), K tiles fastest -- into equal
 * contiguous ranges (streamk_rule.h), each block walking its range's tiles as items, the ring
 * carried from one to the next. A tile whose K range lies whole in the block's range is stored
 * as the grid kernels store it (staged past the ring); a cut one's sums go to the workspace and
 * the tile's last block to arrive adds them in block order (epilogue/streamk.cuh: the same bits
 * on every run, no block waiting for another). The pick at 64 < M <= 128 where the grid
 * kernels' tiles would leave most SMs idle (8192^2: 64 tiles; runtime/gpu_plan.c
 * streamk_tiles_instead); on 28672 x 8192 (224 tiles, 1.7 waves) it did not beat ws128. ---- */
/* Block blk's items of the stream-K cut (of g blocks): the output tiles its range [t0, t1) of
 * the items touches -- tile u's pair u % pairs and token tile u / pairs, its K tiles in the
 * range -- each stored whole or, cut, through the workspace ws and the tiles' counters cnt
 * (last: the block's __shared__ word for arrive_last) */
template <int TOKS> struct ws_streamk_items {
    const hc_u8 *w; /* the expert's weights */
    const hc_mma_params *p;
    hc_u16 *y;
    hc_u64 m;
    float *ws;
    unsigned *cnt, *last;
    unsigned pairs, tk, items, g, blk, t0, t1;
    __device__ __forceinline__ bool get(unsigned k, ws_item<ws_no_act> &it) const {
        const unsigned u = t0 / tk + k, u0 = u * tk;
        if (t1 <= t0 || u > (t1 - 1) / tk) return false;
        it = {w, *p, (hc_u64)(u % pairs) * 2, (hc_u64)(u / pairs) * TOKS,
              t0 > u0 ? t0 - u0 : 0, t1 < u0 + tk ? t1 - u0 : tk, m, y, ws_no_act{}};
        return true;
    }
    __device__ __forceinline__ void store(const ws_item<ws_no_act> &it, float *d, unsigned wgc,
                                          unsigned r0, unsigned c, hc_u8 *stg) const {
        if (it.k0 == 0 && it.k1 == tk) { /* whole */
            ws_store_item<TOKS, 1>(d, wgc, r0, c, stg, it.p, it.nb0, it.tok0, m, y, it.actf);
            return;
        }
        /* cut: the segment (slot 0 where the block's range begins with it), the arrival, and
         * the last block's sums in block order (d, its own segment stored, their register) */
        const unsigned u = (unsigned)(it.tok0 / TOKS) * pairs + (unsigned)(it.nb0 / 2),
                       u0 = u * tk, ctid = threadIdx.x - 128;
        streamk_store<TOKS, 256>(d, ws, blk, u0 + it.k0 == t0 ? 0u : 1u, ctid);
        if (streamk_arrive<256>(cnt, u, u0, tk, blk, ctid, items, g, *last)) {
            hc_u64 b0, b1;
            streamk_span(u0, tk, blk, items, g, b0, b1);
            streamk_sum<TOKS, 256>(d, ws, cnt, u, u0, b0, b1, ctid, items, g, y,
                                   (it.nb0 + wgc) * 64, r0, c, it.tok0, m, it.p.N);
        }
    }
};
template <int TOKS>
__device__ __forceinline__ void ws_gemm_streamk(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                                hc_u64 expert, hc_u64 m, hc_u16 *__restrict__ y,
                                                const hc_tmap &tmx, float *__restrict__ ws,
                                                unsigned *__restrict__ cnt) {
    __shared__ unsigned last;
    const unsigned pairs = (unsigned)((p.tiles_n + 1) / 2), tk = (unsigned)p.tiles_k;
    const unsigned items = pairs * (unsigned)((m + TOKS - 1) / TOKS) * tk, g = gridDim.x;
    const unsigned blk = blockIdx.x;
    ws_gemm_items<TOKS, 1, ws_no_act, 1>(
        ws_streamk_items<TOKS>{w + expert * p.tiles_n * p.tiles_k * HC_CHUNK_BYTES, &p, y, m, ws,
                               cnt, &last, pairs, tk, items, g, blk,
                               hc_streamk_start(blk, items, g),
                               hc_streamk_start(blk + 1, items, g)},
        tmx);
}
#endif

#endif
