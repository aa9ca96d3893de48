/* gpu_moe.c: hc_gpu_moe -- a mixture-of-experts block on the GPU, as the container's MoE record
 * describes it, over what gpu_moe_load.c prepared at load: per call, in chunks of at most the
 * workspace's slots, four to six launches on the caller's stream: route (device-side sort),
 * [expand], gate_up (grouped), [act: unless gate_up's epilogue applies it], down (grouped),
 * finalize (the top-k weighted sum). Nothing
 * goes back to the host, so a call is CUDA-graph capturable; the same inputs give the same
 * bits. The choice of kernel and tile is gpu_plan.c's (pure). docs/gpu.md, "Mixture of
 * experts". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gpu_moe.h"
#include "moe_args.h"

/* One grouped GEMM: projection pr over route r, activations x (ldx; rdiv as moe_args.h),
 * outputs at out (part q at out + q x ystride), or through the activation (moe_args.h's fuse
 * fields from fz: gate_up only) into the workspace's h. */
static hc_status grouped(hc_gpu_model *md, const moe_proj *pr, unsigned parts, uint32_t el,
                         const hc_gpu_moe_route *r, const hc_gpu_moe_launch *lp, const void *x,
                         uint64_t ldx, uint64_t rdiv, void *out, uint64_t ystride,
                         uint64_t rows, const hc_moe_args *fz, cudaStream_t s, hc_err *err) {
    struct hc_gpu_moe_ws *w = md->mws;
    hc_moe_args a = {0};
    if (fz) a = *fz;
    a.wtab = (const unsigned long long *)pr->wtab, a.sorted = (const int *)w->sorted;
    a.meta = (const int *)w->meta, a.tail = hc__gpu_moe_tail(w), a.gdiv = (const float *)pr->gdiv;
    a.el = el, a.ystride = ystride, a.rdiv = rdiv, a.parts = parts, a.tile = r->tile;
    hc_mma_params mp = pr->mp;
    mp.ldx = ldx;
    cudaKernel_t k = md->g->mods[pr->mod].gk[lp->kernel];
    const char *entry = hc__gpu_moe_variants(&(size_t){0})[lp->kernel].entry;
    if (lp->args == HC_GPU_ARGS_GEMV) {
        void *args[] = {&a, &mp, (void *)&x, &out, &w->part, &w->cnt};
        return hc__gpu_launch(k, lp->grid, lp->block, lp->smem, true, args, s, entry, err);
    }
    CUtensorMap tm, tms;
    HC_TRY(hc__gpu_tmap_rows(&tm, x, rows, mp.K, ldx, r->tile, "the sorted activations", err));
    if (lp->args == HC_GPU_ARGS_STREAMK) { /* + the stream-K segments and counters */
        void *args[] = {&a, &mp, &out, &tm, &w->part, &w->cnt};
        return hc__gpu_launch(k, lp->grid, lp->block, lp->smem, true, args, s, entry, err);
    }
    if (r->tile_small) { /* + the map of the small tiles' boxes (moe_gemm.cu moe_ws_two) */
        HC_TRY(hc__gpu_tmap_rows(&tms, x, rows, mp.K, ldx, r->tile_small, "the sorted activations",
                                 err));
        void *args[] = {&a, &mp, &out, &tm, &tms};
        return hc__gpu_launch(k, lp->grid, lp->block, lp->smem, false, args, s, entry, err);
    }
    void *args[] = {&a, &mp, &out, &tm};
    return hc__gpu_launch(k, lp->grid, lp->block, lp->smem, false, args, s, entry, err);
}

