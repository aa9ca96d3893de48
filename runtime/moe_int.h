/* moe_int.h: what the CPU and GPU MoE blocks (cpu_moe.c, gpu_moe_load.c) share beyond the record
 * (contract/moe_record.h): reading a layer's biases. */
#ifndef HC_MOE_INT_H
#define HC_MOE_INT_H

#include "base.h"

/* Bias NAME of MoE layer l (a source tensor [E, n] of any float dtype) as float32 [E][n] into
 * *out (malloc'd; NULL with HC_OK when name is NULL); errors name the layer and the tensor. */
hc_status hc__moe_bias_f32(hc_container *c, const hc_moe_layer_info *l, const char *name,
                           uint64_t n, float **out, hc_err *err);

#endif
