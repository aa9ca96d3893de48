/* gpu.c: the GPU side of the runtime: the CUDA runtime loaded at run time (dlopen, so the
 * program starts and runs its CPU paths where there is no driver), kernels compiled by
 * NVRTC for the device's exact architecture and loaded with cudaLibraryLoadData /
 * cudaLibraryGetKernel, launched with cudaLaunchKernel. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "jit.h"
#include "layout.h"

static struct {
    int loaded, failed;
    cudaError_t (*count)(int *);
    cudaError_t (*attr)(int *, enum cudaDeviceAttr, int);
    cudaError_t (*set)(int);
    cudaError_t (*malloc_)(void **, size_t);
    cudaError_t (*free_)(void *);
    cudaError_t (*memcpy_)(void *, const void *, size_t, enum cudaMemcpyKind);
    cudaError_t (*lib_load)(cudaLibrary_t *, const void *, enum cudaJitOption *, void **,
                            unsigned, enum cudaLibraryOption *, void **, unsigned);
    cudaError_t (*lib_unload)(cudaLibrary_t);
    cudaError_t (*lib_kernel)(cudaKernel_t *, cudaLibrary_t, const char *);
    cudaError_t (*launch)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
    cudaError_t (*sync)(void);
    const char *(*errstr)(cudaError_t);
    cudaError_t (*ev_create)(cudaEvent_t *);
    cudaError_t (*ev_record)(cudaEvent_t, cudaStream_t);
    cudaError_t (*ev_sync)(cudaEvent_t);
    cudaError_t (*ev_elapsed)(float *, cudaEvent_t, cudaEvent_t);
    cudaError_t (*ev_destroy)(cudaEvent_t);
    cudaError_t (*memset_)(void *, int, size_t);
} cu;
static pthread_mutex_t cu_mu = PTHREAD_MUTEX_INITIALIZER;

struct hc_gpu {
    int device;
    char arch[16];
    cudaLibrary_t lib;
    cudaKernel_t gemm_ref, gemv_int4[4], stream_read; /* gemv for M <= 1, 2, 4, 8 */
};

static hc_status load_cudart(hc_err *err) {
    pthread_mutex_lock(&cu_mu);
    if (!cu.loaded && !cu.failed) {
        static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                            "/usr/local/cuda/lib64/libcudart.so"};
        void *h = hc_dlopen_first(names, sizeof names / sizeof names[0]);
        if (h) {
            *(void **)&cu.count = dlsym(h, "cudaGetDeviceCount");
            *(void **)&cu.attr = dlsym(h, "cudaDeviceGetAttribute");
            *(void **)&cu.set = dlsym(h, "cudaSetDevice");
            *(void **)&cu.malloc_ = dlsym(h, "cudaMalloc");
            *(void **)&cu.free_ = dlsym(h, "cudaFree");
            *(void **)&cu.memcpy_ = dlsym(h, "cudaMemcpy");
            *(void **)&cu.lib_load = dlsym(h, "cudaLibraryLoadData");
            *(void **)&cu.lib_unload = dlsym(h, "cudaLibraryUnload");
            *(void **)&cu.lib_kernel = dlsym(h, "cudaLibraryGetKernel");
            *(void **)&cu.launch = dlsym(h, "cudaLaunchKernel");
            *(void **)&cu.sync = dlsym(h, "cudaDeviceSynchronize");
            *(void **)&cu.errstr = dlsym(h, "cudaGetErrorString");
            *(void **)&cu.ev_create = dlsym(h, "cudaEventCreate");
            *(void **)&cu.ev_record = dlsym(h, "cudaEventRecord");
            *(void **)&cu.ev_sync = dlsym(h, "cudaEventSynchronize");
            *(void **)&cu.ev_elapsed = dlsym(h, "cudaEventElapsedTime");
            *(void **)&cu.ev_destroy = dlsym(h, "cudaEventDestroy");
            *(void **)&cu.memset_ = dlsym(h, "cudaMemset");
        }
        cu.loaded = h && cu.count && cu.attr && cu.set && cu.malloc_ && cu.free_ && cu.memcpy_ &&
                    cu.lib_load && cu.lib_unload && cu.lib_kernel && cu.launch && cu.sync &&
                    cu.errstr && cu.ev_create && cu.ev_record && cu.ev_sync && cu.ev_elapsed &&
                    cu.ev_destroy && cu.memset_;
        cu.failed = !cu.loaded;
    }
    pthread_mutex_unlock(&cu_mu);
    return cu.loaded ? HC_OK
                     : hc_fail(err, HC_UNSUPPORTED, "the CUDA runtime (libcudart.so) cannot be loaded");
}

#define CU(call, what)                                                                       \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            st = hc_fail(&err, HC_IO, "CUDA: %s: %s", what, cu.errstr(e_));                  \
            goto out;                                                                        \
        }                                                                                    \
    } while (0)

