/* hcrt.h: public API of the hconvert runtime (container reader, verification, status codes).
 * A runtime user links libhcrt alone; nothing here depends on the converter. */
#ifndef HCRT_H
#define HCRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HC_VERSION_STRING "0.1.0"

/* What the shared libraries export: the declarations of the include/ headers and nothing else (library
 * code is built with -fvisibility=hidden; tests/install checks the exported symbols). */
#ifndef HC_API
#define HC_API __attribute__((visibility("default")))
#endif

/* Status codes: number, name, message. Numbers are stable. */
#define HC_STATUS_MAP(X)                                              \
    X(0, OK, "success")                                               \
    X(1, INVALID, "invalid input")                                    \
    X(2, USAGE, "bad usage")                                          \
    X(3, IO, "i/o error")                                             \
    X(4, NOMEM, "out of memory")                                      \
    X(5, UNSUPPORTED, "unsupported input")                            \
    X(6, CHECKSUM, "checksum mismatch")                               \
    X(7, NOTFOUND, "not found")                                       \
    X(8, INTERNAL, "internal error")

typedef enum {
#define HC_STATUS_ENUM(num, name, msg) HC_##name = num,
    HC_STATUS_MAP(HC_STATUS_ENUM)
#undef HC_STATUS_ENUM
} hc_status;

HC_API const char *hc_strerror(hc_status s);  /* static text per code */
HC_API const char *hc_status_name(hc_status s); /* "HC_INVALID" */
/* CLI exit status for a code: 0 ok, 1 invalid input or failed check, 2 usage, 3 I/O/internal. */
HC_API int hc_status_exit_code(hc_status s);

/* Element types of tensors (safetensors names). X(name, bits) */
#define HC_DTYPE_MAP(X)                                                        \
    X(BOOL, 8) X(U8, 8) X(I8, 8) X(F8_E5M2, 8) X(F8_E4M3, 8) X(F8_E8M0, 8)     \
    X(F8_E4M3FNUZ, 8) X(F8_E5M2FNUZ, 8) X(F4, 4) X(F6_E2M3, 6) X(F6_E3M2, 6)   \
    X(F16, 16) X(BF16, 16) X(I16, 16) X(U16, 16) X(F32, 32) X(I32, 32)         \
    X(U32, 32) X(F64, 64) X(I64, 64) X(U64, 64) X(C64, 64)

typedef enum {
    HC_DTYPE_INVALID = 0,
#define HC_DTYPE_ENUM(name, bits) HC_DT_##name,
    HC_DTYPE_MAP(HC_DTYPE_ENUM)
#undef HC_DTYPE_ENUM
    HC_DTYPE_COUNT
} hc_dtype;

HC_API const char *hc_dtype_name(hc_dtype d);
HC_API unsigned hc_dtype_bits(hc_dtype d);
HC_API hc_dtype hc_dtype_from_name(const char *name); /* HC_DTYPE_INVALID when unknown */

#define HC_MAX_DIMS 8

/* ---- container ---- */
typedef struct hc_container hc_container;

/* The container file `convert` writes into its output folder. */
#define HC_CONTAINER_FILE "model.hconvert"

/* The container at path: path itself when it is a container file (checked by its magic), or
 * path/model.hconvert when path is a folder holding one; NULL otherwise. Caller frees. */
HC_API char *hc_container_locate(const char *path);

typedef enum { HC_ENC_RAW = 0, HC_ENC_ZSTD = 1 } hc_encoding;

typedef struct {
    const char *name;
    hc_dtype dtype;
    int ndim;
    uint64_t shape[HC_MAX_DIMS];        /* logical */
    uint64_t padded_shape[HC_MAX_DIMS]; /* as stored */
    const char *layout;                 /* layout id, "source" for passthrough */
    uint32_t layout_version;
    uint64_t offset, length;            /* stored bytes in the file */
    hc_encoding encoding;
    uint64_t raw_length;                /* bytes after decoding */
    uint64_t hash;                      /* XXH3-64 of the stored bytes */
    const char *layout_params;          /* JSON object text for tiled layouts, or NULL */
} hc_tensor_info;

/* Opens and validates a container: preamble, header hash, every header field, offsets.
 * On failure *out is NULL and msg (if given, msg_len bytes) receives the detailed message. */
HC_API hc_status hc_container_open(const char *path, int verify_tensors, hc_container **out,
                            char *msg, size_t msg_len);
