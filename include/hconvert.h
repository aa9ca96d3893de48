/* hconvert.h: public API of the hconvert converter library (checkpoint -> container).
 * Opaque handle, options through one set-parameter call, status + detailed message. */
#ifndef HCONVERT_H
#define HCONVERT_H

#include <stdint.h>

#include "hcrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hc_converter hc_converter;

typedef enum {
    HC_CONV_THREADS = 1,  /* worker threads; <= 0 means all cores (default) */
    HC_CONV_DRY_RUN = 2,  /* nonzero: plan and report, write nothing */
    HC_CONV_PROGRESS = 3, /* nonzero: progress bar on stderr */
    HC_CONV_TP_SIZE = 4,  /* tensor-parallel ranks (1..64): OUT/rank<r>/ per rank when > 1 */
    HC_CONV_REPACK = 5,   /* nonzero (default): kernel tile layouts; 0: keep source layouts */
    /* an archive SRC extracts at most this many bytes (> 0; default 2 TiB; docs/inputs.md) */
    HC_CONV_MAX_EXTRACT_BYTES = 6,
    /* ... and at most this many times the archive's size (> 0; default 100) */
    HC_CONV_MAX_EXTRACT_RATIO = 7,
    /* a non-weight file copied into OUT (tokenizer, config) may be at most this many bytes
     * (> 0; default 4 GiB; docs/convert.md) */
    HC_CONV_SIDE_FILE_LIMIT = 8,
    /* bytes of decoded modules (scales, and codes where the tiler needs them) the planning
     * pass keeps for the writer, so that a module is decoded once; a module beyond them is
     * decoded again when it is written (>= 0; default 128 MiB; the output is the same for any
     * value; docs/convert.md) */
    HC_CONV_HOLD_BYTES = 9,
} hc_conv_param;

/* Summary of the last run. */
typedef struct {
    uint64_t tensors;
    uint64_t source_bytes;
    uint64_t container_bytes;
    uint64_t files_copied;
    uint64_t modules_repacked; /* written in a tile layout */
    uint64_t modules_kept;     /* quantized modules kept in their source layout (see reasons) */
    uint64_t tiles;            /* 64 x 64 tiles written */
    uint64_t mx_unfolded;      /* MXFP4 row-tiles whose exponent spread kept them unfolded */
    uint64_t padding_bytes;    /* stored bytes spent on padding rows and columns */
    double seconds;
    uint64_t decodes;          /* module decodes: one per decoded module when all were kept
                                * (HC_CONV_HOLD_BYTES), more for those decoded again */
    uint64_t held_peak;        /* the most bytes of decoded modules kept at once (at most
                                * HC_CONV_HOLD_BYTES) */
    uint64_t decodes_wasted;   /* planning decodes whose codes were dropped for want of room
                                * (0: the room is reserved before a module is decoded) */
} hc_conv_stats;

HC_API hc_converter *hc_converter_create(void);
HC_API void hc_converter_free(hc_converter *c); /* accepts NULL */
HC_API hc_status hc_converter_set(hc_converter *c, hc_conv_param p, int64_t value);
/* Converts the checkpoint SRC (folder, .safetensors file or archive) into the folder OUT:
 * OUT/model.hconvert plus verbatim copies of the non-weight files; with tensor parallelism,
 * one such folder per rank, OUT/rank<r>. */
HC_API hc_status hc_converter_run(hc_converter *c, const char *src, const char *out_dir);
HC_API const char *hc_converter_errmsg(const hc_converter *c);
HC_API const hc_conv_stats *hc_converter_stats(const hc_converter *c);
/* The plan (with HC_CONV_DRY_RUN) and the notes of the last run, one line each; "" if none. */
HC_API const char *hc_converter_report(const hc_converter *c);

/* ---- dequant: a module's effective weights, for checking a conversion ---- */
typedef struct {
    uint64_t max_extract_bytes; /* an archive SRC extracts at most this many bytes (0: 2 TiB) */
    uint64_t max_extract_ratio; /* ... and at most this many times its size (0: 100) */
} hc_dequant_opts;

typedef struct {
    float *values;               /* shape[0] x ... x shape[ndim - 1], C order */
    uint64_t shape[HC_MAX_DIMS]; /* [N, K], [E, N, K], or an unquantized tensor's own */
    int ndim;
    char **warnings;             /* the decoder's warnings (nwarnings strings), NULL when none */
    size_t nwarnings;
} hc_dequant_result;

/* The float32 weights of module NAME of the checkpoint SRC (folder, .safetensors file, archive
 * or a container convert wrote), as FORMATS.md's readers compute them: NAME is the module
 * name before the quantization suffix ("model.layers.0.self_attn.q_proj"), or a per-expert
 * MoE layer's name without the expert id, whose experts are stacked into [E, N, K]. Refuses a
 * checkpoint or module its configuration makes unreadable (HC_UNSUPPORTED), a module that does
 * not decode (HC_INVALID) and an unknown NAME (HC_NOTFOUND), msg (msg_len bytes) saying why.
 * o may be NULL (the default limits). r is filled (warnings even on failure) and freed with
 * hc_dequant_free. */
HC_API hc_status hc_dequant(const char *src, const char *name, const hc_dequant_opts *o,
                            hc_dequant_result *r, char *msg, size_t msg_len);
HC_API void hc_dequant_free(hc_dequant_result *r); /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif
