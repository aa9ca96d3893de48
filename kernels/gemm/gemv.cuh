// gemv.cuh: the small-M family (hc_mma_gemv_t1, _t8, _t16: M = 1, <= 8, <= 16), memory bound.
// A block takes one 64-row stripe (t16 of 4-bit layouts two, config.h HC_GEMV_STRIPES: a stage
// then holds both stripes' chunks of a K tile beside one activation tile, more weight bytes in
// flight for the same shared memory); each of its four warps streams whole tile chunks through its
// own shared-memory pipeline (cp.async, HC_GEMV_STAGES deep, config.h) and accumulates exact
// codes per scale group on mma.sync, applying each row's scale in float32 once per group. K is
// split over warps and over blocks (gridDim.y); epilogue/splitk.cuh adds the parts.
#ifndef HC_K_GEMM_GEMV_CUH
#define HC_K_GEMM_GEMV_CUH

#include "codec/frag.cuh"
#include "epilogue/splitk.cuh"
#include "memory/ptx.cuh"
#include "mma/mma_sync.cuh"

/* HC_GEMV_DIAG (memory/ptx.cuh), measurements only: 1, the kernels only copy (their results are
 * wrong); 2, they compute as usual and record per block its SM and the global timer at entry,
 * first tile, loop end and outputs (5 words after the split's partial sums in the workspace;
 * hc_gpu_diag_timeline) */

/* One tile of a warp's pipeline into its sums: the stage ch (the tile's chunk, then its
 * activations [XR][64] swizzled; tokens XR..TOK-1 read the zero row zrow), acc the float32
 * sums scaled per group, part a group's exact sums, zero again at the tile's end (a group is at
 * most a tile: HC_LGS <= 2), lane: the warp's lane. LB: load the activations' B fragments (a
 * second stripe's chunk of the same K tile reuses them). */
template <int MT, int XR, bool LB = true>
__device__ __forceinline__ void gemv_tile(hc_u8 *ch, const hc_u8 *zrow, const hc_mma_params &p,
                                          unsigned lane, unsigned (&b)[4][MT][2],
                                          float (&acc)[4][MT][4], float (&part)[MT][4]) {
    const unsigned g = lane >> 2, gmask = (1u << HC_LGS) - 1;
#if HC_CODEC == HC_CODEC_MXFOLD && HC_GEMV_MXS
    { /* lane L: rows 2L and 2L + 1, each record (B, d0, d1, 0) -> (bf16 s0, bf16 s1) */
        uint2 *rw = (uint2 *)(ch + HC_CODE_BYTES + lane * 8);
        const uint2 rc = *rw;
        *rw = make_uint2(mxfold_bf16(rc.x, 0) | mxfold_bf16(rc.x, 1) << 16,
                         mxfold_bf16(rc.y, 0) | mxfold_bf16(rc.y, 1) << 16);
        __syncwarp();
    }
#endif
    const hc_u8 *xs = ch + (hc_u64)HC_CHUNK_BYTES;
    /* B fragments: ldmatrix x4 = 8 tokens x 32 columns (two k16 steps) */
#pragma unroll
    for (int mt = 0; mt < (LB ? MT : 0); mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            unsigned t = mt * 8 + (lane & 7), pc = h * 4 + (lane >> 3);
            unsigned addr = smem_addr(t < XR ? xs + t * 128 + ((pc ^ (t & 7)) * 16)
                                             : zrow + pc * 16);
            ldmatrix_x4(addr, b[2 * h][mt][0], b[2 * h][mt][1], b[2 * h + 1][mt][0],
                        b[2 * h + 1][mt][1]);
        }
#if HC_GEMV_DIAG == 1 /* copy only: the copies and one read, no arithmetic */
    acc[0][0][0] += (float)(*(const unsigned *)(ch + lane * 16) & 1u);
    return;
#endif
#if HC_CODEC == HC_CODEC_INT4 && HC_ZP == 0
    /* the zero point folded (kernels of HC_GEMV_ZFOLD_MT token tiles or more): each group's sums
     * start from - (128 + z) x the activations' sums over the group (the same for every row),
     * the codes enter as 128 + u */
    constexpr bool ZF = MT >= HC_GEMV_ZFOLD_MT;
    constexpr int NG = 4 >> HC_LGS; /* groups a tile */
    float corr[NG][MT][4];
    if constexpr (ZF) {
        const unsigned zc = zero_operand(p.zero_const), az[4] = {zc, zc, zc, zc};
#pragma unroll
        for (int q = 0; q < NG; q++)
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int e = 0; e < 4; e++) corr[q][mt][e] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < 4; ks++)
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                mma_bf16(corr[ks >> HC_LGS][mt], az, b[ks][mt][0], b[ks][mt][1]);
    }
