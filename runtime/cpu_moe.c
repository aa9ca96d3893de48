/* cpu_moe.c: the CPU executor's mixture-of-experts paths, built on hc_cpu_linear: the routed
 * rows of one expert layer (hc_cpu_moe), and the whole block of a layer the container's MoE
 * record describes (hc_cpu_moe_block: gate/up -> activation -> down -> weighted sum, plus the
 * shared expert), the CPU twin of the GPU's MoE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "elements.h"
#include "moe_int.h"
#include "moe_record.h"

static hc_status moe_err_out(hc_status st, const hc_err *err, char *msg, size_t msg_len) {
    if (msg && msg_len) snprintf(msg, msg_len, "%s", err->msg);
    return st;
}

/* The container tensor holding expert id of layer NAME, and its index inside that tensor. */
static char *expert_name(hc_container *c, const char *name, int32_t id, uint32_t *index) {
    uint64_t n, k, E;
    if (hc_linear_shape(c, name, &n, &k, &E, NULL, 0) == HC_OK && E > 1) {
        *index = (uint32_t)id;
        return hc__strdup(name);
    }
    const char *p = strstr(name, ".experts.");
    *index = 0;
    return p ? hc__asprintf("%.*s.experts.%d.%s", (int)(p - name), name, id, p + 9) : NULL;
}

hc_status hc_cpu_moe(hc_container *c, const char *name, const float *x, uint64_t tokens,
                     uint64_t k, const int32_t *ids, const float *weights, uint64_t topk,
                     float **y, uint64_t *n, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    *y = NULL;
    *n = 0;
    for (uint64_t i = 0; i < tokens * topk && !st; i++) {
        uint32_t ex = 0;
        char *en = ids[i] >= 0 ? expert_name(c, name, ids[i], &ex) : NULL;
        uint64_t en_n, en_k, en_e;
        if (!en || hc_linear_shape(c, en, &en_n, &en_k, &en_e, NULL, 0) || ex >= en_e ||
            en_k != k || (*n && en_n != *n)) {
            st = hc__fail(&err, HC_INVALID, "routing: token %llu, slot %llu: expert %d of '%s' %s",
                         (unsigned long long)(i / topk), (unsigned long long)(i % topk), ids[i],
                         name, en ? "is missing or does not take K columns" : "is invalid");
            free(en);
            break;
        }
        if (!*y) {
            *n = en_n;
            *y = calloc(tokens * topk * en_n + 1, sizeof **y);
            if (!*y) {
                free(en);
                st = hc__fail(&err, HC_NOMEM, "out of memory");
                break;
            }
        }
        /* one token through its expert: the reference for the GPU's sorted, one-launch MoE */
        st = hc_cpu_linear(c, en, ex, x + (i / topk) * k, 1, k, *y + i * *n, *n, err.msg,
                           sizeof err.msg);
        free(en);
        for (uint64_t j = 0; !st && j < *n; j++) (*y)[i * *n + j] *= weights[i];
    }
    if (st) {
        free(*y);
        *y = NULL;
        return moe_err_out(st, &err, msg, msg_len);
    }
    return HC_OK;
}

/* ---- the whole block ---- */

typedef struct {
    const hc_moe_layer_info *l;
    uint64_t H, I, Is;        /* hidden, expert and shared-expert intermediate sizes */
    float *gu_bias, *d_bias;  /* [E, 2I] in gate_up's row order, [E, H], or NULL */
} block;

/* Linear layer `pattern` for expert e: the fused tensor at index e, or the per-expert name. */
static hc_status expert_linear(hc_container *c, const block *b, const char *pattern, uint32_t e,
                               const float *x, uint64_t m, uint64_t k, float *y, uint64_t n,
                               hc_err *err) {
    char name[HC_MOE_NAME_MAX + 16];
    uint32_t index = e;
    if (b->l->layout == HC_MOE_PER_EXPERT) {
        if (!hc__moe_expert_name(pattern, e, name, sizeof name))
            return hc__fail(err, HC_INVALID, "MoE layer '%s': expert %u of '%s' does not fit a "
                           "name", b->l->name, e, pattern);
        index = 0;
    } else {
        snprintf(name, sizeof name, "%s", pattern);
    }
    char m2[HC_ERRMSG_MAX] = "";
    hc_status st = hc_cpu_linear(c, name, index, x, m, k, y, n, m2, sizeof m2);
    return st ? hc__fail(err, st, "MoE layer '%s', expert %u: %s", b->l->name, e, m2) : HC_OK;
}

