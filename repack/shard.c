/* shard.c: tensor-parallel shards of the canonical tensor. Rows: a contiguous slice, block
 * scales expanded per row when the cut is not on a block boundary. Columns: a slice with the
 * scale grid regrouped to gcd(group, cut offset) so every new group lies inside one source
 * group. Act-order columns: the shard keeps an arbitrary subset of each source group, so its
 * groups are renumbered into groups of the gcd of those counts (each inside one source group,
 * its scale repeated), which the tile planner's sort makes contiguous. One rule
 * (hc__shard_group_k) serves convert and validate. */
#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hc__shard_range(uint64_t d, unsigned tp, unsigned rank, uint64_t *begin, uint64_t *end) {
    uint64_t piece = hc__cdiv_u64(d, tp);
    *begin = piece * rank < d ? piece * rank : d;
    *end = *begin + piece < d ? *begin + piece : d;
}

/* The gcd of the column counts the source groups keep in columns [k0, k1) of every expert;
 * 0 when out of memory. */
static uint64_t actorder_gcd(const hc_qtensor *q, uint64_t k0, uint64_t k1) {
    uint64_t *count = malloc((q->sk ? q->sk : 1) * sizeof *count), d = 0;
    if (!count) return 0;
    for (uint64_t e = 0; e < q->E; e++) {
        memset(count, 0, (q->sk ? q->sk : 1) * sizeof *count);
        for (uint64_t k = k0; k < k1; k++) count[q->g_idx[e * q->K + k]]++;
        for (uint64_t g = 0; g < q->sk; g++) d = hc__gcd_u64(d, count[g]);
    }
    free(count);
    return d;
}

uint64_t hc__shard_group_k(const hc_qtensor *q, char role, unsigned rank, unsigned tp) {
    if (q->kind == HC_Q_PLAIN || role != 'r') return q->gk;
    uint64_t k0, k1;
    hc__shard_range(q->K, tp, rank, &k0, &k1);
    if (k1 == k0 || (k0 == 0 && k1 == q->K)) return q->gk; /* nothing is cut */
    if (q->g_idx) return actorder_gcd(q, k0, k1);
    if (q->sk == 1) return k1 - k0; /* one scale per row */
    return k0 % q->gk ? hc__gcd_u64(q->gk, k0) : q->gk;
}

/* Act-order shard (codes already cut): source group g keeps c_g columns; they become c_g / gk
 * new groups of gk columns, numbered in source-group order, each with g's scale and zero. */
static bool actorder_regroup(const hc_qtensor *q, uint64_t k0, hc_qtensor *out) {
    uint64_t K = out->K, gk = out->gk, sk = K / gk, sn = q->sn;
    uint64_t *base = malloc((q->sk ? q->sk : 1) * sizeof *base);
    uint64_t *seen = malloc((q->sk ? q->sk : 1) * sizeof *seen);
    uint64_t *src = malloc(sk * sizeof *src); /* source group of each new group */
    bool ok = base && seen && src;
    out->sk = sk;
    out->g_idx = ok ? malloc(q->E * K * sizeof(int32_t)) : NULL;
    out->scales = ok ? malloc(q->E * sn * sk * sizeof(double)) : NULL;
    out->zeros = ok && q->zeros ? malloc(q->E * sn * sk * sizeof(int32_t)) : NULL;
    ok = ok && out->g_idx && out->scales && (!q->zeros || out->zeros);
    for (uint64_t e = 0; ok && e < q->E; e++) {
        const int32_t *gi = q->g_idx + e * q->K + k0;
        memset(seen, 0, q->sk * sizeof *seen);
        for (uint64_t k = 0; k < K; k++) seen[gi[k]]++;
        for (uint64_t g = 0, b = 0; g < q->sk; g++) base[g] = b, b += seen[g] / gk, seen[g] = 0;
        for (uint64_t k = 0; k < K; k++) {
            uint64_t g = (uint64_t)gi[k], id = base[g] + seen[g]++ / gk;
            out->g_idx[e * K + k] = (int32_t)id;
            src[id] = g;
        }
        for (uint64_t i = 0; i < sn; i++)
            for (uint64_t j = 0; j < sk; j++) {
                uint64_t s = (e * q->sn + i) * q->sk + src[j], d = (e * sn + i) * sk + j;
                out->scales[d] = q->scales[s];
                if (q->zeros) out->zeros[d] = q->zeros[s];
            }
    }
    free(base), free(seen), free(src);
    return ok;
}

bool hc__qtensor_shard(const hc_qtensor *q, char role, unsigned rank, unsigned tp, hc_qtensor *out,
                      char *why, size_t why_len) {
    *out = *q;
    out->codes = NULL, out->plain = NULL, out->scales = NULL, out->zeros = NULL, out->g_idx = NULL;
    out->packed = NULL; /* the shard's codes are copied, not viewed */
    uint64_t n0 = 0, n1 = q->N, k0 = 0, k1 = q->K;
    if (role == 'c') hc__shard_range(q->N, tp, rank, &n0, &n1);
    else if (role == 'r') hc__shard_range(q->K, tp, rank, &k0, &k1);
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
    uint64_t gn = q->gn, gk = hc__shard_group_k(q, role, rank, tp);
    if (gk == 0) goto nomem;
    if (n0 % q->gn) gn = 1; /* rows no longer aligned to blocks: per row */
    if (q->g_idx && role == 'r') {
        out->gk = gk;
        if (!actorder_regroup(q, k0, out)) goto nomem;
        return true;
    }
    uint64_t sn = hc__cdiv_u64(N, gn), sk = q->g_idx ? q->sk : hc__cdiv_u64(K, gk);
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
    hc__qtensor_free(out);
    snprintf(why, why_len, "out of memory");
    return false;
}
