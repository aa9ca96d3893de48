/* gpu_moe.h: what the two halves of the GPU MoE block share -- gpu_moe_load.c (at load: expert
 * tables, biases, kernels, the workspace) and gpu_moe.c (a call's launches): the layer and
 * workspace records and the one rule for what a chunk needs of the workspace. */
#ifndef HC_GPU_MOE_H
#define HC_GPU_MOE_H

#include "gpu_int.h"

/* The workspace: sized at load for at most this many bytes, and this many slots (tokens x
 * top-k) a chunk; fewer slots where the budget needs it, never fewer than the floor. */
#define MOE_WS_BUDGET (1ull << 30)
#define MOE_SLOTS_MAX 65536u
#define MOE_SLOTS_MIN 256u
#define MOE_TOPK_MAX 256u /* top-k a call takes at most */

typedef struct {
    hc_mma_params mp;
    hc_gpu_shape shape;
    int mod;
    void *wtab; /* u64 [parts x El]: each expert's first tile */
    void *ptab; /* u64 [El]: each expert's act-order permutation (int32 [K]), or NULL */
    void *gdiv; /* float [parts x El]: each expert's NVFP4 global divisor, or NULL (none) */
} moe_proj;

typedef struct hc_gpu_moe_layer {
    char *name;
    char why[HC_ERRMSG_MAX]; /* non-empty: the GPU does not run this layer, and why */
    uint32_t E, e0, El;
    uint64_t H, I, ldx, ldh; /* ldx: rows of the expanded activations; ldh: of act's output */
    unsigned parts;          /* gate_up in one layer (1) or gate and up (2) */
    hc_moe_order order;
    hc_moe_act act;
    float alpha, limit;
    moe_proj up, down;
    void *bias_gu, *bias_d; /* float [El][2][I] (gate, up), [El][H], or NULL */
} hc_gpu_moe_layer;

struct hc_gpu_moe_ws {
    uint64_t slots, rows, tiles; /* per chunk: slots, sorted rows, tiles (meta entries) */
    void *sorted, *inv, *meta, *xs, *g, *h, *part, *cnt; /* (meta: its tiles, then the tail) */
    size_t xs_bytes, g_bytes, h_bytes, part_bytes, cnt_bytes;
    /* the many-slot routing sort's table (moe_args.h HC_MOE_ROUTE_TABLE_WORDS of the most
     * local experts) and its ticket (the buffer's last word, every layer's; zero between
     * launches) */
    void *rtab;
    size_t rtab_bytes;
};

/* The routing's two-word tail (moe_args.h): past meta's largest table of tiles. */
static inline int *hc__gpu_moe_tail(const struct hc_gpu_moe_ws *w) {
    return (int *)w->meta + 1 + 2 * w->tiles;
}

/* Orders MoE layers by name (the model's are sorted: hc_gpu_moe finds them by bsearch). */
int hc__gpu_moe_cmp(const void *a, const void *b);

/* What a chunk of `slots` slots of layer ml needs of the workspace with kernel `forced` (or the
 * runtime's choice), and the route and launches it takes; an error when no kernel runs it. */
typedef struct {
    uint64_t rows, tiles;
    size_t xs, g, h, part, cnt;
} hc_gpu_moe_wsneed;

hc_status hc__gpu_moe_need(const hc_gpu_caps *dev, const hc_gpu_moe_layer *ml, uint64_t slots,
                          int forced, hc_gpu_moe_wsneed *w, hc_gpu_moe_route *r,
                          hc_gpu_moe_launch *lu, hc_gpu_moe_launch *ld, hc_err *err);

/* Whether workspace w holds need n (chunk()'s test before its launches). */
static inline bool hc__gpu_moe_ws_holds(const struct hc_gpu_moe_ws *w, const hc_gpu_moe_wsneed *n) {
    return n->rows <= w->rows && n->tiles + 1 <= w->tiles && n->xs <= w->xs_bytes &&
           n->g <= w->g_bytes && n->h <= w->h_bytes && n->part <= w->part_bytes &&
           n->cnt <= w->cnt_bytes;
}

#endif