HC_API void hc_container_free(hc_container *c); /* accepts NULL */

HC_API const char *hc_container_errmsg(const hc_container *c);
HC_API size_t hc_container_tensor_count(const hc_container *c);
HC_API const hc_tensor_info *hc_container_tensor(const hc_container *c, size_t i);
HC_API const hc_tensor_info *hc_container_find(const hc_container *c, const char *name);
/* The raw JSON header (NUL-terminated) and model metadata object text. */
HC_API const char *hc_container_header_json(const hc_container *c, size_t *len);
HC_API uint64_t hc_container_file_size(const hc_container *c);
HC_API void hc_container_version(const hc_container *c, unsigned *major, unsigned *minor);

/* Stored bytes of a tensor, straight from the mapping (encoded form). */
HC_API const void *hc_container_stored(const hc_container *c, const hc_tensor_info *t);
/* Decoded bytes: for raw tensors a pointer into the mapping (*owned = NULL); for zstd a new
 * buffer of raw_length bytes the caller frees through *owned, refused (naming the tensor)
 * when raw_length is above the handle's HC_CONTAINER_LIMIT_ZSTD_RAW or the stored bytes are
 * not one zstd frame that declares and decodes to raw_length. */
HC_API hc_status hc_container_tensor_data(hc_container *c, const hc_tensor_info *t, const void **data,
                                   void **owned);

/* Limits a container handle applies when it decodes tensors (hc_container_tensor_data and
 * verify), set after open with hc_container_set_limit. A value above the format's own limit
 * (docs/container.md) is refused with HC_USAGE. */
typedef enum {
    HC_CONTAINER_LIMIT_ZSTD_RAW = 0 /* bytes one zstd tensor may decode to (default and at most
                                       the format's 64 MiB) */
} hc_container_limit;
HC_API hc_status hc_container_set_limit(hc_container *c, hc_container_limit which, uint64_t value);

/* MoE layers (docs/container.md, "moe_layers"): the structure convert records for each
 * mixture-of-experts layer, checked at open against the tensor table (every named layer
 * exists for every expert, the shapes agree, E is consistent: a bad record refuses the
 * container, naming the layer and the rule). A container without the record (written before
 * it existed) opens as before with a count of 0: convert the checkpoint again to get it.
 * Names are linear layers as hc_linear_shape takes them (a tiled tensor NAME, else the source
 * NAME.weight); an expert's layer name has one '*' standing for its decimal id. */
typedef enum { HC_MOE_PER_EXPERT = 0, HC_MOE_FUSED = 1 } hc_moe_layout; /* fused: [E, N, K] */
typedef enum { HC_MOE_STACKED = 0, HC_MOE_INTERLEAVED = 1 } hc_moe_order;
typedef enum { HC_MOE_SILU = 0, HC_MOE_SWIGLU_CLAMP = 1 } hc_moe_act;
typedef struct {
    const char *name;     /* the block, "model.layers.0.mlp" */
    uint32_t experts;     /* E */
    hc_moe_layout layout; /* PER_EXPERT: gate/up/down name one layer per expert ('*') */
    /* gate [I, H] and up [I, H] per expert, or gate_up [2I, H] (the other two NULL) with its
     * row order: STACKED (gate rows 0..I-1, then up) or INTERLEAVED (row 2i gate_i, 2i+1
     * up_i); down [H, I]. Biases ([E, 2I], [E, H] source tensors) or NULL. */
    const char *gate, *up, *gate_up, *down, *gate_up_bias, *down_bias;
    hc_moe_order gate_up_order;
    /* SILU: y = silu(gate) * up. SWIGLU_CLAMP (gpt-oss): gate clamped to at most limit, up to
     * [-limit, limit], y = gate * sigmoid(alpha * gate) * (up + 1). alpha, limit 0 for SILU. */
    hc_moe_act activation;
    double alpha, limit;
    const char *router; /* the router linear layer [E, H] */
    /* shared expert, dense beside the routed ones (Qwen2-MoE, DeepSeek), or all NULL; its
     * sigmoid gate [1, H] (Qwen2-MoE) or NULL */
    const char *shared_gate, *shared_up, *shared_down, *shared_expert_gate;
} hc_moe_layer_info;
HC_API size_t hc_container_moe_count(const hc_container *c);
/* Layer i of the record (NULL past the count), its strings valid while c is open. */
HC_API const hc_moe_layer_info *hc_container_moe(const hc_container *c, size_t i);

