/* gpu_int.h: what the GPU runtime's files share (gpu.c: device and models; gpu_modules.c: the
 * kernel modules; gpu_linear.c: choose + launch; gpu_ref.c: the reference kernel; gpu_diag.c,
 * bench builds only: measurements): the handles' insides and the module builder. */
#ifndef HC_GPU_INT_H
#define HC_GPU_INT_H

#include <pthread.h>
#include <string.h>

#include "gpu_cuda.h"
#include "gpu_families.h"
#include "gpu_plan.h"
#include "tile_layer.h"

#define HC_MODULES 48 /* kernel modules one process builds at most (kinds of layers) */

/* The kind of layer a tiled tensor is, as the kernel modules are specialised: codec (0: no GPU
 * kernel), scale kind, log2 of k16 steps per scale group, zero points -- the module's
 * -DHC_CODEC, -DHC_SK, -DHC_LGS, -DHC_ZP. */
typedef struct {
    unsigned codec, sk, lgs, zp;
} hc_gpu_kind;

/* One build of kernels/tile_mma.cu for a kind of layer: the kernels of the families that run on
 * the device (NULL for the others). */
typedef struct {
    hc_gpu_kind kind;
    cudaLibrary_t lib;
    cudaKernel_t k[HC_GK_COUNT];
    cudaLibrary_t glib; /* kernels/moe_gemm.cu for this kind, built on first MoE use */
    cudaKernel_t gk[HC_GMK_COUNT];
} hc_gpu_module;

struct hc_gpu {
    int device, sms;
    int smem_sm; /* shared memory of a multiprocessor, bytes */
    int smem_block; /* the most a block may opt in to, bytes */
    uint64_t mem_gbps; /* the memory's peak rate, GB/s (0: the driver did not say) */
    char arch[16];
    cudaLibrary_t lib;
    cudaKernel_t gemm_ref, stream_read, gather;
    cudaLibrary_t moe_lib; /* kernels/moe_route.cu, built with the first MoE layer */
    cudaKernel_t moe_route, moe_route_count, moe_route_place, moe_expand, moe_act, moe_finalize;
    int moe_route_smem; /* the routing sorts' dynamic shared memory set so far (bytes) */
    pthread_mutex_t mu; /* guards the lazily built modules */
    hc_gpu_module mods[HC_MODULES];
    int nmods;
#ifdef HC_BENCH_DIAG
    unsigned diag; /* gpu_diag.h: the small-M kernels' measurement mode (-DHC_GEMV_DIAG) */
#endif
};

typedef struct {
    char *name;
    hc_tile_params p;
    hc_mma_params mp;   /* the kernels' parameters (ldx is the unpadded K) */
    hc_gpu_shape shape; /* what the chooser reads */
    int mod;            /* index of its kernel module in hc_gpu */
    void *w;            /* the tensor's stored bytes, as in the container */
    void *perm;         /* NAME.perm (I32 [K]) or NULL */
    uint32_t e0;        /* a fused tensor's first expert here (hc_gpu_model_load_experts), else 0 */
} hc_gpu_layer;

struct hc_gpu_model {
    hc_gpu *g;
    hc_gpu_layer *l;
    size_t n;
    uint64_t bytes;
    double seconds;
    int forced; /* hc_gpu_model_force_kernel: HC_GPU_KERNEL_AUTO or the kernel */
    pthread_mutex_t mu; /* guards the workspaces' growth */
    void *ws, *cnt, *xg;
    size_t ws_bytes, cnt_n, xg_bytes;
    uint32_t e0, e1; /* the experts of the MoE layers it holds: [e0, e1) */
    int moe_forced; /* a grouped MoE kernel (hc_gpu_moe_kernel) or HC_GPU_KERNEL_AUTO */
    bool act_apart; /* "moe-act-apart" forced: the MoE activation in its own launch */
    bool w8_lap;    /* "moe-w8-lap" forced: moe-w8 on one block (gpu_plan.h HC_GPU_MOE_W8_LAP) */
    struct hc_gpu_moe_layer *moe; /* gpu_moe.h: the record's layers, sorted by name */
    size_t nmoe;
    struct hc_gpu_moe_ws *mws;    /* their workspace, sized at load */
#ifdef HC_BENCH_DIAG
    uint64_t tl_off, tl_blocks; /* timeline: where the last small-M call's records are */
    unsigned moe_stop;          /* hc__gpu_diag_moe_stages: the last MoE stage run (0: all) */
#endif
};

/* The measurement mode modules of g are built with (0 outside bench builds). */
#ifdef HC_BENCH_DIAG
#define HC_GPU_DIAG(g) ((g)->diag)
#else
#define HC_GPU_DIAG(g) 0u
#endif

/* Whether hc_gpu_moe stops after stage n (bench builds: hc__gpu_diag_moe_stages). */
#ifdef HC_BENCH_DIAG
#define HC_GPU_MOE_STOP(md, n) ((md)->moe_stop && (md)->moe_stop <= (n))
#else
#define HC_GPU_MOE_STOP(md, n) 0
#endif

/* float32 -> bf16, nearest even (NaN stays a quiet NaN): the host wrappers' rounding. */
static inline uint16_t hc__bf16_rne(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

/* n bf16 values (their bits in h) as float32 into y: the host wrappers' results. */
static inline void hc__f32_of_bf16(float *y, const uint16_t *h, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)h[i] << 16;
        memcpy(&y[i], &u, 4);
    }
}

/* Orders layers by name (the model's layers are sorted: hc_gpu_linear finds them by bsearch). */
int hc__gpu_layer_cmp(const void *a, const void *b);
/* The device as the chooser sees it. */
hc_gpu_caps hc__gpu_caps_of(const hc_gpu *g);
/* The kind of tiled layer t (parameters p), or HC_UNSUPPORTED naming the layer and the reason
 * when no GPU kernel runs it. */
