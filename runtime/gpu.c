/* gpu.c: the GPU side of the runtime: the CUDA runtime loaded at run time (dlopen, so the
 * program starts and runs its CPU paths where there is no driver), kernels compiled by
 * NVRTC for the device's exact architecture and loaded with cudaLibraryLoadData /
 * cudaLibraryGetKernel, launched with cudaLaunchKernel. */
#include <cuda.h> /* types of cuTensorMapEncodeTiled only: the driver is loaded with dlopen */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "gpu_plan.h"
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
    cudaError_t (*func_attr)(const void *, enum cudaFuncAttribute, int);
    cudaError_t (*occupancy)(int *, const void *, int, size_t);
    cudaError_t (*launch_ex)(const cudaLaunchConfig_t *, const void *, void **); /* optional */
    /* from libcuda.so.1, optional: without it the wide kernel (TMA) is not used */
    CUresult (*tmap_encode)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                            const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                            const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                            CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
} cu;
static pthread_mutex_t cu_mu = PTHREAD_MUTEX_INITIALIZER;

#define HC_CODECS 7   /* codec numbers 1..6 of hc_mma_params (layout_core.h) */
#define HC_MODULES 48 /* kernel modules one process builds at most (kinds of layers) */

/* The tuning knobs of kernels/tile_mma.cu, read once from the environment (docs/gpu.md). */
typedef struct {
    int gemv_stages, gemv1_stages, wgmma_wide, pdl, wgmma_mid;
    bool specialise; /* HC_GPU_GENERIC=1: one module per codec (fewer builds, slower) */
    int diag; /* measurements: 1 HC_DIAG_GEMV_COPY_ONLY=1 (wrong results), 2 HC_DIAG_GEMV_TIMELINE=1 */
    char opt[7][32]; /* 0-5: the module options; 6: HC_GEMV_DIAG, with diag only */
} kernel_knobs;

/* The kind of layer a tiled tensor is, as the kernel modules are specialised: codec (0: no GPU
 * kernel), scale kind, log2 of k16 steps per scale group, zero points. */
typedef struct {
    unsigned codec, sk, lgs, zp;
} layer_kind;

/* One build of kernels/tile_mma.cu: for a kind of layer, or (generic) for its whole codec. */
typedef struct {
    layer_kind kind;
    bool generic;
    cudaLibrary_t lib;
    cudaKernel_t gemv[3], gemm, wgmma, wide; /* gemv for M = 1, <= 8, <= 16; wide: 256 tokens */
    cudaKernel_t ws[2];                      /* HC_WGMMA_MID: 64- and 128-token tiles */
    int gemv_blocks[3];                /* resident blocks per SM */
} mma_module;

struct hc_gpu {
    int device, sms;
    char arch[16];
    cudaLibrary_t lib;
    cudaKernel_t gemm_ref, stream_read, gather;
    pthread_mutex_t mu; /* guards the lazily built modules */
    mma_module mods[HC_MODULES];
    int nmods;
    kernel_knobs kn;
};

/* An integer knob from the environment within [lo, hi], or def. */
static int env_knob(const char *name, int lo, int hi, int def) {
    const char *v = getenv(name);
    char *end;
    long x = v && *v ? strtol(v, &end, 10) : def;
    return v && *v && !*end && x >= lo && x <= hi ? (int)x : def;
}

/* The tuning knobs of kernels/tile_mma.cu (docs/gpu.md; defaults as measured best), from the
 * environment, and the -D options they become. */
static void knobs_from_env(kernel_knobs *k) {
    memset(k, 0, sizeof *k);
    k->gemv_stages = env_knob("HC_GEMV_STAGES", 2, 6, 4);
    k->specialise = env_knob("HC_GPU_GENERIC", 0, 1, 0) == 0;
    k->wgmma_wide = env_knob("HC_WGMMA_WIDE", 0, 1, 1);
    snprintf(k->opt[0], sizeof k->opt[0], "-DHC_GEMV_STAGES=%d", k->gemv_stages);
    snprintf(k->opt[1], sizeof k->opt[1], "-DHC_GEMV_MINB=%d", env_knob("HC_GEMV_MINB", 1, 8, 4));
    k->pdl = env_knob("HC_GPU_PDL", 0, 1, 1);
    snprintf(k->opt[2], sizeof k->opt[2], "-DHC_GEMV_PDL=%d", k->pdl);
    k->wgmma_mid = env_knob("HC_WGMMA_MID", 0, 1, 1);
    snprintf(k->opt[3], sizeof k->opt[3], "-DHC_WGMMA_MID=%d", k->wgmma_mid);
    /* measurements, not knobs: the small-M kernels copy every tile and skip the arithmetic
     * (their results are wrong), to time the copy pipeline alone; or they record per block
     * when it started, waited and ended (hc_gpu_diag_timeline; bench/NOTES.md v30) */
    k->diag = env_knob("HC_DIAG_GEMV_COPY_ONLY", 0, 1, 0) ? 1
              : env_knob("HC_DIAG_GEMV_TIMELINE", 0, 1, 0) ? 2 : 0;
    k->gemv1_stages = env_knob("HC_GEMV1_STAGES", 2, 8, 6);
    snprintf(k->opt[4], sizeof k->opt[4], "-DHC_GEMV1_STAGES=%d", k->gemv1_stages);
    snprintf(k->opt[5], sizeof k->opt[5], "-DHC_GEMV_MXS=%d",
             env_knob("HC_GEMV_MXFOLD_SMEM", 0, 1, 1));
    snprintf(k->opt[6], sizeof k->opt[6], "-DHC_GEMV_DIAG=%d", k->diag);
    if (k->diag == 1)
        fprintf(stderr, "hconvert: HC_DIAG_GEMV_COPY_ONLY=1: M <= 16 results are wrong "
                        "(a measurement of the copy pipeline)\n");
}

