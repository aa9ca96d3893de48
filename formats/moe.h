/* moe.h: MoE layer checks shared by validate and convert. */
#ifndef HC_MOE_H
#define HC_MOE_H

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
/* "1, 3, 5" into out. */
void hc__join_ids(const int *v, size_t n, char *out, size_t cap);

#endif