hc_status hc_gpu_open(hc_gpu **out, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    hc_gpu *g = NULL;
    void *cubin = NULL;
    size_t size = 0;
    *out = NULL;
    int n = 0, maj = 0, min = 0;
    if (getenv("HC_NO_GPU")) { /* as if there were no device (tests of the fallback) */
        st = hc_fail(&err, HC_UNSUPPORTED, "no CUDA device (HC_NO_GPU is set)");
        goto out;
    }
    st = load_cudart(&err);
    if (st) goto out;
    if (cu.count(&n) != cudaSuccess || n == 0) {
        st = hc_fail(&err, HC_UNSUPPORTED, "no CUDA device");
        goto out;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        st = hc_fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    CU(cu.set(0), "cudaSetDevice(0)");
    CU(cu.attr(&maj, cudaDevAttrComputeCapabilityMajor, 0), "compute capability");
    CU(cu.attr(&min, cudaDevAttrComputeCapabilityMinor, 0), "compute capability");
    /* the exact architecture: sm_90a on Hopper (wgmma and setmaxnreg need the 'a') */
    snprintf(g->arch, sizeof g->arch, "sm_%d%d%s", maj, min, maj == 9 && min == 0 ? "a" : "");
    static const char *const opts[] = {"--fmad=false"};
    st = hc_jit_compile("tile_gemm.cu", g->arch, opts, 1, &cubin, &size, &err);
    if (st) goto out;
    CU(cu.lib_load(&g->lib, cubin, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData");
    CU(cu.lib_kernel(&g->gemm_ref, g->lib, "hc_tile_gemm_ref"), "cudaLibraryGetKernel");
    static const char *const gv[4] = {"hc_tile_gemv_int4_m1", "hc_tile_gemv_int4_m2",
                                      "hc_tile_gemv_int4_m4", "hc_tile_gemv_int4_m8"};
    for (int i = 0; i < 4; i++) CU(cu.lib_kernel(&g->gemv_int4[i], g->lib, gv[i]), gv[i]);
    CU(cu.lib_kernel(&g->stream_read, g->lib, "hc_stream_read"), "cudaLibraryGetKernel");
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
    if (cu.loaded && g->lib) cu.lib_unload(g->lib);
    free(g);
}

const char *hc_gpu_arch(const hc_gpu *g) { return g->arch; }

/* Runs kernel `which` (0 reference, 1 fast path) reps times; us receives the median-free mean
 * time of the timed repetitions (after one warm-up) when reps > 0. */
static hc_status gpu_linear(hc_gpu *g, hc_container *c, const char *name, uint32_t expert,
                            const float *x, uint64_t m, uint64_t k, float *y, uint64_t n,
                            int which, int reps, double *us, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *dw = NULL, *dx = NULL, *dy = NULL;
    float *xp = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    const hc_tensor_info *t;
    hc_tile_params p;
    const int32_t *perm;
    st = hc_tile_layer(c, name, &t, &p, &perm, &err);
    if (st == HC_NOTFOUND)
        st = hc_fail(&err, HC_UNSUPPORTED, "'%s' is not a tiled tensor (the GPU runs tiled "
                     "layouts only)", name);
    if (st) goto out;
    if (k != p.K || n != p.N || expert >= p.E) {
        st = hc_fail(&err, HC_INVALID, "'%s' is [%llu, %llu] x %llu experts; called with K=%llu "
                     "N=%llu expert %u", name, (unsigned long long)p.N, (unsigned long long)p.K,
                     (unsigned long long)p.E, (unsigned long long)k, (unsigned long long)n, expert);
        goto out;
    }
    bool fast = which == 1 && p.kind == HC_TL_INT && p.code_bits == 4 && m <= 8 && p.S == 1 &&
                (p.scale_dtype == HC_DT_F32 || p.scale_dtype == HC_DT_BF16 ||
                 p.scale_dtype == HC_DT_F16);
    if (which == 1 && !fast) {
        st = hc_fail(&err, HC_UNSUPPORTED, "'%s': no fast kernel for %s with M=%llu in this "
                     "version", name, t->layout, (unsigned long long)m);
        goto out;
    }
    xp = malloc(m * k * sizeof *xp + 1);
    if (!xp) {
        st = hc_fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t q = 0; q < k; q++) xp[i * k + q] = x[i * k + (perm ? (uint64_t)perm[q] : q)];
    CU(cu.malloc_(&dw, t->length), "cudaMalloc(weights)");
    CU(cu.malloc_(&dx, m * k * 4 + 4), "cudaMalloc(x)");
    CU(cu.malloc_(&dy, m * n * 4 + 4), "cudaMalloc(y)");
    CU(cu.memcpy_(dw, hc_container_stored(c, t), t->length, cudaMemcpyHostToDevice), "upload W");
    CU(cu.memcpy_(dx, xp, m * k * 4, cudaMemcpyHostToDevice), "upload X");
    /* poisoned (NaN where nothing is written), or zero for the split-K atomics */
    unsigned ksplit = 1;
    if (fast) {
        uint64_t want = (2048 + p.tiles_n - 1) / p.tiles_n; /* about 2048 blocks in flight */
        uint64_t most = (p.tiles_k + 3) / 4;                /* each warp keeps a tile */
        ksplit = (unsigned)(want < most ? want : most);
        if (ksplit < 1) ksplit = 1;
    }
    CU(cu.memset_(dy, ksplit > 1 ? 0 : 0xFF, m * n * 4), "initialise Y");
    hc_core_params cp;
    hc_tile_core_params(&p, &cp);
    unsigned long long e = expert, mm = m;
    /* the small-M kernel's own, shorter parameter block (kernels/tile_gemm.cu) */
    struct {
        unsigned long long tiles_n, tiles_k, chunk_bytes, N, K;
        unsigned code_bytes, scale_bytes, zero_const, zeros, sign_magnitude, scale_kind;
    } gp = {p.tiles_n, p.tiles_k, p.chunk_bytes, p.N, p.K, (unsigned)p.code_bytes,
            (unsigned)p.scale_bytes, (unsigned)p.zero_const, p.zeros, p.sign_magnitude,
            cp.scale_kind};
    void *args[] = {&dw, fast ? (void *)&gp : (void *)&cp, &e, &dx, &mm, &dy};
    dim3 grid = {(unsigned)((n + 127) / 128), (unsigned)m, 1}, block = {128, 1, 1};
    if (fast) grid = (dim3){(unsigned)p.tiles_n, ksplit, 1};
    int variant = m <= 1 ? 0 : m <= 2 ? 1 : m <= 4 ? 2 : 3;
    const void *kern = fast ? (const void *)g->gemv_int4[variant] : (const void *)g->gemm_ref;
    CU(cu.launch(kern, grid, block, args, 0, 0), "launch");
    CU(cu.sync(), fast ? "hc_tile_gemv_int4" : "hc_tile_gemm_ref");
    if (reps > 0) { /* (y accumulates over the timed launches; it is reset and rerun below) */
        CU(cu.ev_create(&e0), "event");
        CU(cu.ev_create(&e1), "event");
        CU(cu.ev_record(e0, 0), "event");
        for (int r = 0; r < reps; r++) CU(cu.launch(kern, grid, block, args, 0, 0), "launch");
        CU(cu.ev_record(e1, 0), "event");
        CU(cu.ev_sync(e1), "event");
        float ms = 0;
        CU(cu.ev_elapsed(&ms, e0, e1), "event");
        *us = (double)ms * 1e3 / reps;
        CU(cu.memset_(dy, ksplit > 1 ? 0 : 0xFF, m * n * 4), "initialise Y");
        CU(cu.launch(kern, grid, block, args, 0, 0), "launch");
        CU(cu.sync(), "rerun");
    }
    CU(cu.memcpy_(y, dy, m * n * 4, cudaMemcpyDeviceToHost), "download Y");
out:
    if (cu.loaded) {
        cu.free_(dw), cu.free_(dx), cu.free_(dy);
        if (e0) cu.ev_destroy(e0);
        if (e1) cu.ev_destroy(e1);
    }
    free(xp);
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

hc_status hc_gpu_linear_ref(hc_gpu *g, hc_container *c, const char *name, uint32_t expert,
                            const float *x, uint64_t m, uint64_t k, float *y, uint64_t n,
                            char *msg, size_t msg_len) {
    return gpu_linear(g, c, name, expert, x, m, k, y, n, 0, 0, NULL, msg, msg_len);
}

hc_status hc_gpu_linear_fast(hc_gpu *g, hc_container *c, const char *name, uint32_t expert,
                             const float *x, uint64_t m, uint64_t k, float *y, uint64_t n,
                             int reps, double *us, char *msg, size_t msg_len) {
    return gpu_linear(g, c, name, expert, x, m, k, y, n, 1, reps, us, msg, msg_len);
}

hc_status hc_gpu_stream_read(hc_gpu *g, uint64_t bytes, int reps, double *gbs, char *msg,
                             size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *buf = NULL, *out = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    unsigned long long n16 = bytes / 16;
    CU(cu.malloc_(&buf, bytes), "cudaMalloc");
    CU(cu.malloc_(&out, 1 << 20), "cudaMalloc");
    CU(cu.memset_(buf, 1, bytes), "cudaMemset");
    void *args[] = {&buf, &n16, &out};
    dim3 grid = {132 * 8, 1, 1}, block = {256, 1, 1};
    CU(cu.launch((const void *)g->stream_read, grid, block, args, 0, 0), "launch");
    CU(cu.ev_create(&e0), "event");
    CU(cu.ev_create(&e1), "event");
    CU(cu.ev_record(e0, 0), "event");
    for (int r = 0; r < reps; r++)
        CU(cu.launch((const void *)g->stream_read, grid, block, args, 0, 0), "launch");
    CU(cu.ev_record(e1, 0), "event");
    CU(cu.ev_sync(e1), "event");
    float ms = 0;
    CU(cu.ev_elapsed(&ms, e0, e1), "event");
    *gbs = (double)bytes * reps / ((double)ms * 1e-3) / 1e9;
out:
    if (cu.loaded) {
        cu.free_(buf), cu.free_(out);
        if (e0) cu.ev_destroy(e0);
        if (e1) cu.ev_destroy(e1);
    }
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}
