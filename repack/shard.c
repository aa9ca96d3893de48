/* shard.c: tensor-parallel shards of the canonical tensor. Rows: a contiguous slice, block
 * scales expanded per row when the cut is not on a block boundary. Columns: a slice with the
 * scale grid regrouped to gcd(group, cut offset) so every new group lies inside one source
 * group; act-order keeps its g_idx (the tile planner then decides whether it can reorder). */
#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hc_shard_range(uint64_t d, unsigned tp, unsigned rank, uint64_t *begin, uint64_t *end) {
    uint64_t piece = (d + tp - 1) / tp;
    *begin = piece * rank < d ? piece * rank : d;
    *end = *begin + piece < d ? *begin + piece : d;
}

bool hc_qtensor_shard(const hc_qtensor *q, char role, unsigned rank, unsigned tp, hc_qtensor *out,
                      char *why, size_t why_len) {
    *out = *q;
    out->codes = NULL, out->plain = NULL, out->scales = NULL, out->zeros = NULL, out->g_idx = NULL;
    out->packed = NULL; /* the shard's codes are copied, not viewed */
    uint64_t n0 = 0, n1 = q->N, k0 = 0, k1 = q->K;
    if (role == 'c') hc_shard_range(q->N, tp, rank, &n0, &n1);
    else if (role == 'r') hc_shard_range(q->K, tp, rank, &k0, &k1);
    uint64_t N = n1 - n0, K = k1 - k0;
    if (N == 0 || K == 0) {
        snprintf(why, why_len, "rank %u of %u gets no %s", rank, tp, role == 'c' ? "rows" : "columns");
        return false;
    }
    out->N = N, out->K = K;
    if (q->kind == HC_Q_PLAIN) {
        out->plain = malloc(q->E * N * K * sizeof(double));
        if (!out->plain) goto nomem;
        for (uint64_t e = 0; e < q->E; e++)
            for (uint64_t n = 0; n < N; n++)
                memcpy(out->plain + (e * N + n) * K, q->plain + (e * q->N + n0 + n) * q->K + k0,
                       K * sizeof(double));
        out->plain_shape[0] = N;
        if (q->ndim == 2) out->plain_shape[1] = K;
        return true;
    }
    if (q->codes) {
        out->codes = malloc(q->E * N * K);
        if (!out->codes) goto nomem;
        for (uint64_t e = 0; e < q->E; e++)
            for (uint64_t n = 0; n < N; n++)
                memcpy(out->codes + (e * N + n) * K, q->codes + (e * q->N + n0 + n) * q->K + k0, K);
    }
    /* the new scale grid */
    uint64_t gn = q->gn, gk = q->gk;
    if (n0 % q->gn) gn = 1;                  /* rows no longer aligned to blocks: per row */
    if (q->g_idx) gk = q->gk;                /* act-order: group ids stay, g_idx is cut */
    else if (q->sk == 1) gk = K;             /* one scale per row */
    else if (k0 % q->gk) gk = hc_gcd_u64(q->gk, k0);
    uint64_t sn = (N + gn - 1) / gn, sk = q->g_idx ? q->sk : (K + gk - 1) / gk;
    if (q->sk == 1) sk = 1;
    out->gn = gn, out->gk = gk, out->sn = sn, out->sk = sk;
    out->scales = malloc(q->E * sn * sk * sizeof(double));
    if (q->zeros) out->zeros = malloc(q->E * sn * sk * sizeof(int32_t));
    if (!out->scales || (q->zeros && !out->zeros)) goto nomem;
    for (uint64_t e = 0; e < q->E; e++)
        for (uint64_t i = 0; i < sn; i++)
            for (uint64_t j = 0; j < sk; j++) {
                uint64_t srow = (n0 + i * gn) / q->gn;
                uint64_t scol = q->g_idx || q->sk == 1 ? j : (k0 + j * gk) / q->gk;
                uint64_t s = (e * q->sn + srow) * q->sk + scol, d = (e * sn + i) * sk + j;
                out->scales[d] = q->scales[s];
                if (q->zeros) out->zeros[d] = q->zeros[s];
            }
    if (q->g_idx) {
        out->g_idx = malloc(q->E * K * sizeof(int32_t));
        if (!out->g_idx) goto nomem;
        for (uint64_t e = 0; e < q->E; e++)
            memcpy(out->g_idx + e * K, q->g_idx + e * q->K + k0, K * sizeof(int32_t));
    }
    return true;
nomem:
    hc_qtensor_free(out);
    snprintf(why, why_len, "out of memory");
    return false;
}