static unsigned codec_of(const hc_tile_params *p);

static layer_kind kind_of(const hc_tile_params *p) {
    hc_core_params cp;
    hc_tile_core_params(p, &cp);
    layer_kind k = {codec_of(p), cp.scale_kind, p->S == 1 ? 2u : p->S == 2 ? 1u : 0u, p->zeros};
    return k;
}

/* Whether the module built for kind a (generic: for its whole codec) serves layers of kind b. */
static bool module_serves(layer_kind a, bool generic, layer_kind b) {
    return a.codec == b.codec && (generic || (a.sk == b.sk && a.lgs == b.lgs && a.zp == b.zp));
}

/* HC_UNSUPPORTED, naming the layer and the reason, when no GPU kernel runs layer t of kind k. */
static hc_status gpu_runs(const hc_tensor_info *t, const hc_tile_params *p, layer_kind k,
                          hc_err *err) {
    if (!k.codec)
        return hc_fail(err, HC_UNSUPPORTED, "'%s': layout %s has no GPU kernel", t->name,
                       t->layout);
    if (p->S > 4) /* one scale per k16 step at most: groups of 16 columns or more */
        return hc_fail(err, HC_UNSUPPORTED, "'%s': scale groups of %llu columns; the GPU "
                       "kernels need groups of at least 16 (the CPU executor runs it)", t->name,
                       (unsigned long long)p->g);
    if (k.codec == 4 && k.sk != 3 && p->global_div != 0) /* kernels: E4M3 scales only */
        return hc_fail(err, HC_UNSUPPORTED, "'%s': an FP4 global divisor with non-E4M3 scales "
                       "(the CPU executor runs it)", t->name);
    return HC_OK;
}

/* NVRTC options of the tile_mma.cu module for kind k: opts (at least 12 entries) points into
 * buf; returns how many. */
static int module_options(const kernel_knobs *kn, layer_kind k, char buf[4][32],
                          const char **opts) {
    snprintf(buf[0], 32, "-DHC_CODEC=%u", k.codec);
    snprintf(buf[1], 32, "-DHC_SK=%u", k.sk);
    snprintf(buf[2], 32, "-DHC_LGS=%u", k.lgs);
    snprintf(buf[3], 32, "-DHC_ZP=%u", k.zp);
    int no = 0;
    opts[no++] = buf[0];
    for (int i = 1; i < 4 && kn->specialise; i++) opts[no++] = buf[i];
    for (int i = 0; i < 6; i++) opts[no++] = kn->opt[i];
    if (kn->diag) opts[no++] = kn->opt[6];
    return no;
}

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
            *(void **)&cu.func_attr = dlsym(h, "cudaFuncSetAttribute");
            *(void **)&cu.occupancy = dlsym(h, "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
            *(void **)&cu.launch_ex = dlsym(h, "cudaLaunchKernelExC");
        }
        void *drv = h ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
        if (drv) *(void **)&cu.tmap_encode = dlsym(drv, "cuTensorMapEncodeTiled");
        cu.loaded = h && cu.count && cu.attr && cu.set && cu.malloc_ && cu.free_ && cu.memcpy_ &&
                    cu.lib_load && cu.lib_unload && cu.lib_kernel && cu.launch && cu.sync &&
                    cu.errstr && cu.ev_create && cu.ev_record && cu.ev_sync && cu.ev_elapsed &&
                    cu.ev_destroy && cu.memset_ && cu.func_attr && cu.occupancy;
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
    CU(cu.lib_kernel(&g->stream_read, g->lib, "hc_stream_read"), "cudaLibraryGetKernel");
    CU(cu.lib_kernel(&g->gather, g->lib, "hc_gather_x"), "cudaLibraryGetKernel");
    CU(cu.attr(&g->sms, cudaDevAttrMultiProcessorCount, 0), "multiprocessor count");
    pthread_mutex_init(&g->mu, NULL);
    knobs_from_env(&g->kn);
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
    for (int i = 0; i < g->nmods; i++)
        if (cu.loaded && g->mods[i].lib) cu.lib_unload(g->mods[i].lib);
    if (g->sms) pthread_mutex_destroy(&g->mu);
    free(g);
}

