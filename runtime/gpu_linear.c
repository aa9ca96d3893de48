/* gpu_linear.c: hc_gpu_linear -- the chooser's decision (gpu_plan.h: kernel, grid, block,
 * shared memory, K split) for the layer, M and device, then its launch: activations gathered
 * first where the kernels cannot read them in place, the split's workspace grown, a tensor map
 * of X encoded for the TMA kernels. hc_gpu_linear_host wraps it over host float32 buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gpu_int.h"

/* Grows a device buffer (contents lost) to at least `want` bytes; zeroed when `zero`. */
static hc_status grow(void **buf, size_t *have, size_t want, bool zero, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    if (*have >= want) return HC_OK;
    CU(hc__cuda.sync(), "synchronise before growing a workspace");
    hc__cuda.free_(*buf);
    *buf = NULL, *have = 0;
    CU(hc__cuda.malloc_(buf, want), "cudaMalloc(workspace)");
    if (zero) { /* (on the legacy stream: done before a kernel on any stream reads it) */
        CU(hc__cuda.memset_(*buf, 0, want), "cudaMemset(workspace)");
        CU(hc__cuda.sync(), "synchronise after clearing a workspace");
    }
    *have = want;
out:
    if (st) *perr = err;
    return st;
}

hc_status hc__gpu_launch(cudaKernel_t k, const unsigned grid3[3], unsigned block1, size_t smem,
                        bool pdl, void **args, cudaStream_t s, const char *entry, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    dim3 grid = {grid3[0], grid3[1], grid3[2] ? grid3[2] : 1}, block = {block1, 1, 1};
    char what[64];
    if (pdl && hc__cuda.launch_ex) {
        cudaLaunchAttribute at;
        memset(&at, 0, sizeof at);
        at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at.val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {0};
        cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = s;
        cfg.attrs = &at, cfg.numAttrs = 1;
        snprintf(what, sizeof what, "launch %s (PDL)", entry);
        CU(hc__cuda.launch_ex(&cfg, (const void *)k, args), what);
    } else {
        snprintf(what, sizeof what, "launch %s", entry);
        CU(hc__cuda.launch((const void *)k, grid, block, args, smem, s), what);
    }
out:
    if (st) *perr = err;
    return st;
}

/* Launches kernel k as ch says: under programmatic dependent launch where the family asks for
 * it (the small-M and skinny kernels) and the runtime has cudaLaunchKernelExC, so that this
 * kernel's blocks start and fetch their first weight tiles while the kernel before it finishes
 * (the kernel waits for it -- hc_gather_x included -- before reading activations or writing
 * anything). */
static hc_status launch(cudaKernel_t k, const hc_gpu_choice *ch, void **args, cudaStream_t s,
                        hc_err *perr) {
    const unsigned grid[3] = {ch->grid[0], ch->grid[1], 1};
    /* (messages name the small-M variants by their common name, as they always have) */
    const char *entry = ch->family->args == HC_GPU_ARGS_GEMV ? "hc_mma_gemv" : ch->variant->entry;
    return hc__gpu_launch(k, grid, ch->block, ch->smem, ch->family->pdl, args, s, entry, perr);
}

hc_status hc__gpu_tmap_rows(CUtensorMap *tm, const void *base, uint64_t rows, uint64_t k,
                           uint64_t ld, unsigned toks, const char *what, hc_err *err) {
    cuuint64_t dims[2] = {k, rows}, strides[1] = {ld * 2};
    cuuint32_t box[2] = {64, HC_WS_BOX(toks)}, estr[2] = {1, 1}; /* (a tile past 256: two boxes) */
    CUresult r = hc__cuda.tmap_encode(tm, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)base, dims,
                                     strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? HC_OK
                             : hc__fail(err, HC_IO, "cuTensorMapEncodeTiled of %s [%llu x %llu] "
                                       "failed (CUresult %d)", what, (unsigned long long)rows,
                                       (unsigned long long)k, (int)r);
}