#else
    constexpr bool ZF = false;
#endif
#pragma unroll
    for (int rb = 0; rb < 4; rb++) {
        rb_codes v;
        load_codes(ch, rb, lane, v);
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            const unsigned j = (unsigned)ks >> HC_LGS;
            unsigned a[4];
            if constexpr (ZF) {
#if HC_CODEC == HC_CODEC_INT4 && HC_ZP == 0
                const frag_words f = words_of(v, ks);
#pragma unroll
                for (int t = 0; t < 4; t++) a[t] = biased_pair(f.w0, t);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) /* a group's first step starts from corr */
                    if ((ks & gmask) == 0)
                        mma_bf16_from(part[mt], a, b[ks][mt][0], b[ks][mt][1], corr[j][mt]);
                    else
                        mma_bf16(part[mt], a, b[ks][mt][0], b[ks][mt][1]);
#endif
            } else {
                exact_frag(ch, p, rb * 16 + g, j, words_of(v, ks), a);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) mma_bf16(part[mt], a, b[ks][mt][0], b[ks][mt][1]);
            }
            if ((((unsigned)ks + 1) & gmask) == 0) { /* end of a scale group */
                float s0 = gemv_scale(ch, p, rb * 16 + g, j);
                float s1 = gemv_scale(ch, p, rb * 16 + g + 8, j);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    acc[rb][mt][0] = fmaf(part[mt][0], s0, acc[rb][mt][0]);
                    acc[rb][mt][1] = fmaf(part[mt][1], s0, acc[rb][mt][1]);
                    acc[rb][mt][2] = fmaf(part[mt][2], s1, acc[rb][mt][2]);
                    acc[rb][mt][3] = fmaf(part[mt][3], s1, acc[rb][mt][3]);
                    if (!ZF)
#pragma unroll
                        for (int e = 0; e < 4; e++) part[mt][e] = 0.0f;
                }
            }
        }
    }
}

/* A stage of a warp's pipeline: the tile chunk, then the tile's activations [XR][64] bf16
 * (the 128-byte rows swizzled by 16-byte pieces: piece q of token t at t * 128 + (q ^ t % 8) *
 * 16, so ldmatrix reads them without bank conflicts); NS stages. Rows of tokens >= m are zeroed
 * once; tokens XR..TOK-1 (XR < TOK: the M = 1 kernel, whose stages hold one activation row
 * and so fit more of them) read a zero row after the warp's stages. With HC_GEMV_PDL the
 * kernel starts under programmatic dependent launch: the weight copies of the first stages are
 * issued before griddepcontrol.wait (weights do not depend on the kernel before; activations,
 * outputs and the workspace are touched only after it). SP: the stripes the block takes, nb..
 * nb + SP - 1 (2: a warp's stage holds the K tile's chunk of each, last stripe first, then
 * one activation tile that both use -- more weight bytes a stage; a stripe past tiles_n is
 * copied from the first and its sums dropped). */
