/* families.c: the kernel family table and tensor-parallel shard planning. Padding rules:
 * rows to the MMA tile of the weight operand (64), columns to one K step of the tile (64
 * elements), never to 256. A tensor-parallel cut is predicted with shard.c's rules
 * (hc__shard_range for the parts, hc__shard_group_k for a cut inside a scale group), the ones
 * convert applies, so validate's report and convert's output cannot disagree. */
#include "families.h"

#include <stdio.h>
#include <string.h>

#include "shard.h"
#include "tiles.h"

/* The GPU families are the kernels of kernels/tile_mma.cu (docs/gpu.md): bf16 activations, 64 x 64
 * tiles. Integers of 1-4 bits are stored in nibbles and run on the int4 kernels, 5-8 bits in
 * bytes on the int8 ones. FP8-activation kernels (W4A8, MXFP4 x FP8) are not built yet: no
 * family claims them. */
static const hc_family fam_int4 = {"int4", "bf16", 64, 64};
static const hc_family fam_int8 = {"int8", "bf16", 64, 64};
static const hc_family fam_mxfp4 = {"mxfp4", "bf16", 64, 64};
static const hc_family fam_nvfp4 = {"nvfp4", "bf16", 64, 64};
static const hc_family fam_fp8 = {"fp8", "bf16", 64, 64};
static const hc_family fam_cpu = {"cpu", "f32", 1, 1};

static bool pow2_scales(const hc_qtensor *q) { return q->scale_dtype == HC_DT_F8_E8M0; }

/* Drops the GPU families (*n = 0, the reason in why) when the GPU loader would refuse the
 * module as the converter tiles it: the layout the planner picks, checked by the one rule of
 * contract/ (hc__tile_gpu_rule). */
static void gpu_rule(const hc_qtensor *q, size_t *n, char *why, size_t why_len) {
    hc_tile_plan pl;
    if (!hc__tile_plan_make(q, &pl)) { /* kept in its source layout: no GPU kernel reads that */
        *n = 0;
        snprintf(why, why_len, "%s", pl.reason);
        hc__tile_plan_free(&pl);
        return;
    }
    switch (hc__tile_gpu_rule(&pl.p)) {
    case HC_GPU_SMALL_GROUPS:
        *n = 0;
        snprintf(why, why_len, "scale groups of %llu columns are stored as groups of %llu; the "
                 "GPU kernels need at least 16", (unsigned long long)q->gk,
                 (unsigned long long)pl.p.g);
        break;
    case HC_GPU_FP4_DIVISOR:
        *n = 0;
        snprintf(why, why_len, "an fp4 global divisor with %s scales: the GPU kernels take E4M3 "
                 "scales only", hc_dtype_name(pl.p.scale_dtype));
        break;
    case HC_GPU_WIDE_K:
        *n = 0;
        snprintf(why, why_len, "K = %llu columns; the GPU kernels take rows of fewer than 2^31",
                 (unsigned long long)pl.p.K);
        break;
    case HC_GPU_NO_CODEC:
        *n = 0;
        snprintf(why, why_len, "layout %s has no GPU kernel", hc__layout_by_kind(pl.p.kind)->id);
        break;
    case HC_GPU_ZERO_RANGE: /* (the planner keeps such a module untiled: here for the switch) */
        *n = 0;
        snprintf(why, why_len, "a 4-bit zero point of %d is above %d, past what the GPU decode "
                 "takes exactly", pl.p.zero_const, HC_GPU_ZERO4_MAX);
        break;
    case HC_GPU_RUNS: break;
    }
    hc__tile_plan_free(&pl);
}

size_t hc__families_for(const hc_module *m, const hc_qtensor *q, const hc_family **out, size_t cap,
                       char *why, size_t why_len) {
    size_t n = 0;
#define ADD(f) \
    if (n < cap) out[n++] = &(f)
    why[0] = 0;
    (void)m;
    switch (q->kind) {
    case HC_Q_INT:
        if (q->bits >= 1 && q->bits <= 4) { ADD(fam_int4); }
        else if (q->bits >= 5 && q->bits <= 8) { ADD(fam_int8); }
        else snprintf(why, why_len, "no GPU kernel for %d-bit integers", q->bits);
        if (q->gn != 1 && n) {
            n = 0;
            snprintf(why, why_len, "integer scales grouped along N (%llu rows) have no kernel",
                     (unsigned long long)q->gn);
        }
        break;
    case HC_Q_FP4:
        if (q->gk == 32 && pow2_scales(q)) {
            ADD(fam_mxfp4);
        } else if (q->gk == 16 && q->global_div != 0) {
            ADD(fam_nvfp4);
        } else {
            snprintf(why, why_len, "fp4 with group %llu has no kernel", (unsigned long long)q->gk);
        }
        break;
    case HC_Q_FP8_E4M3:
        if (!hc__tile_scales_fit(q)) /* tiles.c keeps the source layout */
            snprintf(why, why_len, "F64 fp8 divisors have no tile layout (F32 would round them)");
        else ADD(fam_fp8);
        break;
    case HC_Q_FP8_E5M2: snprintf(why, why_len, "no kernel for e5m2 weights"); break;
    case HC_Q_PLAIN: break;
    }
    if (n) gpu_rule(q, &n, why, why_len);
    if (q->kind != HC_Q_PLAIN) ADD(fam_cpu);
    return n;
#undef ADD
}