/* Recomputes every hash and checks every byte of the file (padding must be zero; each zstd
 * tensor is one frame that decodes to its raw_length, checked through a fixed-size buffer).
 * Returns HC_OK or the first failure; *nbad counts failing items. */
HC_API hc_status hc_container_verify(hc_container *c, uint64_t *nbad);

/* ---- CPU executor ---- */
/* Y[m, n] = X[m, k] * W^T for the linear layer NAME of a container, straight from its stored
 * bytes: a tiled module (any layout of docs/layouts.md; act-order applied through NAME.perm) or
 * an unquantized source tensor NAME.weight. float32 in and out, float32 accumulation, OpenMP
 * across rows of W. For tensors holding several experts, expert selects one (else 0). On
 * failure msg (msg_len bytes) names the tensor and the rule. */
HC_API hc_status hc_cpu_linear(hc_container *c, const char *name, uint32_t expert, const float *x,
                        uint64_t m, uint64_t k, float *y, uint64_t n, char *msg, size_t msg_len);
/* MoE reference: for each token t and slot j of its top-k, row t*topk+j of y (t*topk rows of
 * n) = weights[t, j] * X[t] W_e^T with e = ids[t, j]. NAME is either a tensor holding all
 * experts (gpt-oss style) or a per-expert layer named without its id ("...experts.gate_proj"
 * for "...experts.<e>.gate_proj"). *n receives N. */
HC_API hc_status hc_cpu_moe(hc_container *c, const char *name, const float *x, uint64_t tokens,
                     uint64_t k, const int32_t *ids, const float *weights, uint64_t topk,
                     float **y, uint64_t *n, char *msg, size_t msg_len);
/* The whole MoE block LAYER of the container's record (hc_container_moe: "model.layers.0.mlp")
 * on the CPU: for each token t, y[t] (h floats; h is the experts' H) = the sum over the slots
 * j = 0..topk-1, in that order, of weights[t, j] * down_e(act(gate_e(x[t]), up_e(x[t]))) with
 * e = ids[t, j] (gate_up split by the record's order; biases added after gate_up and after
 * down where the record names them; act SiLU or gpt-oss's clamped SwiGLU), then the shared
 * expert, times sigmoid of its 1-row gate where there is one. An id outside [0, E) contributes
 * nothing (expert parallelism: a rank's tokens routed elsewhere). float32 throughout; rows
 * routed to one expert run as one hc_cpu_linear call (same bits as one row at a time).
 * HC_NOTFOUND when LAYER is not in the record; errors name the layer, the expert and the
 * first token/slot routed to it. */
HC_API hc_status hc_cpu_moe_block(hc_container *c, const char *layer, const float *x,
                                  uint64_t tokens, uint64_t h, const int32_t *ids,
                                  const float *weights, uint64_t topk, float *y, char *msg,
                                  size_t msg_len);
/* The (n, k, experts) of the linear layer NAME, for sizing inputs and outputs. */
HC_API hc_status hc_linear_shape(hc_container *c, const char *name, uint64_t *n, uint64_t *k,
                          uint64_t *experts, char *msg, size_t msg_len);

/* ---- GPU ---- */
typedef struct hc_gpu hc_gpu;
/* Loads the CUDA runtime and NVRTC (at run time: without them the CPU paths still work),
 * picks device 0 and compiles (or loads from the cache) the kernels for its architecture.
 * HC_UNSUPPORTED when there is no CUDA runtime, no NVRTC or no device (or HC_NO_GPU is set
 * in the environment). */
HC_API hc_status hc_gpu_open(hc_gpu **out, char *msg, size_t msg_len);
HC_API void hc_gpu_free(hc_gpu *g); /* accepts NULL */
HC_API const char *hc_gpu_arch(const hc_gpu *g); /* "sm_90a" */
/* The device memory's peak rate in GB/s as the driver states it (memory clock x bus width; 0
 * where it does not): the benchmarks print it beside the measured stream rate. */
HC_API uint64_t hc_gpu_mem_gbps(const hc_gpu *g);
/* The reference GPU GEMM: Y = X W^T for the tiled layer NAME, float32 host buffers, the
 * same arithmetic and order as hc_cpu_linear (bit-identical results). */