hc_status hc__moe_bias_f32(hc_container *c, const hc_moe_layer_info *l, const char *name,
                           uint64_t n, float **out, hc_err *err) {
    *out = NULL;
    if (!name) return HC_OK;
    const hc_tensor_info *t = hc_container_find(c, name);
    uint64_t E = l->experts, cnt;
    if (!t || t->ndim != 2 || t->shape[0] != E || t->shape[1] != n || !hc__mul_u64(E, n, &cnt) ||
        !(t->dtype == HC_DT_BF16 || t->dtype == HC_DT_F16 || t->dtype == HC_DT_F32))
        return hc__fail(err, HC_INVALID, "MoE layer '%s': bias '%s' is not a float tensor "
                       "[%llu, %llu] of the container", l->name, name, (unsigned long long)E,
                       (unsigned long long)n);
    const void *data;
    void *owned = NULL;
    if (hc_container_tensor_data(c, t, &data, &owned))
        return hc__fail(err, HC_INVALID, "MoE layer '%s': bias '%s': %s", l->name, name,
                       hc_container_errmsg(c));
    *out = malloc(cnt * sizeof **out + 1);
    if (!*out) {
        free(owned);
        return hc__fail(err, HC_NOMEM, "out of memory for bias '%s'", name);
    }
    for (uint64_t i = 0; i < cnt; i++) {
        double v = 0;
        hc__read_scalar(data, t->dtype, i, &v);
        (*out)[i] = (float)v;
    }
    free(owned);
    return HC_OK;
}

static float sigmoidf_(float v) { return 1.0f / (1.0f + expf(-v)); }

/* act[m, I] from the gate and up values of m rows: gate j of row r at g[r * stride + j * step],
 * up j at u[r * stride + j * step]. */
static void activate(const block *b, const float *g, const float *u, uint64_t stride,
                     uint64_t step, uint64_t m, float *act) {
    const float lim = (float)b->l->limit, alpha = (float)b->l->alpha;
    for (uint64_t r = 0; r < m; r++)
        for (uint64_t j = 0; j < b->I; j++) {
            float gv = g[r * stride + j * step], uv = u[r * stride + j * step];
            if (b->l->activation == HC_MOE_SWIGLU_CLAMP) {
                gv = gv > lim ? lim : gv;
                uv = uv > lim ? lim : uv < -lim ? -lim : uv;
                act[r * b->I + j] = (uv + 1.0f) * (gv * sigmoidf_(alpha * gv));
            } else {
                act[r * b->I + j] = gv * sigmoidf_(gv) * uv;
            }
        }
}

/* Rows x[m, H] through expert e's gate/up, activation and down into out[m, H]; scratch holds
 * m * (3I) floats. */
static hc_status run_expert(hc_container *c, const block *b, uint32_t e, const float *x,
                            uint64_t m, float *scratch, float *out, hc_err *err) {
    const hc_moe_layer_info *l = b->l;
    uint64_t I = b->I, H = b->H;
    float *gu = scratch, *act = scratch + 2 * m * I;
    if (l->gate_up) {
        HC_TRY(expert_linear(c, b, l->gate_up, e, x, m, H, gu, 2 * I, err));
        if (b->gu_bias)
            for (uint64_t r = 0; r < m; r++)
                for (uint64_t j = 0; j < 2 * I; j++) gu[r * 2 * I + j] += b->gu_bias[e * 2 * I + j];
        if (l->gate_up_order == HC_MOE_INTERLEAVED) activate(b, gu, gu + 1, 2 * I, 2, m, act);
        else activate(b, gu, gu + I, 2 * I, 1, m, act);
    } else {
        HC_TRY(expert_linear(c, b, l->gate, e, x, m, H, gu, I, err));
        HC_TRY(expert_linear(c, b, l->up, e, x, m, H, gu + m * I, I, err));
        activate(b, gu, gu + m * I, I, 1, m, act);
    }
    HC_TRY(expert_linear(c, b, l->down, e, act, m, I, out, H, err));
    if (b->d_bias)
        for (uint64_t r = 0; r < m; r++)
            for (uint64_t j = 0; j < H; j++) out[r * H + j] += b->d_bias[e * H + j];
    return HC_OK;
}