static bool name_ends(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0 && (a == b || s[a - b - 1] == '.');
}

char hc__tp_role(const char *module) {
    static const char *const row[] = {"o_proj", "down_proj", "w2", "out_proj", "dense_4h_to_h",
                                      "c_proj", "wo", "dense"};
    static const char *const col[] = {"q_proj", "k_proj", "v_proj", "qkv_proj", "gate_proj",
                                      "up_proj", "gate_up_proj", "w1", "w3", "query_key_value",
                                      "dense_h_to_4h", "c_attn", "c_fc", "wq", "wk", "wv",
                                      "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"};
    for (size_t i = 0; i < sizeof row / sizeof row[0]; i++)
        if (name_ends(module, row[i])) return 'r';
    for (size_t i = 0; i < sizeof col / sizeof col[0]; i++)
        if (name_ends(module, col[i])) return 'c';
    return 0;
}

void hc__tp_shard(const hc_qtensor *q, char role, unsigned tp, const hc_family *fam,
                 hc_tp_plan *p) {
    memset(p, 0, sizeof *p);
    p->role = role;
    p->shard_n = q->N;
    p->shard_k = q->K;
    p->splits = true;
    p->group_aligned = true;
    /* the cut convert makes (hc__shard_range): each rank in turn takes ceil(d / tp) rows (or
     * columns) of what is left, so rank 0's part is the largest, and the cut is even only
     * when the last rank's part is as large as rank 0's */
    if (role == 'c' || role == 'r') {
        uint64_t d = role == 'c' ? q->N : q->K, b0, e0, b1, e1;
        hc__shard_range(d, tp, 0, &b0, &e0);
        hc__shard_range(d, tp, tp - 1, &b1, &e1);
        *(role == 'c' ? &p->shard_n : &p->shard_k) = e0 - b0;
        p->splits = e1 - b1 == e0 - b0;
    }
    /* the rank whose regrouped scale groups are smallest decides (convert cuts by the same
     * rule, hc__shard_group_k; an act-order cut keeps arbitrary columns of each group) */
    bool gpu_groups = true;
    for (unsigned r = 0; role == 'r' && q->kind != HC_Q_PLAIN && r < tp; r++) {
        uint64_t k0, k1, g = hc__shard_group_k(q, role, r, tp);
        hc__shard_range(q->K, tp, r, &k0, &k1);
        if (k1 == k0 || g == 0 || q->sk == 1 || (g == q->gk && !q->g_idx) ||
            (q->g_idx && g % q->gk == 0))
            continue;
        p->group_aligned = false;
        if (!p->regroup || g < p->regroup) p->regroup = g; /* each new group keeps its parent's scale */
        gpu_groups &= hc__tile_group_k((k1 - k0) / g, g) >= 16;
    }
    /* a multiple of 0 leaves the dim unpadded; no overflow: dims are below 2^53 */
    if (!hc__round_up_u64(p->shard_n, fam ? fam->n_multiple : 1, &p->pad_n)) p->pad_n = p->shard_n;
    if (!hc__round_up_u64(p->shard_k, fam ? fam->k_multiple : 1, &p->pad_k)) p->pad_k = p->shard_k;
    p->gpu = fam && strcmp(fam->name, "cpu") && gpu_groups;
}

uint64_t hc__module_bytes(const hc_qtensor *q) {
    if (q->kind == HC_Q_PLAIN) return hc__qtensor_numel(q) * 2;
    uint64_t codes = hc__cdiv_u64(q->E * q->N * q->K * (uint64_t)q->bits, 8);
    uint64_t groups = q->E * q->sn * q->sk;
    uint64_t sbytes = groups * (hc_dtype_bits(q->scale_dtype) ? hc_dtype_bits(q->scale_dtype) / 8 : 4);
    return codes + sbytes + (q->zeros ? hc__cdiv_u64(groups * (uint64_t)q->bits, 8) : 0) +
           (q->g_idx ? q->E * q->K * 4 : 0);
}