HC_API hc_status hc_gpu_linear_ref(hc_gpu *g, hc_container *c, const char *name, uint32_t expert,
                            const float *x, uint64_t m, uint64_t k, float *y, uint64_t n,
                            char *msg, size_t msg_len);

/* ---- GPU: layers resident on the device, bf16 activations ---- */
typedef struct hc_gpu_model hc_gpu_model;
/* Uploads the tiled layers of container c (every one, or only the layer named `only`: a tiled
 * tensor, or an MoE layer of the container's record with its expert layers, ready for
 * hc_gpu_moe -- what `hconvert run --device gpu` loads to run one block) and their
 * act-order permutations with plain cudaMalloc + cudaMemcpy, bytes exactly as stored, and
 * builds (or loads from the cache) the kernels their layouts need, so that the first
 * hc_gpu_linear compiles nothing. */
HC_API hc_status hc_gpu_model_load(hc_gpu *g, hc_container *c, const char *only, hc_gpu_model **out,
                            char *msg, size_t msg_len);
HC_API void hc_gpu_model_free(hc_gpu_model *m); /* accepts NULL */
/* Layers uploaded, bytes uploaded and the seconds the upload took. */
HC_API void hc_gpu_model_stats(const hc_gpu_model *m, uint64_t *layers, uint64_t *bytes,
                        double *seconds);
/* Y = X W^T for the layer NAME (expert `expert` of a fused tensor, else 0) on the tensor cores:
 * x is device memory holding bf16 [m, k] (row-major, the source's column order: act-order
 * layers gather through their permutation on the device), y device memory receiving bf16
 * [m, n]; float32 accumulation. Queued on `stream` (a cudaStream_t; NULL is the default
 * stream) and asynchronous: launch errors are returned, errors inside the kernel surface at the
 * next synchronisation. M <= 16 takes the memory-bound path, larger M the tiled one. A model
 * keeps one workspace: order the calls on one model (one stream, or synchronise between). */
HC_API hc_status hc_gpu_linear(hc_gpu_model *m, const char *name, uint32_t expert, const void *x,
                        uint64_t m_tokens, uint64_t k, void *y, uint64_t n, void *stream,
                        char *msg, size_t msg_len);
/* hc_gpu_linear over host float32 buffers: x is rounded to bf16 (nearest even), uploaded, the
 * output (poisoned first) computed, synchronised and widened back to float32. */
HC_API hc_status hc_gpu_linear_host(hc_gpu_model *m, const char *name, uint32_t expert, const float *x,
                             uint64_t m_tokens, uint64_t k, float *y, uint64_t n, char *msg,
                             size_t msg_len);
/* For tests and measurements: the kernel every later hc_gpu_linear of model m runs where its
 * family serves M -- "mma" (mma.sync), "wgmma" (the 128-token wgmma kernel), "ws64", "ws128",
 * "ws256" (the warp-specialised kernel with that token tile; M > 16), "skinny16", "skinny32",
 * "skinny64" (the persistent stream-K kernel; M <= 64), "t8", "t16" (the small-M kernel with
 * that token tile; M <= 8, M <= 16) -- or the grouped kernel every later
 * hc_gpu_moe runs -- "moe-t8", "moe-t16" (small-M, tiles of 8 or 16 rows), "moe-ws64",
 * "moe-ws128", "moe-ws256", "moe-skinny16", "moe-skinny32", "moe-skinny64", "moe-w8" (small-M
 * items a warp owns, tiles of 8; docs/gpu.md lists the rest) -- or "moe-act-apart" (beside
 * any of those: the MoE activation in a launch of its own where the runtime would apply it in
 * gate_up's epilogue), "moe-w8-lap" (moe-w8 on a grid of one block, so that its warps take
 * many items each: a test of its descriptor ring) -- or NULL / "auto" (which also turns
 * "moe-act-apart" off):
 * the runtime's choice for both (the default; elsewhere, e.g. M <= 16 with a ws kernel forced,
 * the call takes the runtime's choice too). HC_USAGE for any other name and
 * HC_UNSUPPORTED for a kernel the device does not have, each naming it (the setting is then
 * unchanged). A grouped kernel whose tiles pad more rows than the runtime's choice (a wider
 * tile at many slots) gets a larger MoE workspace here, past the load's budget where it needs
 * to: the device is synchronised and the workspace reallocated (HC_NOMEM for the host, HC_IO
 * for a device allocation that fails: the old workspace and the setting stay), so MoE calls
 * captured in a CUDA graph before such a call must be captured again. Set it between calls,
 * not during one, and not while a stream is capturing. */
