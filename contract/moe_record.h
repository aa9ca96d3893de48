/* moe_record.h: the container's "moe_layers" record (docs/container.md): its JSON fields, its
 * limits and its rules, one place for the writer (convert/) and the reader (runtime/). The
 * record is an array of hc_moe_layer_info (include/hcrt.h) whose strings the record owns. */
#ifndef HC_MOE_RECORD_H
#define HC_MOE_RECORD_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "base.h"
#include "hcrt.h"

#define HC_MOE_MAX_LAYERS 65536u    /* layers one record holds (real models: under 100) */
#define HC_MOE_MAX_EXPERTS (1u << 20) /* E of one layer */
#define HC_MOE_NAME_MAX 1024u       /* bytes of one name */

/* Frees the strings of one layer and zeroes it. */
void hc__moe_layer_clear(hc_moe_layer_info *l);
/* Frees the strings of v[0..n) and v itself (NULL accepted). */
void hc__moe_record_free(hc_moe_layer_info *v, size_t n);

/* The record as the header's "moe_layers" array (NULL when out of memory). */
cJSON *hc__moe_record_json(const hc_moe_layer_info *v, size_t n);

/* Parses and checks the "moe_layers" array a (the structural rules: types, limits, which
 * fields go together, '*' in exactly the per-expert names, unique layer names). On failure
 * err says which layer (by index or name) and which rule. Unknown keys are ignored (a newer
 * minor may add some); duplicate keys are refused. */
hc_status hc__moe_record_parse(const cJSON *a, hc_moe_layer_info **out, size_t *n, hc_err *err);

/* The rules against the tensor table. shape_of returns false when the linear layer `name` is
 * not in the table, else sets *known (false: a source encoding whose logical shape the table
 * does not say) and the logical E, N, K (E 1 for a 2-D layer). Names of source tensors
 * (biases) are looked up as tensors: ndim, shape. */
typedef struct {
    bool known;
    uint64_t E, N, K;
} hc_moe_dims;
typedef struct {
    bool (*linear)(void *ctx, const char *name, hc_moe_dims *s);
    /* a source tensor: false when absent */
    bool (*tensor)(void *ctx, const char *name, int *ndim, const uint64_t **shape);
    void *ctx;
} hc_moe_lookup;
/* HC_INVALID naming the layer and the rule (err's message starts "MoE layer '<name>': ")
 * unless every name of l exists for every expert, the shapes agree (gate/up [I, H], down
 * [H, I], gate_up [2I, H], per expert or [E, ...] fused; biases [E, 2I] and [E, H]; router
 * [E, H]; the shared expert [Is, H] and [H, Is]) and E is the record's throughout. */
hc_status hc__moe_record_check(const hc_moe_layer_info *l, const hc_moe_lookup *lk, hc_err *err);

/* "<pattern>" with its '*' replaced by e, into out (cap bytes); false when it does not fit. */
bool hc__moe_expert_name(const char *pattern, uint32_t e, char *out, size_t cap);

#endif