template <int TOK, int XR, int NS, bool PRE = (HC_GEMV_PDL != 0), int SP = 1>
__device__ __forceinline__ void gemv_body(const hc_u8 *__restrict__ w, const hc_mma_params &p,
                                          hc_u64 expert, const hc_u16 *__restrict__ x, hc_u64 m,
                                          hc_u16 *__restrict__ y, float *__restrict__ ws,
                                          unsigned *__restrict__ cnt, hc_u64 nb,
                                          const int *__restrict__ rows = nullptr,
                                          hc_u64 rdiv = 1) {
    constexpr int MT = TOK / 8;
    hc_u8 *smem = hc_smem;
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned g = lane >> 2, c = lane & 3;
    const hc_u64 cb = HC_CHUNK_BYTES, xb = SP * cb, sb = xb + XR * 128;
    constexpr unsigned ZR = XR < TOK ? 128 : 0; /* the zero row */
    const hc_u8 *stripe = w + (expert * p.tiles_n + nb) * p.tiles_k * cb;
    const unsigned sp_live = SP == 1 || p.tiles_n - nb >= (hc_u64)SP ? SP : (unsigned)(p.tiles_n - nb);
    /* from a chunk of the first stripe to the same K tile's of the next */
    const hc_u64 sgap = (hc_u64)p.tiles_k * cb;
    hc_u8 *mine = smem + (hc_u64)warp * (NS * sb + ZR), *zrow = mine + NS * sb;
    const hc_u64 step = 4ull * gridDim.y, kb0 = blockIdx.y * 4ull + warp;
    const long nt = kb0 < p.tiles_k ? (long)((p.tiles_k - kb0 + step - 1) / step) : 0;
    const unsigned live = (unsigned)(m < XR ? m : XR), xpieces = live * 8;
#if HC_GEMV_DIAG == 2
    unsigned long long tl[3] = {threadIdx.x == 0 ? gtimer() : 0ull, 0ull, 0ull};
#endif
    /* activation rows of absent tokens stay zero in every stage */
    for (unsigned q = lane; q < NS * (XR - live) * 8; q += 32) {
        unsigned st = q / ((XR - live) * 8), r = q % ((XR - live) * 8);
        *(uint4 *)(mine + st * sb + xb + (live + r / 8) * 128 + (r % 8) * 16) = make_uint4(0, 0, 0, 0);
    }

    float acc[SP][4][MT][4], part[MT][4];
#pragma unroll
    for (int s = 0; s < SP; s++)
#pragma unroll
        for (int rb = 0; rb < 4; rb++)
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[s][rb][mt][e] = 0.0f;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int e = 0; e < 4; e++) part[mt][e] = 0.0f;

    auto wait = [&](long) {
        cp_wait<NS - 1>();
        __syncwarp();
    };
    /* this lane's pieces of every tile: chunk bytes lane * 16 + 512 q, and activation pieces
     * lane + 32 h (token t, 16-byte piece pc); the copies walk running pointers, so a tile's
     * issue is its cp.async instructions and a few adds */
    if (ZR && lane < 8) *(uint4 *)(zrow + lane * 16) = make_uint4(0, 0, 0, 0);
    constexpr unsigned XH = (XR * 8 + 31) / 32;
    const unsigned mine_s = smem_addr(mine);
    const hc_u8 *csrc = stripe + kb0 * cb + lane * 16;
    const hc_u64 src_step = step * cb, kstep = step * 64;
    const unsigned nq = (unsigned)((cb + 511) / 512);
    const bool qlast = lane * 16 + (nq - 1) * 512 < cb;
    const hc_u16 *xrow[XH];
    unsigned xoff[XH];
    hc_u64 xend[XH]; /* the piece exists while the tile's first column is below this */
    bool xlive[XH];