hc_status hc_gpu_linear(hc_gpu_model *md, const char *name, uint32_t expert, const void *x,
                        uint64_t m, uint64_t k, void *y, uint64_t n, void *stream, char *msg,
                        size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    bool locked = false;
    hc_gpu *g = md->g;
    hc_gpu_layer key = {.name = (char *)name};
    hc_gpu_layer *L = md->n ? bsearch(&key, md->l, md->n, sizeof *md->l, hc__gpu_layer_cmp) : NULL;
    if (!L) {
        st = hc__fail(&err, HC_NOTFOUND, "'%s' is not a layer of this GPU model", name);
        goto out;
    }
    const hc_tile_params *p = &L->p;
    if (expert < L->e0 || (L->e0 && expert - L->e0 >= p->E)) { /* (a fused tensor's slice) */
        st = hc__fail(&err, HC_INVALID, "'%s': expert %u is not on this GPU model (it holds "
                     "experts %u..%llu)", name, expert, L->e0, (unsigned long long)(L->e0 + p->E - 1));
        goto out;
    }
    expert -= L->e0;
    st = hc__tile_layer_call(name, p, k, n, expert, &err);
    if (st) goto out;
    if (m == 0) goto out;
    if (!x || !y) {
        st = hc__fail(&err, HC_INVALID, "'%s': null activation or output pointer", name);
        goto out;
    }
    pthread_mutex_lock(&md->mu);
    locked = true;
    hc_gpu_caps dev = hc__gpu_caps_of(g);
    hc_gpu_choice ch;
    st = hc__gpu_choose(&dev, &L->shape, m, md->forced, &ch, &err);
    if (st) {
        hc__err_prefix(&err, "'%s'", name);
        goto out;
    }
    cudaStream_t s = (cudaStream_t)stream;
    hc_mma_params mp = L->mp;
    /* activations the kernels cannot read in place go through hc_gather_x: act-order
     * permutations, and shapes or addresses off the kernels' 16-byte copies of 8 columns */
    const void *xin = x;
    if (L->perm || k % 8 || (uintptr_t)x % 16) {
        uint64_t xb;
        if (!hc__mul_u64(m, p->Kp, &xb) || !hc__mul_u64(xb, 2, &xb)) {
            st = hc__fail(&err, HC_INVALID, "'%s': M=%llu overflows the activation buffer", name,
                         (unsigned long long)m);
            goto out;
        }
        st = grow(&md->xg, &md->xg_bytes, xb, false, &err);
        if (st) goto out;
        unsigned long long mm = m, kk = k, ld = p->Kp;
        void *args[] = {(void *)&x, &mm, &kk, &L->perm, &md->xg, &ld};
        uint64_t blocks = (m * p->Kp + 255) / 256;
        dim3 grid = {(unsigned)(blocks < 4096 ? blocks : 4096), 1, 1}, block = {256, 1, 1};
        CU(hc__cuda.launch((const void *)g->gather, grid, block, args, 0, s), "launch hc_gather_x");
        xin = md->xg;
        mp.ldx = p->Kp;
    }
    unsigned long long e = expert, mm = m;
    cudaKernel_t kern = g->mods[L->mod].k[ch.kernel];
    if (ch.family->args == HC_GPU_ARGS_GEMV) {
        /* the K split's partial sums and per-stripe counters (bench builds: and a timeline) */
        size_t ws = ch.ksplit > 1 ? ch.part_bytes : 0;
#ifdef HC_BENCH_DIAG
        ws = hc__gpu_diag_workspace(md, &ch, ws);
#endif
        if (ws) st = grow(&md->ws, &md->ws_bytes, ws, false, &err);
        if (!st && ch.cnt_bytes) st = grow(&md->cnt, &md->cnt_n, ch.cnt_bytes, true, &err);
        if (st) goto out;
        void *args[] = {&L->w, &mp, &e, (void *)&xin, &mm, &y, &md->ws, &md->cnt};
        st = launch(kern, &ch, args, s, &err);
        goto out;
    }
    CUtensorMap tmx;
    if (ch.tmap_toks) { /* the activation tiles, read by TMA: a tensor map of X for this call */
        st = hc__gpu_tmap_rows(&tmx, xin, m, p->K, mp.ldx, ch.tmap_toks, "the activations", &err);
        if (st) {
            hc__err_prefix(&err, "'%s'", name);
            goto out;
        }
    }
    if (ch.family->args == HC_GPU_ARGS_STREAMK) { /* + the segments' sums and tile counters */
        size_t ws = ch.part_bytes;
#ifdef HC_BENCH_DIAG
        ws = hc__gpu_diag_workspace(md, &ch, ws); /* (a bench build's timeline) */
#endif
        st = grow(&md->ws, &md->ws_bytes, ws, false, &err);
        if (!st) st = grow(&md->cnt, &md->cnt_n, ch.cnt_bytes, true, &err);
        if (st) goto out;
        void *args[] = {&L->w, &mp, &e, (void *)&xin, &mm, &y, &tmx, &md->ws, &md->cnt};
        st = launch(kern, &ch, args, s, &err);
        goto out;
    }
    void *args[] = {&L->w, &mp, &e, (void *)&xin, &mm, &y, &tmx};
    st = launch(kern, &ch, args, s, &err);
out:
    if (locked) pthread_mutex_unlock(&md->mu);
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

hc_status hc_gpu_linear_host(hc_gpu_model *md, const char *name, uint32_t expert, const float *x,
                             uint64_t m, uint64_t k, float *y, uint64_t n, char *msg,
                             size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *dx = NULL, *dy = NULL;
    uint16_t *hx = NULL, *hy = NULL;
    uint64_t xe, ye;
    if (!hc__mul_u64(m, k, &xe) || !hc__mul_u64(m, n, &ye) || xe > (1ull << 40) ||
        ye > (1ull << 40)) {
        st = hc__fail(&err, HC_INVALID, "'%s': M=%llu is too large", name, (unsigned long long)m);
        goto out;
    }
    hx = malloc(xe * 2 + 2), hy = malloc(ye * 2 + 2);
    if (!hx || !hy) {
        st = hc__fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < xe; i++) hx[i] = hc__bf16_rne(x[i]);
    CU(hc__cuda.malloc_(&dx, xe * 2 + 16), "cudaMalloc(x)");
    CU(hc__cuda.malloc_(&dy, ye * 2 + 16), "cudaMalloc(y)");
    CU(hc__cuda.memcpy_(dx, hx, xe * 2, cudaMemcpyHostToDevice), "upload X");
    CU(hc__cuda.memset_(dy, 0xFF, ye * 2), "poison Y"); /* NaN wherever nothing is written */
    st = hc_gpu_linear(md, name, expert, dx, m, k, dy, n, NULL, err.msg, sizeof err.msg);
    if (st) goto out;
    CU(hc__cuda.sync(), name);
    CU(hc__cuda.memcpy_(hy, dy, ye * 2, cudaMemcpyDeviceToHost), "download Y");
    hc__f32_of_bf16(y, hy, ye);
out:
    if (hc__cuda.loaded) hc__cuda.free_(dx), hc__cuda.free_(dy);
    free(hx), free(hy);
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}