hc_status hc__gpu_layer_kind(const hc_tensor_info *t, const hc_tile_params *p, hc_gpu_kind *k,
                            hc_err *err);
/* HC_UNSUPPORTED naming layer t and the stored byte where len bytes of its chunks (data) hold
 * a 4-bit zero point the GPU decode does not take (contract/ hc__tile_gpu_rule_zeros): a
 * container tiled before repack refused them. */
hc_status hc__gpu_layer_zeros(const hc_tensor_info *t, const hc_tile_params *p,
                              const uint8_t *data, uint64_t len, hc_err *err);
/* The reference module (kernels/tile_gemm.cu: the reference GEMM, the stream read, the gather)
 * for arch, as hc_gpu_open builds it -- one place for its options, which the cache keys. */
hc_status hc__gpu_ref_compile(const char *arch, void **cubin, size_t *size, hc_err *err);
/* Builds (or loads from the NVRTC cache) the tile_mma.cu module of kind k for arch, with the
 * options of the measurement mode diag (0: none): the one place that says a module's options,
 * for hc_gpu_model_load and hc_gpu_precompile alike. */
hc_status hc__gpu_kind_compile(const char *file, const char *arch, hc_gpu_kind k, unsigned diag,
                              void **cubin, size_t *size, hc_err *err);
/* The grouped MoE kernels (kernels/moe_gemm.cu) of module mod, built and loaded on first use. */
hc_status hc__gpu_moe_module(hc_gpu *g, int mod, hc_err *err);
/* gpu_moe_load.c: the container's MoE layers for model md (after its layers are loaded and sorted;
 * only: that one layer, NULL: all): expert tables, biases, the routing module and the
 * workspace. A layer the GPU cannot run keeps the reason, which hc_gpu_moe reports. */
hc_status hc__gpu_moe_load(hc_gpu_model *md, hc_container *c, const char *only, hc_err *err);
/* The record of MoE layer `layer` (NULL: none of that name), and whether tensor NAME is one of
 * its expert layers (any expert): what hc_gpu_model_load(..., only = an MoE layer) uploads. */
const hc_moe_layer_info *hc__gpu_moe_record(hc_container *c, const char *layer);
bool hc__gpu_moe_layer_has(const hc_moe_layer_info *l, const char *name);
/* What tensor NAME is to a model holding the experts [e0, e1): not an expert layer of the MoE
 * record (HC_GPU_MOE_WHOLE), a per-expert layer of an expert elsewhere (HC_GPU_MOE_ELSEWHERE),
 * one here (WHOLE), or a fused [E, N, K] layer of which the experts [*first, *first + *count)
 * are here (HC_GPU_MOE_SLICE; *count may run past E). */
enum { HC_GPU_MOE_WHOLE, HC_GPU_MOE_ELSEWHERE, HC_GPU_MOE_SLICE };
int hc__gpu_moe_tensor_part(hc_container *c, const char *name, uint32_t e0, uint32_t e1,
                            uint32_t *first, uint32_t *count);
void hc__gpu_moe_free(hc_gpu_model *md);
/* Forcing grouped kernel `forced` (an hc_gpu_moe_kernel; hc_gpu_model_force_kernel): where a
 * running layer's chunk with it needs more than md's MoE workspace holds (a tile wider than
 * the runtime's choice pads more rows), a new workspace sized for both replaces the old one
 * (the device synchronised first); on an error the old one stays. */
hc_status hc__gpu_moe_ws_fit(hc_gpu_model *md, int forced, hc_err *err);
/* A tensor map over rows x k bf16 (row stride ld elements), box 64 x toks (x toks / 2 past 256
 * tokens: config.h HC_WS_BOX), 128-byte swizzle, as the warp-specialised kernels read
 * activations (gpu_linear.c); errors name `what`. */
hc_status hc__gpu_tmap_rows(CUtensorMap *tm, const void *base, uint64_t rows, uint64_t k,
                           uint64_t ld, unsigned toks, const char *what, hc_err *err);
/* Launches kernel k with grid, block and shared memory on s, under programmatic dependent
 * launch when pdl and the runtime has cudaLaunchKernelExC (gpu_linear.c). */
hc_status hc__gpu_launch(cudaKernel_t k, const unsigned grid[3], unsigned block, size_t smem,
                        bool pdl, void **args, cudaStream_t s, const char *entry, hc_err *err);
/* The module of g for layers of kind k, built and loaded on first use; *index is its place. */
hc_status hc__gpu_layer_module(hc_gpu *g, hc_gpu_kind k, int *index, hc_err *err);
/* The resident blocks per SM of the small-M kernels of module mod with layer p's shared memory
 * (hc_gpu_shape.gemv_occ; 2 where CUDA cannot tell). */
void hc__gpu_gemv_occupancy(const hc_gpu *g, int mod, const hc_tile_params *p, unsigned occ[3]);
/* The same for the grouped small-M kernels of module mod (its MoE kernels loaded) at tiles of
 * chunk bytes: occ[1] moe-t8, occ[2] moe-t16 (occ[0] untouched) -- their shared memory is not
 * the dense kernels' (moe-t16 takes one stripe a block where dense t16 may take two). */
void hc__gpu_moe_gemv_occupancy(const hc_gpu *g, int mod, uint64_t chunk, unsigned occ[3]);

#ifdef HC_BENCH_DIAG
/* Bench builds (gpu_diag.c): the small-M workspace bytes of choice ch with the timeline's
 * records after the partial sums (ws: the bytes without them). */
size_t hc__gpu_diag_workspace(hc_gpu_model *md, const hc_gpu_choice *ch, size_t ws);
#endif

#endif