#pragma unroll
    for (unsigned h = 0; h < XH; h++) {
        unsigned q = lane + h * 32, t = q >> 3, pc = q & 7;
        xlive[h] = q < xpieces;
        /* token t's row: t, or with rows (grouped MoE) its slot's token rows[t] / rdiv */
        const hc_u64 xr = rows ? (xlive[h] ? (hc_u64)rows[t] / rdiv : 0) : t;
        xrow[h] = x + xr * p.ldx + pc * 8;
        xend[h] = p.K > pc * 8 ? p.K - pc * 8 : 0;
        xoff[h] = (unsigned)xb + t * 128 + ((pc ^ (t & 7)) * 16);
    }
    hc_u64 kcol = kb0 * 64; /* first column of the next tile to issue */
    unsigned snext = 0;     /* its stage */
    /* a tile's copies: its chunk (into stage st, from csrc) and its activations (column kc) */
    auto issue_w = [&](unsigned st) {
#pragma unroll
        for (int s = 0; s < SP; s++) { /* stripe s's chunk at (SP - 1 - s) x cb */
            const unsigned dst = mine_s + st * (unsigned)sb + (unsigned)((SP - 1 - s) * cb);
            const hc_u8 *src = csrc + ((unsigned)s < sp_live ? s * sgap : 0);
#pragma unroll
            for (unsigned q = 0; q < (HC_CHUNK_BYTES + 511) / 512; q++)
                cp16_if(dst + lane * 16 + q * 512, src + q * 512, 16, q + 1 < nq || qlast);
        }
        csrc += src_step;
    };
    auto issue_x = [&](unsigned st, hc_u64 kc) {
        const unsigned dst = mine_s + st * (unsigned)sb;
#pragma unroll
        for (unsigned h = 0; h < XH; h++) {
            bool ok = kc < xend[h];
            cp16_if(dst + xoff[h], ok ? xrow[h] + kc : x, ok ? 16 : 0, xlive[h]);
        }
    };
    auto issue = [&]() {
        issue_w(snext);
        issue_x(snext, kcol);
        kcol += kstep;
        snext = snext + 1 == NS ? 0 : snext + 1;
    };
    __syncwarp();
    if (PRE) {
        /* the first stages' weights before the previous kernel is done (they go into the
         * first commit group with stage 0's activations; later groups hold activations only) */
#pragma unroll
        for (int s = 0; s < NS - 1; s++)
            if (s < nt) issue_w((unsigned)s);
        HC_PDL_RELEASE();
        HC_PDL_WAIT();
#pragma unroll
        for (int s = 0; s < NS - 1; s++) {
            if (s < nt) issue_x((unsigned)s, kcol), kcol += kstep, snext++;
            cp_commit();
        }
    } else { /* (the caller has waited: grouped MoE reads its routing first) */
#pragma unroll
        for (int s = 0; s < NS - 1; s++) {
            if (s < nt) issue();
            cp_commit();
        }
    }
    unsigned scur = 0; /* tile i's stage, i % NS without a division */
    for (long i = 0; i < nt; i++, scur = scur + 1 == NS ? 0 : scur + 1) {
        __syncwarp(); /* every lane is done with the stage about to be refilled */
        if (i + NS - 1 < nt) issue();
        cp_commit();
        unsigned b[4][MT][2];
        wait(i);
#if HC_GEMV_DIAG == 2
        if (i == 0 && threadIdx.x == 0) tl[1] = gtimer();
#endif
        hc_u8 *stage = mine + scur * (unsigned)sb;
        gemv_tile<MT, XR>(stage + (SP - 1) * cb, zrow, p, lane, b, acc[0], part);
#pragma unroll
        for (int s = 1; s < SP; s++) /* (the activations' fragments in b already) */
            gemv_tile<MT, XR, false>(stage + (SP - 1 - s) * cb, zrow, p, lane, b, acc[s], part);
    }
#if HC_GEMV_DIAG == 2
    if (threadIdx.x == 0) tl[2] = gtimer();
#endif
    cp_wait<0>();
    __syncthreads(); /* the pipelines' memory becomes the reduction buffer */
    float *red = (float *)smem; /* [stripe][warp][row][token] */
#pragma unroll
    for (int s = 0; s < SP; s++)
#pragma unroll
        for (int rb = 0; rb < 4; rb++)
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    unsigned row = rb * 16 + g + (e >= 2 ? 8 : 0), tok = mt * 8 + 2 * c + (e & 1);
                    red[((s * 4 + warp) * 64 + row) * TOK + tok] = acc[s][rb][mt][e];
                }
    for (unsigned s = 0; s < sp_live; s++)
        gemv_block_sums<TOK>(red + s * 4 * 64 * TOK, nb + s, m, p, y, ws);
#if HC_GEMV_DIAG == 2
    if (threadIdx.x == 0)
        diag_timeline((unsigned long long *)(ws + (hc_u64)gridDim.y * p.tiles_n * 64 * TOK) +
                          ((hc_u64)blockIdx.y * gridDim.x + blockIdx.x) * 5,
                      tl[0], tl[1], tl[2]);
#endif
    if (gridDim.y <= 1) return; /* no split: gemv_block_sums wrote y */
    __shared__ unsigned last;
    float v[8];
    for (unsigned s = 0; s < sp_live; s++) splitk_add<TOK>(ws, cnt, nb + s, m, p, y, last, v);
}

#endif
