/* container_write.h: writes an hconvert container (docs/container.md) atomically, with
 * tensors at precomputed 4096-aligned offsets, XXH3-64 hashes and optional zstd. */
#ifndef HC_CONTAINER_WRITE_H
#define HC_CONTAINER_WRITE_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "atomic.h"
#include "base.h"

typedef struct {
    const char *name;
    hc_dtype dtype;
    int ndim;
    uint64_t shape[HC_MAX_DIMS];        /* logical */
    uint64_t padded_shape[HC_MAX_DIMS]; /* stored; equal to shape when not padded */
    const char *layout;
    uint32_t layout_version;
    const void *data; /* the stored (decoded) bytes, or NULL when fill produces them */
    uint64_t size;    /* must equal numel(padded_shape) * bits / 8 */
    bool try_zstd;    /* compress when it saves at least 1/8 (not for filled tensors) */
    const cJSON *layout_params; /* layout parameters for the header, or NULL */
    /* Produces the size bytes into dst when data is NULL; called once, from any thread. */
    hc_status (*fill)(void *ctx, size_t index, void *dst, hc_err *err);
    void *fill_ctx;
    size_t fill_index;
} hc_cw_tensor;

typedef struct {
    const char *source_format;  /* "safetensors", "compressed-tensors", ... */
    const char *source_version; /* may be NULL */
    const char *target;         /* "passthrough", "sm90", ... */
    unsigned tp_rank, tp_size;
    const char *config_json; /* original config.json text, kept verbatim; may be NULL */
    size_t config_len;
    const cJSON *tile_config; /* may be NULL */
    const cJSON *moe_layers;  /* the MoE record (contract/moe_record.h) for model, or NULL */
    int threads;              /* <= 0: OpenMP default */
    void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
    void *progress_ctx;
    /* NULL: path is renamed into place at the end. Otherwise the synced file joins this set
     * (as its `last` entry, the mark of a complete folder) and its commit renames it. */
    hc_atomic_set *set;
    hc_fault *fault; /* test hook (atomic.h); NULL: none */
} hc_cw_options;

/* Writes path atomically (under a temporary name with the OUT mark until renamed); the output
 * is byte-identical for any thread count. */
hc_status hc__container_write(const char *path, const hc_cw_tensor *t, size_t n,
                             const hc_cw_options *o, hc_err *err);

#endif