HC_API hc_status hc_gpu_model_force_kernel(hc_gpu_model *m, const char *kernel, char *msg,
                                           size_t msg_len);

/* ---- mixture of experts on the GPU (docs/gpu.md, "Mixture of experts") ----
 * hc_gpu_model_load prepares every layer of the container's MoE record whose experts it
 * holds: y[t] (bf16 [tokens, H], H the experts' hidden size) = bf16 of the float32 sum over
 * the slots j = 0..topk-1, in that order, of weights[t, j] x (down_e(act(gate_e(x[t]),
 * up_e(x[t]))) + the down bias of e) with e = ids[t, j]: the routed experts of
 * hc_cpu_moe_block (a shared expert is a dense layer beside it: run it with hc_gpu_linear).
 * x bf16 [tokens, H], ids int32 [tokens, topk], weights float32 [tokens, topk], all device
 * memory; an id outside the model's experts contributes nothing (a token with none gets 0).
 * On `stream` (NULL: the legacy stream) with no host synchronisation or copy: capturable in a
 * CUDA graph, which then replays with any routing. The same inputs give the same bits.
 * Workspace is the model's (sized at load): calls on one model are serialised, and long
 * calls run in chunks of the workspace's slots. Errors name the layer and the rule;
 * HC_UNSUPPORTED says why the GPU does not run a layer (hc_cpu_moe_block does). */
/* hc_gpu_model_load for expert parallelism: a rank's experts [e0, e1) of every MoE layer (a
 * per-expert layer of another expert is not uploaded, a fused [E, N, K] tensor only its slice;
 * everything else as hc_gpu_model_load). hc_gpu_moe then sums the slots routed to those
 * experts only: the ranks' y add up to the whole block (the caller's all-reduce).
 * hc_gpu_linear on a sliced tensor takes the global expert id. HC_INVALID for e0 >= e1. */
HC_API hc_status hc_gpu_model_load_experts(hc_gpu *g, hc_container *c, uint32_t e0, uint32_t e1,
                                           hc_gpu_model **out, char *msg, size_t msg_len);
HC_API hc_status hc_gpu_moe(hc_gpu_model *m, const char *layer, const void *x, uint64_t tokens,
                            const int32_t *ids, const float *weights, uint64_t topk, void *y,
                            void *stream, char *msg, size_t msg_len);
/* hc_gpu_moe over host buffers: x float32 rounded to bf16 (nearest even), y float32 from the
 * bf16 results; synchronous. */
HC_API hc_status hc_gpu_moe_host(hc_gpu_model *m, const char *layer, const float *x,
                                 uint64_t tokens, const int32_t *ids, const float *weights,
                                 uint64_t topk, float *y, char *msg, size_t msg_len);
/* The hidden size H, the intermediate size I and the expert count of MoE layer `layer`:
 * HC_OK when the GPU runs it, HC_UNSUPPORTED (sizes may be 0) when not, HC_NOTFOUND. */
HC_API hc_status hc_gpu_moe_shape(const hc_gpu_model *m, const char *layer, uint64_t *h,
                                  uint64_t *i, uint32_t *experts);
/* Builds the kernel modules the tiled layers of c need on arch ("sm_90a", "sm_80") into the
 * NVRTC cache (no GPU needed: `convert --target sm90|sm80` calls it): the modules, with their
 * options, that hc_gpu_model_load would build, so a later run on that machine (or with that
 * HC_CACHE_DIR) compiles nothing. *built counts the modules (kinds of layers). HC_UNSUPPORTED
 * without NVRTC. */
HC_API hc_status hc_gpu_precompile(hc_container *c, const char *arch, unsigned *built, char *msg,
                            size_t msg_len);
/* Nonzero when this process built a kernel it could not keep in the NVRTC cache (read-only or
 * full cache folder): the next run builds it again. why (cap bytes) receives the first reason. */
HC_API int hc_gpu_cache_unstored(char *why, size_t cap);
/* The peer for memory-bound kernels: a plain read of `bytes` on the device, in GB/s. */
HC_API hc_status hc_gpu_stream_read(hc_gpu *g, uint64_t bytes, int reps, double *gbs, char *msg,
                             size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif
