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

/* Adds a finding per layer with missing experts and per layer key whose experts differ in
 * shape or scheme; *layers receives the number of MoE layers (fused ones included). */
void hc_model_check_moe(const hc_model *md, const hc_moe_shape *shapes, hc_findings *f,
                        int *layers);
/* "1, 3, 5" into out. */
void hc_join_ids(const int *v, size_t n, char *out, size_t cap);

#endif
