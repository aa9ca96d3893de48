/* moe.h: MoE layer checks shared by validate and convert. */
#ifndef HC_MOE_H
#define HC_MOE_H

#include "moe_record.h"
#include "quant.h"

/* What the check needs of each decoded module (decoded false: skipped). */
typedef struct {
    bool decoded;
    hc_qkind kind;
    int bits;
    uint64_t N, K, gk;
} hc_moe_shape;

/* Adds findings for every MoE layer: expert ids of [0, E) missing from the layer or from one
 * of its projections (E from the config, else the highest id + 1), ids past E, experts of a
 * projection that differ in shape or scheme, a missing router, and a missing shared expert
 * the config announces; *layers receives the number of MoE layers (fused ones included). */
void hc__model_check_moe(const hc_model *md, const hc_moe_shape *shapes, hc_findings *f,
                        int *layers);
/* Each MoE layer's record (contract/moe_record.h, sorted by block name) derived from the
 * modules and config.json (formats/moe_layers.c): per-expert layers ("<block>.experts.*.
 * {gate,up,down}_proj" or Mixtral's w1/w3/w2) and gpt-oss's fused ones (interleaved gate_up,
 * biases, clamped SwiGLU), with the router and a shared expert where the model has them.
 * A layer it cannot describe (no router, an unknown projection, an activation other than
 * SiLU-gated) is left out: validate reports what makes it so. *out: hc__moe_record_free. */
hc_status hc__model_moe_layers(const hc_model *md, hc_moe_layer_info **out, size_t *n,
                               hc_err *err);
/* qsort comparator of `const hc_module *` experts: by MoE key, then expert id (a layer's
 * members together, each projection's experts in order). */
int hc__moe_member_cmp(const void *a, const void *b);
/* "1, 3, 5" into out. */
void hc__join_ids(const int *v, size_t n, char *out, size_t cap);

#endif