/* One chunk: m tokens from x (rows of H), their slots' ids and weights, into y. */
static hc_status chunk(hc_gpu_model *md, const hc_gpu_moe_layer *ml, const uint16_t *x,
                       uint64_t m, const int32_t *ids, const float *wts, uint64_t topk,
                       uint16_t *y, cudaStream_t s, hc_err *err) {
    hc_gpu *g = md->g;
    struct hc_gpu_moe_ws *w = md->mws;
    hc_gpu_caps dev = hc__gpu_caps_of(g);
    const uint64_t S = m * topk;
    int e0 = (int)ml->e0, *tail = hc__gpu_moe_tail(w); /* (launch arguments, by address) */
    hc_gpu_moe_wsneed need;
    hc_gpu_moe_route r;
    hc_gpu_moe_launch lu, ld;
    HC_TRY(hc__gpu_moe_need(&dev, ml, S, md->moe_forced, &need, &r, &lu, &ld, err));
    if (md->w8_lap) { /* (forced "moe-w8-lap": one block, every warp's descriptor ring laps) */
        if (lu.kernel == HC_GMK_W8) lu.grid[0] = 1;
        if (ld.kernel == HC_GMK_W8) ld.grid[0] = 1;
    }
    if (!hc__gpu_moe_ws_holds(w, &need)) /* (hc__gpu_moe_ws_fit sized it for a forced one) */
        return hc__fail(err, HC_UNSUPPORTED, "%llu slots with the %s kernel need more workspace "
                       "than the model's",
                       (unsigned long long)S, hc__gpu_moe_variants(&(size_t){0})[r.kernel].forced);
    const unsigned one[3] = {1, 1, 1};
    { /* route: one block, or count then place over r.sort_blocks (gpu_plan.c) */
        unsigned long long ss = S;
        unsigned el = ml->El, tt = r.tile, ts = r.tile_small;
        const size_t smem = HC_MOE_ROUTE_SMEM_BYTES((size_t)ml->El);
        if (r.sort_blocks <= 1) {
            void *args[] = {(void *)&ids, &ss, &e0, &el, &tt, &ts, &w->sorted, &w->inv, &w->meta,
                            &tail};
            HC_TRY(hc__gpu_launch(g->moe_route, one, HC_MOE_ROUTE_THREADS, smem, true, args, s,
                                 "hc_moe_route", err));
        } else {
            const unsigned grid[3] = {r.sort_blocks, 1, 1};
            /* (the buffer's last word: every layer's, whichever its El -- a ticket after its own
             * table would sit inside a larger layer's) */
            unsigned *ticket = (unsigned *)w->rtab + (w->rtab_bytes / 4 - 1);
            void *cargs[] = {(void *)&ids, &ss, &e0, &el, &tt, &ts, &w->sorted, &w->meta,
                             &tail, &w->rtab, &ticket};
            HC_TRY(hc__gpu_launch(g->moe_route_count, grid, HC_MOE_ROUTE_THREADS, smem, true, cargs,
                                 s, "hc_moe_route_count", err));
            void *pargs[] = {(void *)&ids, &ss, &e0, &el, &w->rtab, &w->sorted, &w->inv};
            HC_TRY(hc__gpu_launch(g->moe_route_place, grid, HC_MOE_ROUTE_THREADS, smem, true, pargs,
                                 s, "hc_moe_route_place", err));
        }
    }
    if (HC_GPU_MOE_STOP(md, 1)) return HC_OK;
    const uint64_t rows = need.rows;
    /* x's rows as whole 16-byte pieces with no act-order permutation: what gate_up needs to read
     * them in place, and the expand its four-row form */
    const bool whole = !ml->up.ptab && ml->H % 8 == 0 && (uintptr_t)x % 16 == 0;
    /* gate_up: x read in place by slot where the small-M kernels can, else expanded rows */
    const bool in_place = lu.args == HC_GPU_ARGS_GEMV && whole;
    const void *xin = x;
    uint64_t ldx = ml->H, rdiv = topk;
    if (!in_place) {
        /* (the expand: 256 / HC_MOE_EXPAND_ROW_THREADS rows a block; with HC_MOE_EXPAND_ROWS4,
         * where the kernel takes that form, a row's 16-byte pieces in blocks of 256 on grid y
         * and four rows a block on x, one wave of eight resident blocks an SM at most; a row too
         * wide for the planes keeps the old grid and form) */
        const uint64_t erows = hc__cdiv_u64(rows, 256 / HC_MOE_EXPAND_ROW_THREADS);
        unsigned egrid[3] = {(unsigned)(erows < 8192 ? erows : 8192), 1, 1};
        if (HC_MOE_EXPAND_ROWS4 && whole && ml->ldx % 8 == 0) {
            const uint64_t ey = hc__cdiv_u64(hc__cdiv_u64(ml->ldx, 8), 256);
            /* (v103, config.h HC_MOE_EXPAND_TOKENS: by token -- m of them -- and the pads in
             * groups of 32 rows) */
            uint64_t ex = HC_MOE_EXPAND_TOKENS ? (m > rows / 32 ? m : rows / 32) : hc__cdiv_u64(rows, 4);
            const uint64_t wave = dev.sms * 8 / ey;
            if (ex > wave) ex = wave;
            if (ey <= 65535) egrid[0] = (unsigned)(ex ? ex : 1), egrid[1] = (unsigned)ey;
        }
        unsigned long long ldxx = ml->H, K = ml->H, tk = topk, ldo = ml->ldx, mt = m;
        void *args[] = {(void *)&x, &ldxx, &K, &w->sorted, (void *)&tail, (void *)&ids, &e0, &tk,
                        (void *)&ml->up.ptab, &w->xs, &ldo, &w->inv, &mt};
        HC_TRY(hc__gpu_launch(g->moe_expand, egrid, 256, 0, true, args, s, "hc_moe_expand", err));
        xin = w->xs, ldx = ml->ldx, rdiv = 0;
    }
    if (HC_GPU_MOE_STOP(md, 2)) return HC_OK;
    const uint64_t ystride = rows * ml->up.mp.N;
    /* the activation in gate_up's epilogue where the plan allows (unless a test forces
     * "moe-act-apart"), straight into h: then no act launch. It writes h's rows of its
     * tiles, pads as zeros, and columns below I only (hc_moe_act also zeroes [I, ldh)): enough
     * because down then runs the same warp-specialised kernel, whose tensor map over h has K =
     * I (zeros past it) -- a down kernel reading h's columns past I would need them written */
    hc_moe_args fz = {0};
    uint64_t ust = 0;
    if (!md->act_apart)
        fz.fuse = hc__gpu_moe_fuse_plan(&lu, ml->parts, ml->order == HC_MOE_INTERLEAVED, ml->I,
                                        ml->parts == 2 && ml->up.gdiv, ml->down.ptab != NULL, &ust);
    if (fz.fuse) {
        fz.ustripes = ust;
        fz.act = ml->act == HC_MOE_SWIGLU_CLAMP, fz.alpha = ml->alpha, fz.limit = ml->limit;
        fz.bias = (const float *)ml->bias_gu, fz.h = (unsigned short *)w->h;
        fz.ldh = ml->ldh, fz.I = ml->I;
    }
    HC_TRY(grouped(md, &ml->up, ml->parts, ml->El, &r, &lu, xin, ldx, rdiv, w->g, ystride, rows,
                   fz.fuse ? &fz : NULL, s, err));
    if (HC_GPU_MOE_STOP(md, 3)) return HC_OK;
    if (!fz.fuse) { /* act */
        const uint16_t *gp = w->g, *up;
        unsigned long long ldg, cs, I = ml->I, ldh = ml->ldh;
        if (ml->parts == 2) up = gp + ystride, ldg = ml->I, cs = 1;
        else if (ml->order == HC_MOE_INTERLEAVED) up = gp + 1, ldg = 2 * ml->I, cs = 2;
        else up = gp + ml->I, ldg = 2 * ml->I, cs = 1;
        unsigned act = ml->act == HC_MOE_SWIGLU_CLAMP;
        float alpha = ml->alpha, limit = ml->limit;
        void *args[] = {(void *)&gp, (void *)&up, &ldg, &cs, &I, &w->sorted, (void *)&tail,
                        (void *)&ids, &e0, (void *)&ml->bias_gu, (void *)&ml->down.ptab, &act,
                        &alpha, &limit, &w->h, &ldh};
        /* (a thread an 8-column piece of a row: h's rows x pieces over 256-thread blocks,
         * grid-stride past 8192 blocks; rows x ldh is h's size, a device buffer's) */
        const uint64_t ab = (rows * ((ldh + 7) / 8) + 255) / 256;
        const unsigned agrid[3] = {(unsigned)(ab < 8192 ? (ab ? ab : 1) : 8192), 1, 1};
        HC_TRY(hc__gpu_launch(g->moe_act, agrid, 256, 0, true, args, s, "hc_moe_act", err));
    }
    if (HC_GPU_MOE_STOP(md, 4)) return HC_OK;
    /* down: into xs's memory, rows of H */
    HC_TRY(grouped(md, &ml->down, 1, ml->El, &r, &ld, w->h, ml->ldh, 0, w->xs, 0, rows, NULL, s,
                   err));
    if (HC_GPU_MOE_STOP(md, 5)) return HC_OK;
    { /* finalize */
        unsigned long long H = ml->H, tk = topk, mm = m;
        /* column blocks of HC_MOE_FIN_THREADS x 8 x tokens (the kernel strides over both) */
        const uint64_t cb = hc__cdiv_u64(ml->H, HC_MOE_FIN_THREADS * 8ull);
        const unsigned fgrid[3] = {(unsigned)(cb < 65535 ? cb : 65535),
                                   (unsigned)(m < 65535 ? m : 65535), 1};
        void *args[] = {&w->xs, &H, &w->inv, (void *)&ids, &tk, &e0, (void *)&wts,
                        (void *)&ml->bias_d, &mm, &y};
        HC_TRY(hc__gpu_launch(g->moe_finalize, fgrid, HC_MOE_FIN_THREADS, 12 * topk, true, args, s,
                             "hc_moe_finalize", err));
    }
    return HC_OK;
}