/* The shared expert added to y[T, H] (scaled by sigmoid of its 1-row gate where there is one). */
static hc_status add_shared(hc_container *c, const block *b, const float *x, uint64_t T, float *y,
                            hc_err *err) {
    const hc_moe_layer_info *l = b->l;
    uint64_t H = b->H, Is = b->Is, n;
    if (!hc__mul_u64(Is, 3, &n) || !hc__add_u64(n, H + 1, &n) || !hc__mul_u64(T, n, &n) ||
        !hc__mul_u64(n, sizeof(float), &n))
        return hc__fail(err, HC_INVALID, "MoE layer '%s': %llu tokens overflow the shared expert's "
                       "buffers", l->name, (unsigned long long)T);
    float *buf = malloc(n + 1);
    if (!buf)
        return hc__fail(err, HC_NOMEM, "out of memory for the shared expert of '%s'", l->name);
    float *g = buf, *u = g + T * Is, *act = u + T * Is, *d = act + T * Is, *s = d + T * H;
    char m2[HC_ERRMSG_MAX] = "";
    const char *at = l->shared_gate;
    hc_status st = hc_cpu_linear(c, at, 0, x, T, H, g, Is, m2, sizeof m2);
    if (!st) st = hc_cpu_linear(c, at = l->shared_up, 0, x, T, H, u, Is, m2, sizeof m2);
    block sb = *b;
    sb.I = Is;
    hc_moe_layer_info sl = *l;
    sl.activation = HC_MOE_SILU; /* the shared experts of Qwen2-MoE and DeepSeek are SiLU MLPs */
    sb.l = &sl;
    if (!st) activate(&sb, g, u, Is, 1, T, act);
    if (!st) st = hc_cpu_linear(c, at = l->shared_down, 0, act, T, Is, d, H, m2, sizeof m2);
    if (!st && l->shared_expert_gate)
        st = hc_cpu_linear(c, at = l->shared_expert_gate, 0, x, T, H, s, 1, m2, sizeof m2);
    for (uint64_t t = 0; !st && t < T; t++) {
        float scale = l->shared_expert_gate ? sigmoidf_(s[t]) : 1.0f;
        for (uint64_t j = 0; j < H; j++) y[t * H + j] += scale * d[t * H + j];
    }
    free(buf);
    return st ? hc__fail(err, st, "MoE layer '%s', shared expert '%s': %s", l->name, at, m2)
              : HC_OK;
}

/* Sizes of the block's layers, checked against h. */
static hc_status block_sizes(hc_container *c, block *b, uint64_t h, hc_err *err) {
    const hc_moe_layer_info *l = b->l;
    char name[HC_MOE_NAME_MAX + 16];
    const char *first = l->gate_up ? l->gate_up : l->gate;
    if (l->layout != HC_MOE_PER_EXPERT) snprintf(name, sizeof name, "%s", first);
    else if (!hc__moe_expert_name(first, 0, name, sizeof name)) name[0] = 0;
    uint64_t n, k, E;
    char m2[HC_ERRMSG_MAX] = "";
    if (hc_linear_shape(c, name, &n, &k, &E, m2, sizeof m2))
        return hc__fail(err, HC_INVALID, "MoE layer '%s': %s", l->name, m2);
    if (k != h)
        return hc__fail(err, HC_INVALID, "MoE layer '%s': X has %llu columns, the experts take "
                       "H=%llu", l->name, (unsigned long long)h, (unsigned long long)k);
    b->H = k;
    b->I = l->gate_up ? n / 2 : n;
    if (l->shared_gate) {
        if (hc_linear_shape(c, l->shared_gate, &n, &k, &E, m2, sizeof m2))
            return hc__fail(err, HC_INVALID, "MoE layer '%s': %s", l->name, m2);
        b->Is = n;
    }
    return HC_OK;
}

