/* gpu.c: the GPU handles -- the device (hc_gpu_open: device 0, its exact architecture, the
 * reference module) and the models (hc_gpu_model_load: a container's tiled layers uploaded as
 * stored, with the kernel modules their kinds need; hc_gpu_model_force_kernel). The kernels
 * are compiled by NVRTC (jit.c) and launched by gpu_linear.c and gpu_ref.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_int.h"

hc_status hc_gpu_open(hc_gpu **out, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    hc_gpu *g = NULL;
    void *cubin = NULL;
    size_t size = 0;
    *out = NULL;
    int n = 0, maj = 0, min = 0;
    if (getenv("HC_NO_GPU")) { /* as if there were no device (tests of the fallback) */
        st = hc__fail(&err, HC_UNSUPPORTED, "no CUDA device (HC_NO_GPU is set)");
        goto out;
    }
    st = hc__cuda_load(&err);
    if (st) goto out;
    if (hc__cuda.count(&n) != cudaSuccess || n == 0) {
        st = hc__fail(&err, HC_UNSUPPORTED, "no CUDA device");
        goto out;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        st = hc__fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    CU(hc__cuda.set(0), "cudaSetDevice(0)");
    CU(hc__cuda.attr(&maj, cudaDevAttrComputeCapabilityMajor, 0), "compute capability");
    CU(hc__cuda.attr(&min, cudaDevAttrComputeCapabilityMinor, 0), "compute capability");
    /* the exact architecture: sm_90a on Hopper (wgmma and setmaxnreg need the 'a') */
    snprintf(g->arch, sizeof g->arch, "sm_%d%d%s", maj, min, maj == 9 && min == 0 ? "a" : "");
    st = hc__gpu_ref_compile(g->arch, &cubin, &size, &err);
    if (st) goto out;
    CU(hc__cuda.lib_load(&g->lib, cubin, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData");
    CU(hc__cuda.lib_kernel(&g->gemm_ref, g->lib, "hc_tile_gemm_ref"), "cudaLibraryGetKernel");
    CU(hc__cuda.lib_kernel(&g->stream_read, g->lib, "hc_stream_read"), "cudaLibraryGetKernel");
    CU(hc__cuda.lib_kernel(&g->gather, g->lib, "hc_gather_x"), "cudaLibraryGetKernel");
    CU(hc__cuda.attr(&g->sms, cudaDevAttrMultiProcessorCount, 0), "multiprocessor count");
    CU(hc__cuda.attr(&g->smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0),
       "shared memory per multiprocessor");
    CU(hc__cuda.attr(&g->smem_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0),
       "shared memory per block (opt-in)");
    { /* the memory's peak rate: its clock (kHz, double data rate) x its bus width (bits) -- the
       * MoE chooser's one device-rate input (gpu_plan.c); unknown where the driver says 0 */
        int khz = 0, bits = 0;
        if (hc__cuda.attr(&khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess &&
            hc__cuda.attr(&bits, cudaDevAttrGlobalMemoryBusWidth, 0) == cudaSuccess && khz > 0 &&
            bits > 0)
            g->mem_gbps = (uint64_t)khz * (uint64_t)bits * 2 / 8 / 1000000;
    }
    pthread_mutex_init(&g->mu, NULL);
out:
    free(cubin);
    if (st) {
        if (msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
        free(g);
        return st;
    }
    *out = g;
    return HC_OK;
}

void hc_gpu_free(hc_gpu *g) {
    if (!g) return;
    if (hc__cuda.loaded && g->lib) hc__cuda.lib_unload(g->lib);
    if (hc__cuda.loaded && g->moe_lib) hc__cuda.lib_unload(g->moe_lib);
    for (int i = 0; i < g->nmods; i++) {
        if (hc__cuda.loaded && g->mods[i].lib) hc__cuda.lib_unload(g->mods[i].lib);
        if (hc__cuda.loaded && g->mods[i].glib) hc__cuda.lib_unload(g->mods[i].glib);
    }
    if (g->sms) pthread_mutex_destroy(&g->mu);
    free(g);
}

const char *hc_gpu_arch(const hc_gpu *g) { return g->arch; }

uint64_t hc_gpu_mem_gbps(const hc_gpu *g) { return g->mem_gbps; }

hc_gpu_caps hc__gpu_caps_of(const hc_gpu *g) {
    return (hc_gpu_caps){g->arch, (uint64_t)g->sms, hc__cuda.tmap_encode != NULL,
                         (uint64_t)g->smem_sm, (uint64_t)g->smem_block};
}

int hc__gpu_layer_cmp(const void *a, const void *b) {
    return strcmp(((const hc_gpu_layer *)a)->name, ((const hc_gpu_layer *)b)->name);
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void hc_gpu_model_free(hc_gpu_model *m) {
    if (!m) return;
    hc__gpu_moe_free(m);
    for (size_t i = 0; i < m->n; i++) {
        if (hc__cuda.loaded) hc__cuda.free_(m->l[i].w), hc__cuda.free_(m->l[i].perm);
        free(m->l[i].name);
    }
    if (hc__cuda.loaded) hc__cuda.free_(m->ws), hc__cuda.free_(m->cnt), hc__cuda.free_(m->xg);
    pthread_mutex_destroy(&m->mu);
    free(m->l);
    free(m);
}

static hc_status model_load(hc_gpu *g, hc_container *c, const char *only, uint32_t e0,
                            uint32_t e1, hc_gpu_model **out, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    *out = NULL;
    size_t nt = hc_container_tensor_count(c);
    hc_gpu_model *m = calloc(1, sizeof *m);
    if (!m) {
        if (msg && msg_len) snprintf(msg, msg_len, "out of memory");
        return HC_NOMEM;
    }
    m->g = g;
    m->e0 = e0, m->e1 = e1;
    m->forced = m->moe_forced = HC_GPU_KERNEL_AUTO;
    pthread_mutex_init(&m->mu, NULL);
    if (!(m->l = calloc(nt + 1, sizeof *m->l))) {
        st = hc__fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    double t0 = wall_s();
    /* only: a tiled tensor, or an MoE layer of the record with its expert layers */
    const hc_moe_layer_info *only_moe = hc__gpu_moe_record(c, only);
    for (size_t i = 0; i < nt; i++) {
        const hc_tensor_info *t = hc_container_tensor(c, i);
        if (!t->layout_params) continue;
        if (only && strcmp(only, t->name) && !(only_moe && hc__gpu_moe_layer_has(only_moe, t->name)))
            continue;
        hc_gpu_layer *L = &m->l[m->n];
        const int32_t *perm;
        /* expert parallelism: an expert layer of the MoE record outside [e0, e1) stays home, a
         * fused [E, N, K] one comes as its slice */
        uint32_t first = 0, count = 0;
        int part = hc__gpu_moe_tensor_part(c, t->name, e0, e1, &first, &count);
        if (part == HC_GPU_MOE_ELSEWHERE) continue;
        st = hc__tile_layer(c, t->name, &t, &L->p, &perm, &err);
        if (st) goto out;
        uint64_t per = L->p.tiles_n * L->p.tiles_k * L->p.chunk_bytes, off = 0, len = t->length;
        if (part == HC_GPU_MOE_SLICE) {
            if (first >= L->p.E) continue; /* (none of its experts here) */
            if (count > L->p.E - first) count = (uint32_t)(L->p.E - first);
            off = first * per, len = count * per;
            L->e0 = first, L->p.E = count;
        }
        hc_gpu_kind k;
        st = hc__gpu_layer_kind(t, &L->p, &k, &err);
        if (st) goto out;
        st = hc__gpu_layer_zeros(t, &L->p, (const uint8_t *)hc_container_stored(c, t) + off, len,
                                 &err);
        if (st) goto out;
        const hc_tile_params *p = &L->p;
        L->mp = (hc_mma_params){p->tiles_n, p->tiles_k, p->chunk_bytes, p->N, p->K, p->K,
                                (unsigned)p->code_bytes, (unsigned)p->scale_bytes, p->S, k.lgs,
                                k.sk, p->zeros, (unsigned)p->zero_const, (float)p->global_div};
        L->name = hc__strdup(t->name);
        if (!L->name) {
            st = hc__fail(&err, HC_NOMEM, "out of memory");
            goto out;
        }
        m->n++;
        CU(hc__cuda.malloc_(&L->w, len), "cudaMalloc(weights)");
        CU(hc__cuda.memcpy_(L->w, (const uint8_t *)hc_container_stored(c, t) + off, len,
                           cudaMemcpyHostToDevice), "upload of weights");
        m->bytes += len;
        if (perm) {
            CU(hc__cuda.malloc_(&L->perm, L->p.K * 4), "cudaMalloc(perm)");
            CU(hc__cuda.memcpy_(L->perm, perm, L->p.K * 4, cudaMemcpyHostToDevice),
               "upload of perm");
            m->bytes += L->p.K * 4;
        }
        st = hc__gpu_layer_module(g, k, &L->mod, &err);
        if (st) goto out;
        const hc_layout_row *row = hc__layout_by_codec(k.codec);
        L->shape = (hc_gpu_shape){p->tiles_n, p->tiles_k, p->chunk_bytes, row ? row->families : 0,
                                  {0, 0, 0}, row ? row->code_bits : 0};
        hc__gpu_gemv_occupancy(g, L->mod, p, L->shape.gemv_occ);
    }
    m->seconds = wall_s() - t0;
    qsort(m->l, m->n, sizeof *m->l, hc__gpu_layer_cmp); /* hc_gpu_linear finds layers by bsearch */
    if (only && m->n == 0) {
        st = hc__fail(&err, HC_NOTFOUND, "'%s' is not a tiled tensor or an MoE layer with tiled "
                     "experts of the container (the GPU runs tiled layouts only)", only);
        goto out;
    }
    if (!only || only_moe) { /* the MoE layers of the record (a single tensor has none) */
        st = hc__gpu_moe_load(m, c, only_moe ? only : NULL, &err);
        if (st) goto out;
        m->seconds = wall_s() - t0;
    }
    *out = m;
    return HC_OK;
out:
    hc_gpu_model_free(m);
    if (msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

hc_status hc_gpu_model_load(hc_gpu *g, hc_container *c, const char *only, hc_gpu_model **out,
                            char *msg, size_t msg_len) {
    return model_load(g, c, only, 0, UINT32_MAX, out, msg, msg_len);
}

hc_status hc_gpu_model_load_experts(hc_gpu *g, hc_container *c, uint32_t e0, uint32_t e1,
                                    hc_gpu_model **out, char *msg, size_t msg_len) {
    if (e0 >= e1) {
        *out = NULL;
        if (msg && msg_len) snprintf(msg, msg_len, "experts [%u, %u): an empty range", e0, e1);
        return HC_INVALID;
    }
    return model_load(g, c, NULL, e0, e1, out, msg, msg_len);
}

void hc_gpu_model_stats(const hc_gpu_model *m, uint64_t *layers, uint64_t *bytes,
                        double *seconds) {
    if (layers) *layers = m->n;
    if (bytes) *bytes = m->bytes;
    if (seconds) *seconds = m->seconds;
}

hc_status hc_gpu_model_force_kernel(hc_gpu_model *m, const char *kernel, char *msg,
                                    size_t msg_len) {
    hc_err err = {0};
    int forced = HC_GPU_KERNEL_AUTO;
    hc_gpu_caps dev = hc__gpu_caps_of(m->g);
    hc_status st = hc__gpu_force_parse(kernel, &forced, &err);
    if (!st) st = hc__gpu_force_check(&dev, forced, &err);
    if (!st) { /* hc_gpu_linear and hc_gpu_moe read it under the same lock */
        pthread_mutex_lock(&m->mu);
        /* the grouped kernel the setting forces, if any: one wider than the runtime's choice
         * may need a larger workspace */
        const int gk = forced == HC_GPU_MOE_W8_LAP ? HC_GMK_W8
                       : forced >= HC_GPU_MOE_FORCED && forced != HC_GPU_MOE_ACT_APART
                           ? forced - HC_GPU_MOE_FORCED
                           : HC_GPU_KERNEL_AUTO;
        st = hc__gpu_moe_ws_fit(m, gk, &err);
        if (st) { /* (the setting unchanged) */
        } else if (forced == HC_GPU_MOE_ACT_APART) m->act_apart = true;
        else if (gk != HC_GPU_KERNEL_AUTO)
            m->moe_forced = gk, m->w8_lap = forced == HC_GPU_MOE_W8_LAP;
        else if (forced == HC_GPU_KERNEL_AUTO)
            m->forced = m->moe_forced = forced, m->act_apart = m->w8_lap = false;
        else m->forced = forced;
        pthread_mutex_unlock(&m->mu);
    }
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}
