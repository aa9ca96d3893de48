/* families.h: the kernel families hconvert targets and what each needs of a module (element
 * type, group shapes, padding), plus tensor-parallel shard planning. validate reports against
 * this table; the repackers and docs/layouts.md implement it. */
#ifndef HC_FAMILIES_H
#define HC_FAMILIES_H

#include "quant.h"

typedef struct {
    const char *name;     /* "int4-g", "mxfp4", ... */
    const char *activations; /* "bf16", "fp8" */
    uint64_t n_multiple;  /* rows (N) padded to a multiple of this */
    uint64_t k_multiple;  /* columns (K) padded to a multiple of this */
} hc_family;

/* Fills out (capacity cap) with the families that can run a decoded module; returns the
 * count. why receives the reason when there are none. */
size_t hc__families_for(const hc_module *m, const hc_qtensor *q, const hc_family **out, size_t cap,
                       char *why, size_t why_len);

/* Tensor-parallel role of a Linear by its name: 'c' column-parallel (split N), 'r'
 * row-parallel (split K), 0 replicated / not a Linear. */
char hc__tp_role(const char *module);

typedef struct {
    char role;             /* 'c', 'r' or 0 */
    uint64_t shard_n, shard_k; /* logical per rank */
    bool splits;           /* the dimension divides evenly */
    bool group_aligned;    /* row split falls on scale-group boundaries */
    uint64_t regroup;      /* group size after lossless regrouping (0: not needed) */
    uint64_t pad_n, pad_k; /* padded per-rank dims for the family */
    bool gpu;              /* the family's GPU kernels run the rank's slice (a regrouped
                            * scale group under 16 columns does not) */
} hc_tp_plan;

void hc__tp_shard(const hc_qtensor *q, char role, unsigned tp, const hc_family *fam,
                 hc_tp_plan *p);
/* Bytes a module takes stored (codes + scales + zero points), for the footprint report. */
uint64_t hc__module_bytes(const hc_qtensor *q);

#endif
