/* gpu_ref.c: the GPU's reference and peer kernels (kernels/tile_gemm.cu, built by hc_gpu_open):
 * hc_gpu_linear_ref, the float64-decode GEMM in the CPU executor's order (its results equal
 * hc_cpu_linear's bit for bit), and hc_gpu_stream_read, the plain read the memory-bound
 * kernels are measured against. */
#include <stdio.h>
#include <stdlib.h>

#include "gpu_int.h"

/* The reference kernel over host float32 buffers (weights uploaded for the call). */
hc_status hc_gpu_linear_ref(hc_gpu *g, hc_container *c, const char *name, uint32_t expert,
                            const float *x, uint64_t m, uint64_t k, float *y, uint64_t n,
                            char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *dw = NULL, *dx = NULL, *dy = NULL;
    float *xp = NULL;
    const hc_tensor_info *t;
    hc_tile_params p;
    const int32_t *perm;
    st = hc__tile_layer(c, name, &t, &p, &perm, &err);
    if (st == HC_NOTFOUND)
        st = hc__fail(&err, HC_UNSUPPORTED, "'%s' is not a tiled tensor (the GPU runs tiled "
                     "layouts only)", name);
    if (st) goto out;
    st = hc__tile_layer_call(name, &p, k, n, expert, &err);
    if (st) goto out;
    uint64_t xb, yb;
    if (!hc__mul_u64(m, k, &xb) || !hc__mul_u64(xb, 4, &xb) || !hc__mul_u64(m, n, &yb) ||
        !hc__mul_u64(yb, 4, &yb) || m > 65535) {
        st = hc__fail(&err, HC_INVALID, "'%s': M=%llu is too large for the reference kernel",
                     name, (unsigned long long)m);
        goto out;
    }
    xp = malloc(xb + 1);
    if (!xp) {
        st = hc__fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t q = 0; q < k; q++) xp[i * k + q] = x[i * k + (perm ? (uint64_t)perm[q] : q)];
    CU(hc__cuda.malloc_(&dw, t->length), "cudaMalloc(weights)");
    CU(hc__cuda.malloc_(&dx, xb + 4), "cudaMalloc(x)");
    CU(hc__cuda.malloc_(&dy, yb + 4), "cudaMalloc(y)");
    CU(hc__cuda.memcpy_(dw, hc_container_stored(c, t), t->length, cudaMemcpyHostToDevice),
       "upload W");
    CU(hc__cuda.memcpy_(dx, xp, xb, cudaMemcpyHostToDevice), "upload X");
    CU(hc__cuda.memset_(dy, 0xFF, yb), "poison Y"); /* NaN wherever nothing is written */
    hc_core_params cp;
    hc__tile_core_params(&p, &cp);
    unsigned long long e = expert, mm = m;
    void *args[] = {&dw, &cp, &e, &dx, &mm, &dy};
    dim3 grid = {(unsigned)((n + 127) / 128), (unsigned)m, 1}, block = {128, 1, 1};
    CU(hc__cuda.launch((const void *)g->gemm_ref, grid, block, args, 0, 0), "launch");
    CU(hc__cuda.sync(), "hc_tile_gemm_ref");
    CU(hc__cuda.memcpy_(y, dy, yb, cudaMemcpyDeviceToHost), "download Y");
out:
    if (hc__cuda.loaded) hc__cuda.free_(dw), hc__cuda.free_(dx), hc__cuda.free_(dy);
    free(xp);
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

hc_status hc_gpu_stream_read(hc_gpu *g, uint64_t bytes, int reps, double *gbs, char *msg,
                             size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *buf = NULL, *out = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    unsigned long long n16 = bytes / 16;
    CU(hc__cuda.malloc_(&buf, bytes), "cudaMalloc");
    CU(hc__cuda.malloc_(&out, 1 << 20), "cudaMalloc");
    CU(hc__cuda.memset_(buf, 1, bytes), "cudaMemset");
    void *args[] = {&buf, &n16, &out};
    /* 8 blocks of 256 threads per multiprocessor: enough loads in flight to saturate memory */
    dim3 grid = {(unsigned)g->sms * 8, 1, 1}, block = {256, 1, 1};
    CU(hc__cuda.launch((const void *)g->stream_read, grid, block, args, 0, 0), "launch");
    CU(hc__cuda.ev_create(&e0), "event");
    CU(hc__cuda.ev_create(&e1), "event");
    CU(hc__cuda.ev_record(e0, 0), "event");
    for (int r = 0; r < reps; r++)
        CU(hc__cuda.launch((const void *)g->stream_read, grid, block, args, 0, 0), "launch");
    CU(hc__cuda.ev_record(e1, 0), "event");
    CU(hc__cuda.ev_sync(e1), "event");
    float ms = 0;
    CU(hc__cuda.ev_elapsed(&ms, e0, e1), "event");
    *gbs = (double)bytes * reps / ((double)ms * 1e-3) / 1e9;
out:
    if (hc__cuda.loaded) {
        hc__cuda.free_(buf), hc__cuda.free_(out);
        if (e0) hc__cuda.ev_destroy(e0);
        if (e1) hc__cuda.ev_destroy(e1);
    }
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}