static hc_status moe_block(hc_container *c, const char *layer, const float *x, uint64_t T,
                           uint64_t h, const int32_t *ids, const float *weights, uint64_t topk,
                           float *y, hc_err *err) {
    block b = {0};
    for (size_t i = 0; i < hc_container_moe_count(c) && !b.l; i++)
        if (!strcmp(hc_container_moe(c, i)->name, layer)) b.l = hc_container_moe(c, i);
    if (!b.l)
        return hc__fail(err, HC_NOTFOUND, "no MoE layer '%s' in the container's record (a "
                       "container written before the record: convert again)", layer);
    HC_TRY(block_sizes(c, &b, h, err));
    uint64_t rows, cells, E = b.l->experts, tmp;
    if (!hc__mul_u64(T, topk, &rows) || !hc__mul_u64(T, h, &cells) ||
        !hc__mul_u64(rows, h * sizeof(float), &tmp) || !hc__mul_u64(rows, sizeof(uint64_t), &tmp) ||
        !hc__mul_u64(b.I, 3 * sizeof(float), &tmp) || !hc__mul_u64(rows, tmp, &tmp))
        return hc__fail(err, HC_INVALID, "MoE layer '%s': %llu tokens x top-%llu overflow the "
                       "buffers", layer, (unsigned long long)T, (unsigned long long)topk);
    memset(y, 0, cells * sizeof *y);
    hc_status st = hc__moe_bias_f32(c, b.l, b.l->gate_up_bias, 2 * b.I, &b.gu_bias, err);
    if (!st) st = hc__moe_bias_f32(c, b.l, b.l->down_bias, b.H, &b.d_bias, err);
    /* rows grouped by expert (a counting sort, stable: slot order within an expert), run as one
     * GEMM per expert; an id outside [0, E) takes no row */
    uint64_t *start = calloc(E + 1, sizeof *start), *order = malloc(rows * sizeof *order + 1);
    float *xg = malloc(rows * h * sizeof *xg + 1), *out = malloc(rows * h * sizeof *out + 1);
    float *scratch = malloc(rows * 3 * b.I * sizeof *scratch + 1);
    if (!st && (!start || !order || !xg || !out || !scratch))
        st = hc__fail(err, HC_NOMEM, "out of memory for MoE layer '%s'", layer);
    for (uint64_t r = 0; !st && r < rows; r++)
        if (ids[r] >= 0 && (uint64_t)ids[r] < E) start[ids[r] + 1]++;
    for (uint64_t e = 0; !st && e < E; e++) start[e + 1] += start[e];
    for (uint64_t r = 0, e; !st && r < rows; r++)
        if (ids[r] >= 0 && (e = (uint64_t)ids[r]) < E) {
            order[start[e]] = r;
            memcpy(xg + start[e] * h, x + (r / topk) * h, h * sizeof *x);
            start[e]++;
        }
    for (uint64_t e = E; !st && e > 0; e--) start[e] = start[e - 1]; /* back to the starts */
    if (!st) start[0] = 0;
    for (uint64_t e = 0; !st && e < E; e++) {
        uint64_t m = start[e + 1] - start[e];
        if (m) st = run_expert(c, &b, (uint32_t)e, xg + start[e] * h, m, scratch,
                               out + start[e] * h, err);
        if (st) {
            uint64_t r = order[start[e]];
            hc_err e2 = *err;
            hc__fail(err, st, "%s (token %llu, slot %llu the first routed to it)", e2.msg,
                     (unsigned long long)(r / topk), (unsigned long long)(r % topk));
        }
    }
    /* out rows back in (token, slot) order, the weighted sum in slot order */
    uint64_t *where = NULL;
    if (!st && !(where = malloc(rows * sizeof *where + 1)))
        st = hc__fail(err, HC_NOMEM, "out of memory for MoE layer '%s'", layer);
    for (uint64_t i = 0; !st && i < rows; i++) where[i] = UINT64_MAX;
    for (uint64_t i = 0; !st && i < start[E]; i++) where[order[i]] = i;
    for (uint64_t t = 0; !st && t < T; t++)
        for (uint64_t j = 0; j < topk; j++) {
            uint64_t i = where[t * topk + j];
            if (i == UINT64_MAX) continue;
            float w = weights[t * topk + j];
            for (uint64_t d = 0; d < h; d++) y[t * h + d] += w * out[i * h + d];
        }
    if (!st && b.l->shared_gate) st = add_shared(c, &b, x, T, y, err);
    free(where), free(start), free(order), free(xg), free(out), free(scratch);
    free(b.gu_bias), free(b.d_bias);
    return st;
}

hc_status hc_cpu_moe_block(hc_container *c, const char *layer, const float *x, uint64_t tokens,
                           uint64_t h, const int32_t *ids, const float *weights, uint64_t topk,
                           float *y, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = moe_block(c, layer, x, tokens, h, ids, weights, topk, y, &err);
    return st ? moe_err_out(st, &err, msg, msg_len) : HC_OK;
}