hc_status hc_gpu_moe(hc_gpu_model *md, const char *layer, const void *x, uint64_t tokens,
                     const int32_t *ids, const float *weights, uint64_t topk, void *y,
                     void *stream, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    hc_gpu_moe_layer key = {.name = (char *)layer};
    const hc_gpu_moe_layer *ml =
        md->nmoe ? bsearch(&key, md->moe, md->nmoe, sizeof *md->moe, hc__gpu_moe_cmp) : NULL;
    if (!ml) {
        st = hc__fail(&err, HC_NOTFOUND, "'%s' is not an MoE layer of this GPU model (the "
                     "container's MoE record%s)", layer,
                     md->nmoe ? "" : " is empty: convert the checkpoint again to write it");
        goto out;
    }
    if (ml->why[0]) {
        st = hc__fail(&err, HC_UNSUPPORTED, "MoE layer '%s': %s", layer, ml->why);
        goto out;
    }
    if (topk < 1 || topk > MOE_TOPK_MAX || topk > md->mws->slots) {
        st = hc__fail(&err, HC_INVALID, "MoE layer '%s': top-k %llu is not in [1, %u]", layer,
                     (unsigned long long)topk, MOE_TOPK_MAX);
        goto out;
    }
    if (!tokens) goto out;
    if (!x || !ids || !weights || !y) {
        st = hc__fail(&err, HC_INVALID, "MoE layer '%s': a null input or output pointer", layer);
        goto out;
    }
    if (tokens > (1ull << 40) / topk) {
        st = hc__fail(&err, HC_INVALID, "MoE layer '%s': %llu tokens is too many", layer,
                     (unsigned long long)tokens);
        goto out;
    }
    pthread_mutex_lock(&md->mu);
    const uint64_t mc = md->mws->slots / topk;
    for (uint64_t t0 = 0; t0 < tokens && !st; t0 += mc) {
        uint64_t m = tokens - t0 < mc ? tokens - t0 : mc;
        st = chunk(md, ml, (const uint16_t *)x + t0 * ml->H, m, ids + t0 * topk,
                   weights + t0 * topk, topk, (uint16_t *)y + t0 * ml->H, (cudaStream_t)stream,
                   &err);
    }
    pthread_mutex_unlock(&md->mu);
    if (st) hc__err_prefix(&err, "MoE layer '%s'", layer);
out:
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

hc_status hc_gpu_moe_shape(const hc_gpu_model *md, const char *layer, uint64_t *h, uint64_t *i,
                           uint32_t *experts) {
    hc_gpu_moe_layer key = {.name = (char *)layer};
    const hc_gpu_moe_layer *ml =
        md->nmoe ? bsearch(&key, md->moe, md->nmoe, sizeof *md->moe, hc__gpu_moe_cmp) : NULL;
    if (!ml) return HC_NOTFOUND;
    if (h) *h = ml->H;
    if (i) *i = ml->I;
    if (experts) *experts = ml->E;
    return ml->why[0] ? HC_UNSUPPORTED : HC_OK;
}

hc_status hc_gpu_moe_host(hc_gpu_model *md, const char *layer, const float *x, uint64_t tokens,
                          const int32_t *ids, const float *weights, uint64_t topk, float *y,
                          char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *dx = NULL, *dy = NULL, *di = NULL, *dw = NULL;
    uint16_t *hx = NULL;
    uint64_t H = 0, xe, se;
    st = hc_gpu_moe_shape(md, layer, &H, NULL, NULL);
    if (st == HC_NOTFOUND || st == HC_UNSUPPORTED) /* (its message) */
        return hc_gpu_moe(md, layer, NULL, 1, NULL, NULL, 1, NULL, NULL, msg, msg_len);
    if (!tokens) return HC_OK;
    if (!hc__mul_u64(tokens, H, &xe) || !hc__mul_u64(tokens, topk, &se) || xe > (1ull << 36) ||
        se > (1ull << 36)) {
        st = hc__fail(&err, HC_INVALID, "MoE layer '%s': %llu tokens is too many", layer,
                     (unsigned long long)tokens);
        goto out;
    }
    if (!(hx = malloc(xe * 2 + 2))) {
        st = hc__fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < xe; i++) hx[i] = hc__bf16_rne(x[i]);
    CU(hc__cuda.malloc_(&dx, xe * 2 + 16), "cudaMalloc(x)");
    CU(hc__cuda.malloc_(&dy, xe * 2 + 16), "cudaMalloc(y)");
    CU(hc__cuda.malloc_(&di, se * 4 + 16), "cudaMalloc(ids)");
    CU(hc__cuda.malloc_(&dw, se * 4 + 16), "cudaMalloc(weights)");
    CU(hc__cuda.memcpy_(dx, hx, xe * 2, cudaMemcpyHostToDevice), "upload X");
    CU(hc__cuda.memcpy_(di, ids, se * 4, cudaMemcpyHostToDevice), "upload ids");
    CU(hc__cuda.memcpy_(dw, weights, se * 4, cudaMemcpyHostToDevice), "upload weights");
    CU(hc__cuda.memset_(dy, 0xFF, xe * 2), "poison Y");
    st = hc_gpu_moe(md, layer, dx, tokens, di, dw, topk, dy, NULL, err.msg, sizeof err.msg);
    if (st) goto out;
    CU(hc__cuda.sync(), layer);
    CU(hc__cuda.memcpy_(hx, dy, xe * 2, cudaMemcpyDeviceToHost), "download Y");
    hc__f32_of_bf16(y, hx, xe);
out:
    if (hc__cuda.loaded)
        hc__cuda.free_(dx), hc__cuda.free_(dy), hc__cuda.free_(di), hc__cuda.free_(dw);
    free(hx);
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}
