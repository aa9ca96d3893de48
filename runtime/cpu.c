/* cpu.c: the CPU executor: Y = X W^T from a container's stored bytes (the CPU twin of the GPU
 * kernels). Row stripes of W are decoded through the layout code and multiplied with float32
 * accumulation; stripes run in parallel. The MoE paths built on it are in cpu_moe.c. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "elements.h"
#include "tile_layer.h"

typedef struct {
    const hc_tensor_info *t; /* the tiled tensor, or the source weight */
    hc_tile_params p;        /* tiled: its parameters */
    const int32_t *perm;
    bool tiled;
    uint64_t N, K, E;
} linear;

static hc_status find_linear(hc_container *c, const char *name, linear *L, hc_err *err) {
    memset(L, 0, sizeof *L);
    const hc_tensor_info *t = hc_container_find(c, name);
    if (t && t->layout_params) {
        HC_TRY(hc__tile_layer(c, name, &L->t, &L->p, &L->perm, err));
        L->tiled = true;
        L->N = L->p.N, L->K = L->p.K, L->E = L->p.E;
        return HC_OK;
    }
    char wn[1024];
    snprintf(wn, sizeof wn, "%s.weight", name);
    const hc_tensor_info *w = t ? t : hc_container_find(c, wn);
    if (!w) return hc__fail(err, HC_NOTFOUND, "no linear layer '%s' (neither a tiled tensor nor "
                           "'%s')", name, wn);
    if (w->ndim != 2 || !(w->dtype == HC_DT_F16 || w->dtype == HC_DT_BF16 ||
                          w->dtype == HC_DT_F32 || w->dtype == HC_DT_F64))
        return hc__fail(err, HC_UNSUPPORTED, "tensor '%s': a %s tensor of rank %d is not an "
                       "unquantized 2-D weight the CPU executor can run", w->name,
                       hc_dtype_name(w->dtype), w->ndim);
    L->t = w;
    L->N = w->shape[0], L->K = w->shape[1], L->E = 1;
    return HC_OK;
}

static hc_status err_out(hc_status st, const hc_err *err, char *msg, size_t msg_len) {
    if (msg && msg_len) snprintf(msg, msg_len, "%s", err->msg);
    return st;
}

hc_status hc_linear_shape(hc_container *c, const char *name, uint64_t *n, uint64_t *k,
                          uint64_t *experts, char *msg, size_t msg_len) {
    linear L;
    hc_err err = {0};
    hc_status st = find_linear(c, name, &L, &err);
    if (st) return err_out(st, &err, msg, msg_len);
    *n = L.N, *k = L.K, *experts = L.E;
    return HC_OK;
}

hc_status hc_cpu_linear(hc_container *c, const char *name, uint32_t expert, const float *x,
                        uint64_t m, uint64_t k, float *y, uint64_t n, char *msg, size_t msg_len) {
    linear L;
    hc_err err = {0};
    hc_status st = find_linear(c, name, &L, &err);
    if (st) return err_out(st, &err, msg, msg_len);
    if (k != L.K || n != L.N || expert >= L.E) {
        hc__fail(&err, HC_INVALID, "'%s' is [%llu, %llu] with %llu expert(s); called with K=%llu, "
                "N=%llu, expert %u", name, (unsigned long long)L.N, (unsigned long long)L.K,
                (unsigned long long)L.E, (unsigned long long)k, (unsigned long long)n, expert);
        return err_out(HC_INVALID, &err, msg, msg_len);
    }
    const void *data;
    void *owned = NULL;
    if (hc_container_tensor_data(c, L.t, &data, &owned))
        return err_out(HC_INVALID, &err, msg, msg_len);
    /* activations in the stored column order (act-order gathers them) */
    uint64_t mk = m * k;
    float *xp = malloc((mk > 0 ? mk : 1) * sizeof *xp);
    if (!xp) {
        free(owned);
        hc__fail(&err, HC_NOMEM, "out of memory");
        return err_out(HC_NOMEM, &err, msg, msg_len);
    }
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t j = 0; j < k; j++) xp[i * k + j] = x[i * k + (L.perm ? (uint64_t)L.perm[j] : j)];
    uint64_t stripes = L.tiled ? L.p.tiles_n : hc__cdiv_u64(L.N, HC_TILE_N);
    uint64_t Kp = L.tiled ? L.p.Kp : L.K;
    int failed = 0;
#pragma omp parallel
    {
        float *w = malloc(HC_TILE_N * Kp * sizeof *w + 1);
        if (!w) failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (uint64_t nb = 0; nb < stripes; nb++) {
            if (!w) continue;
            uint64_t rows = L.N - nb * HC_TILE_N < HC_TILE_N ? L.N - nb * HC_TILE_N : HC_TILE_N;
            if (L.tiled) {
                hc__tile_decode_stripe(&L.p, data, expert, nb, w);
            } else {
                for (uint64_t r = 0; r < rows; r++)
                    for (uint64_t j = 0; j < L.K; j++) {
                        double v;
                        hc__read_scalar(data, L.t->dtype, (nb * HC_TILE_N + r) * L.K + j, &v);
                        w[r * Kp + j] = (float)v;
                    }
            }
            for (uint64_t r = 0; r < rows; r++)
                for (uint64_t i = 0; i < m; i++) {
                    const float *wr = w + r * Kp, *xr = xp + i * k;
                    float acc = 0.0f;
                    for (uint64_t j = 0; j < k; j++) acc += xr[j] * wr[j];
                    y[i * n + nb * HC_TILE_N + r] = acc;
                }
        }
        free(w);
    }
    free(xp);
    free(owned);
    if (failed) {
        hc__fail(&err, HC_NOMEM, "out of memory for a %llu-column stripe", (unsigned long long)Kp);
        return err_out(HC_NOMEM, &err, msg, msg_len);
    }
    return HC_OK;
}