const char *hc_gpu_arch(const hc_gpu *g) { return g->arch; }

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
    uint64_t xb, yb;
    if (!hc_mul_u64(m, k, &xb) || !hc_mul_u64(xb, 4, &xb) || !hc_mul_u64(m, n, &yb) ||
        !hc_mul_u64(yb, 4, &yb) || m > 65535) {
        st = hc_fail(&err, HC_INVALID, "'%s': M=%llu is too large for the reference kernel",
                     name, (unsigned long long)m);
        goto out;
    }
    xp = malloc(xb + 1);
    if (!xp) {
        st = hc_fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t q = 0; q < k; q++) xp[i * k + q] = x[i * k + (perm ? (uint64_t)perm[q] : q)];
    CU(cu.malloc_(&dw, t->length), "cudaMalloc(weights)");
    CU(cu.malloc_(&dx, xb + 4), "cudaMalloc(x)");
    CU(cu.malloc_(&dy, yb + 4), "cudaMalloc(y)");
    CU(cu.memcpy_(dw, hc_container_stored(c, t), t->length, cudaMemcpyHostToDevice), "upload W");
    CU(cu.memcpy_(dx, xp, xb, cudaMemcpyHostToDevice), "upload X");
    CU(cu.memset_(dy, 0xFF, yb), "poison Y"); /* NaN wherever nothing is written */
    hc_core_params cp;
    hc_tile_core_params(&p, &cp);
    unsigned long long e = expert, mm = m;
    void *args[] = {&dw, &cp, &e, &dx, &mm, &dy};
    dim3 grid = {(unsigned)((n + 127) / 128), (unsigned)m, 1}, block = {128, 1, 1};
    CU(cu.launch((const void *)g->gemm_ref, grid, block, args, 0, 0), "launch");
    CU(cu.sync(), "hc_tile_gemm_ref");
    CU(cu.memcpy_(y, dy, yb, cudaMemcpyDeviceToHost), "download Y");
out:
    if (cu.loaded) cu.free_(dw), cu.free_(dx), cu.free_(dy);
    free(xp);
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

/* ---- the fast kernels (kernels/tile_mma.cu), one module per kind of layer, built on first
 * use ---- */
static unsigned codec_of(const hc_tile_params *p) {
    switch (p->kind) {
    case HC_TL_INT:
        if (p->code_bits == 8) return 3;
        return p->sign_magnitude ? 2 : 1;
    case HC_TL_FP4: return 4;
    case HC_TL_MXFOLD: return 5;
    case HC_TL_FP8: return 6;
    }
    return 0;
}

static const char *const codec_names[HC_CODECS] = {
    NULL, "int4", "int4 sign-magnitude", "int8", "fp4 (E2M1)", "mxfold", "fp8 (E4M3)"};

/* dynamic shared memory of hc_mma_gemv_t<tok>: 4 warps x stages x (chunk + tok x 128) */
#define GEMV_SMEM(g, chunk, tok) \
    (4 * (size_t)(g)->kn.gemv_stages * ((size_t)(chunk) + (tok) * 128))
/* of hc_mma_gemv_t1: 4 warps x (HC_GEMV1_STAGES x (chunk + one activation row) + a zero row) */
#define GEMV1_SMEM(g, chunk) (4 * ((size_t)(g)->kn.gemv1_stages * ((size_t)(chunk) + 128) + 128))
/* of the warp-specialised kernels with toks-token tiles (hc_wgmma_gemm256, 64, 128):
 * alignment slack + 5 stages x round1024(activations, two chunks) */
#define WS_SMEM(toks, chunk) \
    (1024 + 5 * (((toks) * 128 + 2 * (size_t)(chunk) + 1023) / 1024 * 1024))
/* of hc_wgmma_gemm: alignment slack + stages x round1024(16K activations + two chunks) */
#define WGMMA_SMEM(chunk) \
    (1024 + 3 * ((16384 + 2 * (size_t)(chunk) + 1023) / 1024 * 1024))

/* The module for layers like p (built, or loaded from the JIT cache, on first use). */
static hc_status layer_module(hc_gpu *g, layer_kind k, int *index, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *cubin = NULL;
    size_t size = 0;
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < g->nmods; i++)
        if (module_serves(g->mods[i].kind, g->mods[i].generic, k)) {
            *index = i;
            goto out;
        }
    if (g->nmods == HC_MODULES) {
        st = hc_fail(&err, HC_UNSUPPORTED, "more than %d kinds of layers in one process",
                     HC_MODULES);
        goto out;
    }
    mma_module *M = &g->mods[g->nmods];
    memset(M, 0, sizeof *M);
    M->kind = k, M->generic = !g->kn.specialise;
    char def[4][32];
    const char *opts[16];
    int no = module_options(&g->kn, k, def, opts);
    st = hc_jit_compile("tile_mma.cu", g->arch, opts, no, &cubin, &size, &err);
    if (st) goto out;
    CU(cu.lib_load(&M->lib, cubin, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData(tile_mma)");
    CU(cu.lib_kernel(&M->gemv[0], M->lib, "hc_mma_gemv_t1"), "hc_mma_gemv_t1");
    CU(cu.lib_kernel(&M->gemv[1], M->lib, "hc_mma_gemv_t8"), "hc_mma_gemv_t8");
    CU(cu.lib_kernel(&M->gemv[2], M->lib, "hc_mma_gemv_t16"), "hc_mma_gemv_t16");
    CU(cu.lib_kernel(&M->gemm, M->lib, "hc_mma_gemm"), "hc_mma_gemm");
    CU(cu.lib_kernel(&M->wgmma, M->lib, "hc_wgmma_gemm"), "hc_wgmma_gemm");
    CU(cu.lib_kernel(&M->wide, M->lib, "hc_wgmma_gemm256"), "hc_wgmma_gemm256");
    /* every chunk size (at most 5376 bytes) fits */
    CU(cu.func_attr((const void *)M->gemv[0], cudaFuncAttributeMaxDynamicSharedMemorySize,
                    GEMV1_SMEM(g, 5376)), "shared memory of hc_mma_gemv_t1");
    CU(cu.func_attr((const void *)M->gemv[1], cudaFuncAttributeMaxDynamicSharedMemorySize,
                    GEMV_SMEM(g, 5376, 8)), "shared memory of hc_mma_gemv_t8");
    CU(cu.func_attr((const void *)M->gemv[2], cudaFuncAttributeMaxDynamicSharedMemorySize,
                    GEMV_SMEM(g, 5376, 16)), "shared memory of hc_mma_gemv_t16");
    CU(cu.func_attr((const void *)M->gemm, cudaFuncAttributeMaxDynamicSharedMemorySize,
                    3 * (2 * 5376 + 16384)), "shared memory of hc_mma_gemm");
    if (!strcmp(g->arch, "sm_90a")) {
        CU(cu.func_attr((const void *)M->wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                        WGMMA_SMEM(5376)), "shared memory of hc_wgmma_gemm");
        CU(cu.func_attr((const void *)M->wide, cudaFuncAttributeMaxDynamicSharedMemorySize,
                        WS_SMEM(256, 5376)), "shared memory of hc_wgmma_gemm256");
        if (g->kn.wgmma_mid) {
            CU(cu.lib_kernel(&M->ws[0], M->lib, "hc_wgmma_gemm64"), "hc_wgmma_gemm64");
            CU(cu.lib_kernel(&M->ws[1], M->lib, "hc_wgmma_gemm128"), "hc_wgmma_gemm128");
            CU(cu.func_attr((const void *)M->ws[0], cudaFuncAttributeMaxDynamicSharedMemorySize,
                            WS_SMEM(64, 5376)), "shared memory of hc_wgmma_gemm64");
            CU(cu.func_attr((const void *)M->ws[1], cudaFuncAttributeMaxDynamicSharedMemorySize,
                            WS_SMEM(128, 5376)), "shared memory of hc_wgmma_gemm128");
        }
    }
    *index = g->nmods++;
out:
    if (st && g->nmods < HC_MODULES && g->mods[g->nmods].lib) {
        cu.lib_unload(g->mods[g->nmods].lib);
        g->mods[g->nmods].lib = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    free(cubin);
    if (st) {
        *perr = err;
        hc_err_prefix(perr, "kernels for %s tiles: ", codec_names[k.codec]);
    }
    return st;
}

typedef struct {
    char *name;
    hc_tile_params p;
    hc_mma_params mp; /* the kernels' parameters (ldx is the unpadded K) */
    int mod;    /* index of its kernel module in hc_gpu */
    void *w;    /* the tensor's stored bytes, as in the container */
    void *perm; /* NAME.perm (I32 [K]) or NULL */
} gpu_layer;

struct hc_gpu_model {
    hc_gpu *g;
    gpu_layer *l;
    size_t n;
    uint64_t bytes;
    double seconds;
    pthread_mutex_t mu; /* guards the workspaces' growth */
    void *ws, *cnt, *xg;
    size_t ws_bytes, cnt_n, xg_bytes;
    uint64_t tl_off, tl_blocks; /* HC_DIAG_GEMV_TIMELINE: the last small-M call's records */
};

static int layer_cmp(const void *a, const void *b) {
    return strcmp(((const gpu_layer *)a)->name, ((const gpu_layer *)b)->name);
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void hc_gpu_model_free(hc_gpu_model *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        if (cu.loaded) cu.free_(m->l[i].w), cu.free_(m->l[i].perm);
        free(m->l[i].name);
    }
    if (cu.loaded) cu.free_(m->ws), cu.free_(m->cnt), cu.free_(m->xg);
    pthread_mutex_destroy(&m->mu);
    free(m->l);
    free(m);
}

hc_status hc_gpu_model_load(hc_gpu *g, hc_container *c, const char *only, hc_gpu_model **out,
                            char *msg, size_t msg_len) {
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
    pthread_mutex_init(&m->mu, NULL);
    if (!(m->l = calloc(nt + 1, sizeof *m->l))) {
        st = hc_fail(&err, HC_NOMEM, "out of memory");
        goto fail;
    }
    double t0 = wall_s();
    for (size_t i = 0; i < nt; i++) {
        const hc_tensor_info *t = hc_container_tensor(c, i);
        if (!t->layout_params || (only && strcmp(only, t->name))) continue;
        gpu_layer *L = &m->l[m->n];
        const int32_t *perm;
        st = hc_tile_layer(c, t->name, &t, &L->p, &perm, &err);
        if (st) goto fail;
        layer_kind k = kind_of(&L->p);
        st = gpu_runs(t, &L->p, k, &err);
        if (st) goto fail;
        const hc_tile_params *p = &L->p;
        L->mp = (hc_mma_params){p->tiles_n, p->tiles_k, p->chunk_bytes, p->N, p->K, p->K,
                                (unsigned)p->code_bytes, (unsigned)p->scale_bytes, p->S, k.lgs,
                                k.sk, p->zeros, (unsigned)p->zero_const, (float)p->global_div};
        L->name = hc_strdup(t->name);
        if (!L->name) {
            st = hc_fail(&err, HC_NOMEM, "out of memory");
            goto fail;
        }
        m->n++;
        CU(cu.malloc_(&L->w, t->length), "cudaMalloc(weights)");
        CU(cu.memcpy_(L->w, hc_container_stored(c, t), t->length, cudaMemcpyHostToDevice),
           "upload of weights");
        m->bytes += t->length;
        if (perm) {
            CU(cu.malloc_(&L->perm, L->p.K * 4), "cudaMalloc(perm)");
            CU(cu.memcpy_(L->perm, perm, L->p.K * 4, cudaMemcpyHostToDevice), "upload of perm");
            m->bytes += L->p.K * 4;
        }
        st = layer_module(g, k, &L->mod, &err);
        if (st) goto fail;
    }
    m->seconds = wall_s() - t0;
    qsort(m->l, m->n, sizeof *m->l, layer_cmp); /* hc_gpu_linear finds layers by bsearch */
    if (only && m->n == 0) {
        st = hc_fail(&err, HC_NOTFOUND, "'%s' is not a tiled tensor of the container (the GPU "
                     "runs tiled layouts only)", only);
        goto fail;
    }
    *out = m;
    return HC_OK;
out:
fail:
    hc_gpu_model_free(m);
    if (msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

void hc_gpu_model_stats(const hc_gpu_model *m, uint64_t *layers, uint64_t *bytes,
                        double *seconds) {
    if (layers) *layers = m->n;
    if (bytes) *bytes = m->bytes;
    if (seconds) *seconds = m->seconds;
}

/* Grows a device buffer (contents lost) to at least `want` bytes; zeroed when `zero`. */
static hc_status grow(void **buf, size_t *have, size_t want, bool zero, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    if (*have >= want) return HC_OK;
    CU(cu.sync(), "synchronise before growing a workspace");
    cu.free_(*buf);
    *buf = NULL, *have = 0;
    CU(cu.malloc_(buf, want), "cudaMalloc(workspace)");
    if (zero) { /* (on the legacy stream: done before a kernel on any stream reads it) */
        CU(cu.memset_(*buf, 0, want), "cudaMemset(workspace)");
        CU(cu.sync(), "synchronise after clearing a workspace");
    }
    *have = want;
out:
    if (st) *perr = err;
    return st;
}

hc_status hc_gpu_linear(hc_gpu_model *md, const char *name, uint32_t expert, const void *x,
                        uint64_t m, uint64_t k, void *y, uint64_t n, void *stream, char *msg,
                        size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    bool locked = false;
    hc_gpu *g = md->g;
    gpu_layer key = {.name = (char *)name};
    gpu_layer *L = md->n ? bsearch(&key, md->l, md->n, sizeof *md->l, layer_cmp) : NULL;
    if (!L) {
        st = hc_fail(&err, HC_NOTFOUND, "'%s' is not a layer of this GPU model", name);
        goto out;
    }
    const hc_tile_params *p = &L->p;
    if (k != p->K || n != p->N || expert >= p->E) {
        st = hc_fail(&err, HC_INVALID, "'%s' is [%llu, %llu] x %llu experts; called with K=%llu "
                     "N=%llu expert %u", name, (unsigned long long)p->N, (unsigned long long)p->K,
                     (unsigned long long)p->E, (unsigned long long)k, (unsigned long long)n,
                     expert);
        goto out;
    }
    if (m == 0) goto out;
    if (!x || !y) {
        st = hc_fail(&err, HC_INVALID, "'%s': null activation or output pointer", name);
        goto out;
    }
    if (m > 65535ull * 128) { /* the tiled kernels' grid.y: 128-token tiles (256 when wide) */
        st = hc_fail(&err, HC_INVALID, "'%s': M=%llu exceeds %llu tokens per call", name,
                     (unsigned long long)m, 65535ull * 128);
        goto out;
    }
    cudaStream_t s = (cudaStream_t)stream;
    pthread_mutex_lock(&md->mu);
    locked = true;
    hc_mma_params mp = L->mp;
    bool small = m <= 16;
    /* activations the kernels cannot read in place go through hc_gather_x: act-order
     * permutations, and shapes or addresses off the kernels' 16-byte copies of 8 columns */
    bool gather = L->perm || k % 8 || (uintptr_t)x % 16;
    const void *xin = x;
    if (gather) {
        uint64_t xb;
        if (!hc_mul_u64(m, p->Kp, &xb) || !hc_mul_u64(xb, 2, &xb)) {
            st = hc_fail(&err, HC_INVALID, "'%s': M=%llu overflows the activation buffer", name,
                         (unsigned long long)m);
            goto out;
        }
        st = grow(&md->xg, &md->xg_bytes, xb, false, &err);
        if (st) goto out;
        unsigned long long mm = m, kk = k, ld = p->Kp;
        void *args[] = {(void *)&x, &mm, &kk, &L->perm, &md->xg, &ld};
        uint64_t blocks = (m * p->Kp + 255) / 256;
        dim3 grid = {(unsigned)(blocks < 4096 ? blocks : 4096), 1, 1}, block = {256, 1, 1};
        CU(cu.launch((const void *)g->gather, grid, block, args, 0, s), "launch hc_gather_x");
        xin = md->xg;
        mp.ldx = p->Kp;
    }
    unsigned long long e = expert, mm = m;
    if (small) {
        /* M = 1: hc_mma_gemv_t1, whose stages hold one activation row (more stages in the same
         * shared memory: more weight bytes in flight) */
        const int gi = m == 1 ? 0 : m <= 8 ? 1 : 2;
        size_t smem = gi == 0 ? GEMV1_SMEM(g, p->chunk_bytes)
                              : GEMV_SMEM(g, p->chunk_bytes, gi == 2 ? 16 : 8);
        mma_module *M = &g->mods[L->mod];
        if (!M->gemv_blocks[gi]) {
            int b = 0;
            if (cu.occupancy(&b, (const void *)M->gemv[gi], 128, smem) != cudaSuccess || b < 1)
                b = 2;
            M->gemv_blocks[gi] = b;
        }
        /* K split over blocks so that the grid is one wave of resident blocks: a block streams
         * its tiles at the memory's pace (measured, with the alternatives: bench/NOTES.md
         * v19-v24, v28). Each warp keeps at least two tiles. */
        unsigned ksplit = hc_gemv_ksplit(p->tiles_n, p->tiles_k, (uint64_t)g->sms,
                                         (uint64_t)M->gemv_blocks[gi]);
        if (ksplit > 1 || g->kn.diag == 2) {
            size_t tok = gi == 2 ? 16 : 8, part = (size_t)ksplit * p->tiles_n * 64 * tok * 4;
            /* HC_DIAG_GEMV_TIMELINE: 5 words per block after the partial sums */
            size_t tl = g->kn.diag == 2 ? (size_t)ksplit * p->tiles_n * 40 : 0;
            md->tl_off = part, md->tl_blocks = tl / 40;
            st = grow(&md->ws, &md->ws_bytes, part + tl, false, &err);
            if (!st && ksplit > 1) st = grow(&md->cnt, &md->cnt_n, p->tiles_n * 4, true, &err);
            if (st) goto out;
        }
        void *args[] = {&L->w, &mp, &e, (void *)&xin, &mm, &y, &md->ws, &md->cnt};
        dim3 grid = {(unsigned)p->tiles_n, ksplit, 1}, block = {128, 1, 1};
        if (g->kn.pdl && cu.launch_ex) {
            /* HC_GPU_PDL: programmatic dependent launch, so that this kernel's blocks start and
             * fetch their first weight tiles while the kernel before it finishes (the kernel
             * waits for it -- hc_gather_x included -- before reading activations or writing
             * anything; modules are built with -DHC_GEMV_PDL=1) */
            cudaLaunchAttribute at;
            memset(&at, 0, sizeof at);
            at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at.val.programmaticStreamSerializationAllowed = 1;
            cudaLaunchConfig_t cfg = {0};
            cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = s;
            cfg.attrs = &at, cfg.numAttrs = 1;
            CU(cu.launch_ex(&cfg, (const void *)M->gemv[gi], args), "launch hc_mma_gemv (PDL)");
        } else {
            CU(cu.launch((const void *)M->gemv[gi], grid, block, args, smem, s),
               "launch hc_mma_gemv");
        }
    } else {
        /* HC_GPU_GEMM (read per call, for tests and measurements) forces one kernel: mma
         * (mma.sync), wgmma (the 128-token wgmma kernel), ws64 / ws128 / ws256 (the
         * warp-specialised kernel with that token tile); an error where it is not available */
        const char *which = getenv("HC_GPU_GEMM");
        static const char *const forced[] = {"ws64", "ws128", "ws256", "wgmma", "mma"};
        int force = -1;
        for (int i = 0; which && *which && i < 5; i++)
            if (!strcmp(which, forced[i])) force = i;
        if (which && *which && force < 0) {
            st = hc_fail(&err, HC_USAGE, "'%s': HC_GPU_GEMM='%s' is none of ws64, ws128, ws256, "
                         "wgmma, mma", name, which);
            goto out;
        }
        bool wg = !strcmp(g->arch, "sm_90a") && force != 4;
        const mma_module *M = &g->mods[L->mod];
        bool have_ws = wg && cu.tmap_encode && M->wide, have_mid = have_ws && g->kn.wgmma_mid;
        if ((force >= 0 && force < 4 && !wg) || (force == 2 && !have_ws) ||
            (force >= 0 && force < 2 && !have_mid)) {
            st = hc_fail(&err, HC_UNSUPPORTED, "'%s': HC_GPU_GEMM=%s: that kernel is not "
                         "available here (%s%s%s)", name, which, g->arch,
                         cu.tmap_encode ? "" : ", no cuTensorMapEncodeTiled",
                         force < 2 && !g->kn.wgmma_mid ? ", HC_WGMMA_MID=0" : "");
            goto out;
        }
        size_t smem = wg ? WGMMA_SMEM(p->chunk_bytes) : 3 * (2 * p->chunk_bytes + 16384);
        /* On sm_90a the warp-specialised kernels, their activation tiles read by TMA through a
         * tensor map of X made for this call: with HC_WGMMA_MID (default) 64-, 128- and
         * 256-token tiles -- the largest tile at most half empty, made smaller while the grid
         * would leave a quarter of the SMs idle (HC_WGMMA_WIDE is then not consulted); with
         * HC_WGMMA_MID=0 256-token tiles for M > 128 (HC_WGMMA_WIDE=0: none). The others run
         * on the 128-token hc_wgmma_gemm (mma.sync off Hopper). */
        unsigned toks = 0; /* of the warp-specialised kernel; 0: none */
        if (force >= 0) {
            toks = force < 3 ? 64u << force : 0;
        } else if (have_mid) {
            uint64_t pairs = (p->tiles_n + 1) / 2;
            toks = m > 128 ? 256 : m > 64 ? 128 : 64;
            while (toks > 64 && pairs * ((m + toks - 1) / toks) * 4 < (uint64_t)g->sms * 3)
                toks /= 2;
        } else if (have_ws && g->kn.wgmma_wide && m > 128) {
            toks = 256;
        }
        if (toks && (m + toks - 1) / toks > 65535) { /* grid.y */
            st = hc_fail(&err, HC_UNSUPPORTED, "'%s': M=%llu needs more than 65535 blocks of %u "
                         "tokens (grid.y)", name, (unsigned long long)m, toks);
            goto out;
        }
        CUtensorMap tmx;
        if (toks) {
            cuuint64_t dims[2] = {p->K, m}, strides[1] = {mp.ldx * 2};
            cuuint32_t box[2] = {64, toks}, estr[2] = {1, 1};
            CUresult r = cu.tmap_encode(&tmx, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)xin,
                                        dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        CU_TENSOR_MAP_SWIZZLE_128B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            if (r != CUDA_SUCCESS) {
                st = hc_fail(&err, HC_IO, "'%s': cuTensorMapEncodeTiled of the activations "
                             "[%llu x %llu] failed (CUresult %d)", name, (unsigned long long)m,
                             (unsigned long long)p->K, (int)r);
                goto out;
            }
            smem = WS_SMEM(toks, p->chunk_bytes);
        }
        unsigned tok_tile = toks ? toks : 128;
        void *args[] = {&L->w, &mp, &e, (void *)&xin, &mm, &y, &tmx};
        dim3 grid = {(unsigned)((p->tiles_n + 1) / 2), (unsigned)((m + tok_tile - 1) / tok_tile), 1};
        dim3 block = {toks ? 384u : 256u, 1, 1};
        const cudaKernel_t kerns[] = {M->ws[0], M->ws[1], M->wide, M->wgmma, M->gemm};
        static const char *const what[] = {"launch hc_wgmma_gemm64", "launch hc_wgmma_gemm128",
                                           "launch hc_wgmma_gemm256", "launch hc_wgmma_gemm",
                                           "launch hc_mma_gemm"};
        const int ki = toks == 64 ? 0 : toks == 128 ? 1 : toks == 256 ? 2 : wg ? 3 : 4;
        CU(cu.launch((const void *)kerns[ki], grid, block, args, smem, s), what[ki]);
    }
out:
    if (locked) pthread_mutex_unlock(&md->mu);
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

hc_status hc_gpu_diag_timeline(hc_gpu_model *md, uint64_t *rec, size_t cap, size_t *n,
                               char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    *n = 0;
    if (md->g->kn.diag != 2 || !md->tl_blocks) {
        st = hc_fail(&err, HC_INVALID, "no timeline: open the GPU with HC_DIAG_GEMV_TIMELINE=1 "
                     "and run a layer with M <= 16 first");
        goto out;
    }
    size_t want = md->tl_blocks * 5 < cap ? md->tl_blocks * 5 : cap / 5 * 5;
    CU(cu.sync(), "synchronise before reading the timeline");
    CU(cu.memcpy_(rec, (const char *)md->ws + md->tl_off, want * 8, cudaMemcpyDeviceToHost),
       "cudaMemcpy(timeline)");
    *n = want / 5;
out:
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

static uint16_t bf16_rne(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

hc_status hc_gpu_linear_host(hc_gpu_model *md, const char *name, uint32_t expert, const float *x,
                             uint64_t m, uint64_t k, float *y, uint64_t n, char *msg,
                             size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *dx = NULL, *dy = NULL;
    uint16_t *hx = NULL, *hy = NULL;
    uint64_t xe, ye;
    if (!hc_mul_u64(m, k, &xe) || !hc_mul_u64(m, n, &ye) || xe > (1ull << 40) ||
        ye > (1ull << 40)) {
        st = hc_fail(&err, HC_INVALID, "'%s': M=%llu is too large", name, (unsigned long long)m);
        goto out;
    }
    hx = malloc(xe * 2 + 2), hy = malloc(ye * 2 + 2);
    if (!hx || !hy) {
        st = hc_fail(&err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < xe; i++) hx[i] = bf16_rne(x[i]);
    CU(cu.malloc_(&dx, xe * 2 + 16), "cudaMalloc(x)");
    CU(cu.malloc_(&dy, ye * 2 + 16), "cudaMalloc(y)");
    CU(cu.memcpy_(dx, hx, xe * 2, cudaMemcpyHostToDevice), "upload X");
    CU(cu.memset_(dy, 0xFF, ye * 2), "poison Y"); /* NaN wherever nothing is written */
    st = hc_gpu_linear(md, name, expert, dx, m, k, dy, n, NULL, err.msg, sizeof err.msg);
    if (st) goto out;
    CU(cu.sync(), name);
    CU(cu.memcpy_(hy, dy, ye * 2, cudaMemcpyDeviceToHost), "download Y");
    for (uint64_t i = 0; i < ye; i++) {
        uint32_t u = (uint32_t)hy[i] << 16;
        memcpy(&y[i], &u, 4);
    }
out:
    if (cu.loaded) cu.free_(dx), cu.free_(dy);
    free(hx), free(hy);
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

hc_status hc_gpu_precompile(hc_container *c, const char *arch, unsigned *built, char *msg,
                            size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    kernel_knobs kn;
    knobs_from_env(&kn);
    layer_kind seen[HC_MODULES];
    unsigned n = 0;
    *built = 0;
    for (size_t i = 0; i < hc_container_tensor_count(c) && !st; i++) {
        const hc_tensor_info *t = hc_container_tensor(c, i);
        hc_tile_params p;
        const int32_t *perm;
        if (!t->layout_params) continue;
        st = hc_tile_layer(c, t->name, &t, &p, &perm, &err);
        if (st) break;
        layer_kind k = kind_of(&p);
        hc_err skip = {0};
        bool dup = gpu_runs(t, &p, k, &skip) != HC_OK; /* no GPU kernel: nothing to build */
        for (unsigned j = 0; j < n && !dup; j++) dup = module_serves(seen[j], !kn.specialise, k);
        if (dup) continue;
        if (n == HC_MODULES) {
            st = hc_fail(&err, HC_UNSUPPORTED, "more than %d kinds of layers", HC_MODULES);
            break;
        }
        seen[n++] = k;
        char def[4][32];
        const char *opts[16];
        int no = module_options(&kn, k, def, opts);
        void *cubin = NULL;
        size_t size = 0;
        st = hc_jit_compile("tile_mma.cu", arch, opts, no, &cubin, &size, &err);
        free(cubin);
        if (st) hc_err_prefix(&err, "kernels for '%s' (%s): ", t->name, codec_names[k.codec]);
        else (*built)++;
    }
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}
