/* moe_bench.c (make bench-moe): hc_gpu_moe on the lent GPU for three model-like MoE blocks at M
 * from 1 to 16384 tokens, beside the peers measured in the same run: the device's stream-read
 * rate and a loop a user could write -- one cuBLASLt bf16 GEMM per touched expert for gate_up
 * and one for down, on bf16 weights of the same shapes, captured in a CUDA graph (the gather,
 * the activation and the weighted sum are not timed for it: a generous peer). Blocks:
 *   qwen3-30b-a3b-like  E=128 top-8 H=2048 I=768, int4 g128 (bf16 scales), gate/up/down per expert
 *   gpt-oss-120b-like   E=128 top-4 H=2880 I=2880, MXFP4 (folded), fused interleaved gate_up,
 *                       biases, clamped SwiGLU
 *   deepseek-v3-tp8     E=256 top-8 H=7168 I=256, FP8 block 128 (f32 scales), per expert
 * Ours is timed as CUDA-graph replays of 16 calls, each with its own uniform random routing (so
 * consecutive calls touch other experts, as a decode step's layers do: no L2 reuse of a hot
 * expert across calls), the median of 7 replays per call. Small M prints GB/s over the experts
 * the routing touched (their tile bytes / time), large M TFLOP/s (2 x slots x 3 H I / time). In
 * a bench build (-DHC_BENCH_DIAG=1, docs/gpu.md) the gate_up GEMM alone is timed too (the block
 * stopped after gate_up, less the block stopped after routing), with Humming's indexed MoE GEMM
 * for the Qwen3-like gate_up on this H200 beside: its correct call (bench/humming_moe.py, timed
 * the same way, session 37 -- issue 15's table was taken with an old call form that read about
 * half the touched experts; the `humming` step of bench/device_run.sh measures it again). Where
 * a row at M >= 4096 runs, our dense GEMM of the block's layout at 8192^2 and M = 4096 is timed
 * first, and those rows print their TFLOP/s as a share of it (the large-M target's
 * denominator, dense_tflops). */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_diag.h"
#include "hconvert.h"
#define BENCH_NAME "moe_bench"
#include "gpu_benchutil.h"
#include "moe_synth.h"

#define NR 16 /* routings per graph (calls) */

typedef struct {
    const char *name;
    int spec; /* synth_specs[] */
    mcfg cfg;
    uint64_t topk;
    double humming_gate_up[7]; /* us at Ms[], 0: not measured */
} bshape;

static const uint64_t Ms[] = {1, 16, 64, 256, 1024, 4096, 16384};
#define NMS (sizeof Ms / sizeof Ms[0])

static const bshape shapes[] = {
    {"qwen3-30b-a3b-like", 0, {128, 2048, 768, G_SPLIT, false, false, false, NULL}, 8,
     {9.1, 44.1, 64.5, 73.5, 126.7, 419.5, 0}},
    {"gpt-oss-120b-like", 7, {128, 2880, 2880, G_INTERLEAVED, false, true, true, NULL}, 4, {0}},
    {"deepseek-v3-tp8-like", 8, {256, 7168, 256, G_SPLIT, false, false, false, NULL}, 8, {0}},
};

static uint64_t rng(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

typedef struct {
    hc_gpu_model *md;
    const void *x;
    void *y;
    int32_t *ids[NR];
    float *w[NR];
    uint64_t m, k;
    bool soft; /* a forced kernel: a refusal is printed and timed as -1, not fatal */
} ours_ctx;

/* NR calls call(ctx, i, s) -- each 0 or dies -- captured on s and replayed: the median per
 * call (after a warm-up outside the capture, which the caller does). */
static double graph_us(void (*call)(void *, int, cudaStream_t), void *ctx, cudaStream_t s) {
    CK(cudaStreamSynchronize(s));
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < NR; i++) call(ctx, i, s);
    CK(cudaStreamEndCapture(s, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    double us = replay_us(ge, s, NR);
    cudaGraphExecDestroy(ge), cudaGraphDestroy(gr);
    return us;
}

/* call i of ours: hc_gpu_moe with routing i; its status, msg the refusal */
static hc_status ours_try(ours_ctx *c, int i, cudaStream_t s, char *msg, size_t cap) {
    return hc_gpu_moe(c->md, "mlp", c->x, c->m, c->ids[i], c->w[i], c->k, c->y, s, msg, cap);
}
static void ours_call(void *vc, int i, cudaStream_t s) {
    char msg[1024];
    if (ours_try(vc, i, s, msg, sizeof msg)) die("hc_gpu_moe (capture)", msg);
}

/* NR calls of hc_gpu_moe (routing i in call i) captured and replayed. */
static double ours_us(ours_ctx *c, cudaStream_t s) {
    char msg[1024];
    for (int i = 0; i < NR; i++) /* warm-up, outside the capture */
        if (ours_try(c, i, s, msg, sizeof msg)) {
            if (!c->soft) die("hc_gpu_moe", msg);
            printf("    (refused: %s)\n", msg);
            return -1;
        }
    return graph_us(ours_call, c, s);
}

/* ---- the peer: cuBLASLt bf16 per touched expert ---- */
typedef struct {
    uint64_t m, n, k;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} lt_plan;
typedef struct {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    void *ws;
    size_t ws_bytes;
    lt_plan *p;
    size_t np, cap;
} lt_ctx;

static const lt_plan *lt_get(lt_ctx *c, uint64_t m, uint64_t n, uint64_t k) {
    for (size_t i = 0; i < c->np; i++)
        if (c->p[i].m == m && c->p[i].n == n && c->p[i].k == k) return &c->p[i];
    if (c->np == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        if (!(c->p = realloc(c->p, c->cap * sizeof *c->p))) die("lt", "out of memory");
    }
    lt_plan *p = &c->p[c->np++];
    p->m = m, p->n = n, p->k = k;
    LT(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, k, n, k));
    LT(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, k, m, k));
    LT(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &c->ws_bytes, sizeof c->ws_bytes));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(c->h, c->op, p->a, p->b, p->c, p->c, pref, 1, &res, &found));
    if (!found) die("cuBLASLt", "no algorithm");
    p->algo = res.algo;
    cublasLtMatmulPreferenceDestroy(pref);
    return p;
}

static void lt_mm(lt_ctx *c, const void *w, const void *x, void *y, uint64_t m, uint64_t n,
                  uint64_t k, cudaStream_t s) {
    const lt_plan *p = lt_get(c, m, n, k);
    float one = 1.0f, zero = 0.0f;
    LT(cublasLtMatmul(c->h, c->op, &one, w, p->a, x, p->b, &zero, y, p->c, y, p->c, &p->algo,
                      c->ws, c->ws_bytes, s));
}

/* The expert loop for NR routings, captured and replayed: per call, for each expert with c
 * rows, gate_up [c, 2I] = X_e Wgu_e^T and down [c, H] = H_e Wd_e^T. */
static double peer_us(lt_ctx *lc, const bshape *b, void *const *wgu, void *const *wd,
                      const void *x, void *hb, void *yb, int32_t *const *hids, uint64_t m,
                      cudaStream_t s) {
    const uint64_t E = b->cfg.E, H = b->cfg.H, I = b->cfg.I, S = m * b->topk;
    uint64_t *cnt = calloc(E, sizeof *cnt);
    for (int pass = 0; pass < 2; pass++) { /* plans first (not capturable), then the capture */
        cudaGraph_t gr;
        if (pass) CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < NR; i++) {
            memset(cnt, 0, E * sizeof *cnt);
            for (uint64_t q = 0; q < S; q++) cnt[hids[i][q]]++;
            uint64_t row = 0;
            for (uint64_t e = 0; e < E; e++) {
                if (!cnt[e]) continue;
                uint64_t c = cnt[e], xr = row % (m > 1 ? m : 1);
                if (xr + c > m) xr = 0; /* (X rows: any c rows of x; the gather is not timed) */
                const uint16_t *xe = (const uint16_t *)x + xr * H;
                if (pass) {
                    lt_mm(lc, wgu[e], xe, (uint16_t *)hb + row * 2 * I, c, 2 * I, H, s);
                    lt_mm(lc, wd[e], (uint16_t *)hb + row * 2 * I, (uint16_t *)yb + row * H, c,
                          H, I, s);
                } else {
                    lt_get(lc, c, 2 * I, H), lt_get(lc, c, H, I);
                }
                row += c;
            }
        }
        if (!pass) continue;
        CK(cudaStreamEndCapture(s, &gr));
        cudaGraphExec_t ge;
        CK(cudaGraphInstantiate(&ge, gr, 0));
        double us = replay_us(ge, s, NR);
        cudaGraphExecDestroy(ge), cudaGraphDestroy(gr);
        free(cnt);
        return us;
    }
    free(cnt);
    return 0;
}

static void fill_bf16(void *dev, uint64_t count, uint64_t seed) {
    uint16_t *h = malloc(count * 2);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
    for (uint64_t i = 0; i < count; i++) h[i] = (uint16_t)(0x3C00 | (rng(&s) & 0x80FF)); /* ~+-2^-7 */
    CK(cudaMemcpy(dev, h, count * 2, cudaMemcpyHostToDevice));
    free(h);
}

/* ---- the denominator of the large-M target (>= 80% of our dense large-M rate):
 * our dense GEMM of the block's own layout (its synth spec) at N = K = 8192, M = 4096 (the
 * dense benchmark's square layer), copies rotated past L2 as gpu_bench rotates them, NR calls
 * captured and replayed; TFLOP/s. Each layout's dense kernels are what its MoE tiles reuse, so
 * the ratio says how much the grouping costs, not how fast the layout's decode is. ---- */
#define DENSE_N 8192ull
#define DENSE_M 4096ull
typedef struct {
    hc_gpu_model *md;
    uint32_t copies;
    const void *x;
    void *y;
} dense_ctx;
/* call i: the dense layer's copy i % copies over x */
static void dense_call(void *vc, int i, cudaStream_t s) {
    const dense_ctx *c = vc;
    char msg[1024];
    if (hc_gpu_linear(c->md, "w", (uint32_t)i % c->copies, c->x, DENSE_M, DENSE_N, c->y, DENSE_N,
                      s, msg, sizeof msg))
        die("hc_gpu_linear", msg);
}
static double dense_tflops(hc_gpu *g, int spec, cudaStream_t s) {
    char msg[1024], path[128];
    snprintf(path, sizeof path, "/tmp/hc-moe-bench-dense-%d.hconvert", (int)getpid());
    const synth_spec *sp = &synth_specs[spec];
    const uint64_t one = DENSE_N * DENSE_N * sp->code_bits / 8; /* (codes: about a copy's bytes) */
    const uint32_t copies = (uint32_t)((200ull << 20) / one + 1);
    hc_container *c = NULL;
    hc_gpu_model *md = NULL;
    if (synth_container(path, sp, copies, DENSE_N, DENSE_N, false, 31, NULL, msg, sizeof msg) ||
        hc_container_open(path, 0, &c, msg, sizeof msg) ||
        hc_gpu_model_load(g, c, NULL, &md, msg, sizeof msg))
        die("dense layer", msg);
    void *x, *y;
    CK(cudaMalloc(&x, DENSE_M * DENSE_N * 2));
    CK(cudaMalloc(&y, DENSE_M * DENSE_N * 2));
    fill_bf16(x, DENSE_M * DENSE_N, 7);
    dense_ctx dc = {md, copies, x, y};
    for (int i = 0; i < NR; i++) dense_call(&dc, i, s); /* warm-up, outside the capture */
    const double us = graph_us(dense_call, &dc, s);
    cudaFree(x), cudaFree(y);
    hc_gpu_model_free(md);
    hc_container_free(c);
    unlink(path);
    const double tf = 2.0 * DENSE_M * DENSE_N * DENSE_N / us * 1e-6;
    printf("    our dense rate of this layout (%s, %llu x %llu at M = %llu, %u copies): %.1f us, "
           "%.1f TFLOP/s\n", sp->label, DENSE_N, DENSE_N, DENSE_M, copies, us, tf);
    return tf;
}

/* The block's time with grouped kernel `name` forced (false where the device or the layout
 * has none), and its gate_up GEMM's by difference in the bench build (else 0); the chooser's
 * kernel again after. */
static bool forced_us(hc_gpu_model *md, ours_ctx *oc, cudaStream_t s, const char *name,
                      double *block, double *gate_up) {
    char msg[1024];
    if (hc_gpu_model_force_kernel(md, name, msg, sizeof msg) != HC_OK) return false;
    oc->soft = true;
    *block = ours_us(oc, s), *gate_up = 0;
#ifdef HC_BENCH_DIAG
    if (*block > 0) {
        hc__gpu_diag_moe_stages(md, 1);
        double a1 = ours_us(oc, s);
        hc__gpu_diag_moe_stages(md, 3); /* (gate_up with its expand, as the peers gather) */
        *gate_up = ours_us(oc, s) - a1;
        hc__gpu_diag_moe_stages(md, 0);
    }
#endif
    oc->soft = false;
    hc_gpu_model_force_kernel(md, NULL, msg, sizeof msg);
    return *block > 0;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* (a device call cut short keeps the lines printed) */
    hc_gpu *g = bench_open();
    if (!g) return 0;
    char msg[1024];
    double stream = bench_stream(g);
    cublasLtHandle_t lth;
    LT(cublasLtCreate(&lth));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const uint64_t Mmax = Ms[NMS - 1];
    int only = getenv("HC_BENCH_MOE_SHAPE") ? atoi(getenv("HC_BENCH_MOE_SHAPE")) : -1;
    /* HC_BENCH_MOE_SWEEP=1: at M = 256, 1024, 4096 and 16384 (or HC_BENCH_MOE_M), every
     * grouped kernel whose tile could serve the routing forced in turn beside the chooser's
     * (which tile serves a routing whose experts' rows spread around r) */
    const bool sweep = getenv("HC_BENCH_MOE_SWEEP") != NULL;
    /* HC_BENCH_MOE_M=16: that M only (profiling one launch: bench/ncu_profile.sh PROG=moe) */
    const uint64_t one_m = getenv("HC_BENCH_MOE_M") ? strtoull(getenv("HC_BENCH_MOE_M"), NULL, 10) : 0;
    /* HC_BENCH_MOE_MMAX=64: the decode range only (a short device call) */
    const uint64_t m_max = getenv("HC_BENCH_MOE_MMAX") ? strtoull(getenv("HC_BENCH_MOE_MMAX"), NULL, 10) : 0;
    for (size_t bi = 0; bi < sizeof shapes / sizeof shapes[0]; bi++) {
        if (only >= 0 && (size_t)only != bi) continue;
        const bshape *b = &shapes[bi];
        const uint64_t E = b->cfg.E, H = b->cfg.H, I = b->cfg.I, k = b->topk;
        char path[128];
        snprintf(path, sizeof path, "/tmp/hc-moe-bench-%d.hconvert", (int)getpid());
        double t0 = (double)clock() / CLOCKS_PER_SEC;
        if (write_block(path, &synth_specs[b->spec], &b->cfg, 17 + bi, NULL, msg, sizeof msg))
            die("write", msg);
        hc_container *c = NULL;
        hc_gpu_model *md = NULL;
        if (hc_container_open(path, 0, &c, msg, sizeof msg)) die("open", msg);
        if (hc_gpu_model_load(g, c, NULL, &md, msg, sizeof msg)) die("load", msg);
        uint64_t layers, bytes, ebytes = 0;
        double secs;
        hc_gpu_model_stats(md, &layers, &bytes, &secs);
        for (size_t i = 0; i < hc_container_tensor_count(c); i++) {
            const hc_tensor_info *t = hc_container_tensor(c, i);
            if (t->layout_params) ebytes += t->length;
        }
        const double per_expert = (double)ebytes / (double)E;
        printf("\n%s: E=%llu top-%llu H=%llu I=%llu %s: experts %.2f GB (%.2f MB each); "
               "generated in %.0f s, loaded in %.2f s\n", b->name, (unsigned long long)E,
               (unsigned long long)k, (unsigned long long)H, (unsigned long long)I,
               synth_specs[b->spec].label, (double)ebytes / 1e9, per_expert / 1e6,
               (double)clock() / CLOCKS_PER_SEC - t0, secs);
        /* activations, outputs, routings; the peer's bf16 weights and buffers */
        void *x, *y, *hb, *yb, *lws;
        CK(cudaMalloc(&x, Mmax * H * 2));
        CK(cudaMalloc(&y, Mmax * H * 2));
        CK(cudaMalloc(&hb, Mmax * k * 2 * I * 2));
        CK(cudaMalloc(&yb, Mmax * k * H * 2));
        fill_bf16(x, Mmax * H, 5);
        size_t lws_bytes = 64ull << 20;
        CK(cudaMalloc(&lws, lws_bytes));
        void **wgu = calloc(E, sizeof *wgu), **wd = calloc(E, sizeof *wd);
        for (uint64_t e = 0; e < E; e++) {
            CK(cudaMalloc(&wgu[e], 2 * I * H * 2));
            CK(cudaMalloc(&wd[e], H * I * 2));
            fill_bf16(wgu[e], 2 * I * H, 100 + e), fill_bf16(wd[e], H * I, 900 + e);
        }
        lt_ctx lc = {.h = lth, .ws = lws, .ws_bytes = lws_bytes};
        LT(cublasLtMatmulDescCreate(&lc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        LT(cublasLtMatmulDescSetAttribute(lc.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        LT(cublasLtMatmulDescSetAttribute(lc.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        /* (where a row at M >= 4096 runs: the large-M target's denominator first) */
        const bool large = one_m ? one_m >= 4096 : !m_max || m_max >= 4096;
        const double dense = large ? dense_tflops(g, b->spec, s) : 0;
        printf("%-22s %6s | %9s %9s %8s %6s %7s | %9s %6s | %s\n", "block", "M", "block us",
               "gate_up", "GB/s", "stream", "TFLOP/s", "cuBLASLt", "TFLOP/s", "peer/ours");
        /* (HC_BENCH_MOE_M: that M alone, one of Ms or not -- mi = NMS then: no peer figure) */
        for (size_t ri = 0; ri < (one_m ? 1 : NMS); ri++) {
            size_t mi = ri;
            if (one_m)
                for (mi = 0; mi < NMS && Ms[mi] != one_m; mi++) continue;
            const uint64_t M = one_m ? one_m : Ms[mi], S = M * k;
            if ((sweep && !one_m && M != 256 && M != 1024 && M != 4096 && M != 16384) ||
                (m_max && M > m_max))
                continue;
            ours_ctx oc = {md, x, y, {0}, {0}, M, k, false};
            int32_t *hids[NR];
            float *hw = malloc(S * 4);
            double touched = 0;
            uint64_t r = 0x1234567ull + mi * 77;
            uint8_t *seen = malloc(E);
            for (int i = 0; i < NR; i++) {
                hids[i] = malloc(S * 4);
                memset(seen, 0, E);
                for (uint64_t t = 0; t < M; t++)
                    for (uint64_t j = 0; j < k; j++) {
                        int32_t e;
                        bool dup;
                        do { /* distinct experts per token */
                            e = (int32_t)(rng(&r) % E);
                            dup = false;
                            for (uint64_t q = 0; q < j; q++) dup |= hids[i][t * k + q] == e;
                        } while (dup);
                        hids[i][t * k + j] = e;
                        hw[t * k + j] = (float)(rng(&r) % 1000 + 1) / 1000.0f;
                        seen[e] = 1;
                    }
                for (uint64_t e = 0; e < E; e++) touched += seen[e];
                CK(cudaMalloc((void **)&oc.ids[i], S * 4));
                CK(cudaMalloc((void **)&oc.w[i], S * 4));
                CK(cudaMemcpy(oc.ids[i], hids[i], S * 4, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(oc.w[i], hw, S * 4, cudaMemcpyHostToDevice));
            }
            touched = touched / NR * per_expert;
            double us = ours_us(&oc, s), gu = 0, st[6] = {0};
#ifdef HC_BENCH_DIAG
            /* the stages by difference: the block stopped after route, expand, gate_up, act,
             * down; "gate_up" is the GEMM with its expand (Humming's gathers its rows) */
            for (unsigned q = 1; q <= 5; q++) {
                hc__gpu_diag_moe_stages(md, q);
                st[q] = ours_us(&oc, s);
            }
            hc__gpu_diag_moe_stages(md, 0);
            gu = st[3] - st[1];
#endif
            double pus = peer_us(&lc, b, wgu, wd, x, hb, yb, hids, M, s);
            double fl = 2.0 * (double)S * 3.0 * (double)H * (double)I;
            char gus[32] = "-";
            if (gu > 0) snprintf(gus, sizeof gus, "%.1f", gu);
            printf("%-22s %6llu | %9.1f %9s %8.0f %5.0f%% %7.1f | %9.1f %6.1f | %.2fx\n", b->name,
                   (unsigned long long)M, us, gus, touched / us * 1e-3,
                   100.0 * touched / us * 1e-3 / stream, fl / us * 1e-6, pus, fl / pus * 1e-6,
                   pus / us);
            if (M >= 4096 && dense > 0)
                printf("    %.1f TFLOP/s = %.0f%% of our dense rate of this layout (the issue's "
                       "target: 80%%)\n", fl / us * 1e-6, 100.0 * fl / us * 1e-6 / dense);
            if (st[1] > 0)
                printf("    stages: route %.1f, expand %.1f, gate_up %.1f, act %.1f, down %.1f, "
                       "finalize %.1f us\n", st[1], st[2] - st[1], st[3] - st[2], st[4] - st[3],
                       st[5] - st[4], us - st[5]);
            if (mi < NMS && b->humming_gate_up[mi] > 0 && gu > 0)
                printf("    gate_up: ours %.1f us, Humming %.1f us (H200, session 37) = %.2fx\n", gu,
                       b->humming_gate_up[mi], b->humming_gate_up[mi] / gu);
            /* each grouped kernel where its tile could serve the routing's rows an expert r (a
             * bit each: r <= 16, <= 64, <= 256, past), the forced-only ones too (moe-ws96,
             * moe-ws256r: bench/NOTES.md v62, v63) */
            static const struct {
                const char *name;
                unsigned at;
            } alts[] = {{"moe-t16", 3},   {"moe-skinny16", 3}, {"moe-skinny32", 3},
                        {"moe-skinny64", 3}, {"moe-ws64", 7}, {"moe-ws128", 15},
                        {"moe-ws256", 12}, {"moe-ws96", 2},     {"moe-ws256r", 4},
                        {"moe-ws288", 12}, {"moe-ws96w", 6}, {"moe-ws24x6", 1},
                        {"moe-ws80r", 6}, {"moe-ws80d", 6}, {"moe-skinny24", 1},
                        {"moe-ws160", 4}};
            const uint64_t rx = (S + (S < E ? S : E) - 1) / (S < E ? S : E);
            const unsigned at = rx <= 16 ? 1u : rx <= 64 ? 2u : rx <= 256 ? 4u : 8u;
            for (size_t q = 0; sweep && q < sizeof alts / sizeof alts[0]; q++) {
                double aus, agu;
                if ((alts[q].at & at) && forced_us(md, &oc, s, alts[q].name, &aus, &agu))
                    printf("    sweep M=%llu: %-12s block %7.1f us, gate_up %7.1f us\n",
                           (unsigned long long)M, alts[q].name, aus, agu);
            }
            if (!sweep) { /* 4 < rows per expert <= 64: the kernels the chooser weighs there,
                 * forced beside its pick (skinny16 on both projections at 5-9, where a long K
                 * runs on t16; ws24x6 and skinny32 at 10-16 beside skinny24; skinny64 at 17-64
                 * beside skinny32, ws80r or ws80d) */
                const uint64_t rpe = rx;
                const char *alts2[2] = {rpe <= 4    ? NULL
                                        : rpe <= 9  ? "moe-skinny16"
                                        : rpe <= 16 ? "moe-ws24x6"
                                        : rpe <= 64 ? "moe-skinny64"
                                                    : NULL,
                                        rpe > 9 && rpe <= 16 ? "moe-skinny32" : NULL};
                double aus, agu;
                for (int q = 0; q < 2; q++)
                    if (alts2[q] && forced_us(md, &oc, s, alts2[q], &aus, &agu))
                        printf("    %llu rows per expert: %s forced: block %.1f us, gate_up %.1f us "
                               "(auto: %.1f, %.1f)\n", (unsigned long long)rpe, alts2[q], aus, agu,
                               us, gu);
                /* tiles of 8: the chooser runs moe-w8 for a short-K down at enough items
                 * (gpu_plan.c w8_serves); moe-t8 and moe-w8 forced on both projections beside */
                for (int q = 0; q < 2 && rpe <= 4; q++) {
                    const char *nm = q ? "moe-w8" : "moe-t8";
                    if (forced_us(md, &oc, s, nm, &aus, &agu))
                        printf("    %llu rows per expert: %s forced: block %.1f us, gate_up %.1f us "
                               "(auto: %.1f, %.1f)\n", (unsigned long long)rpe, nm, aus, agu, us,
                               gu);
                }
            }
            for (int i = 0; i < NR; i++) cudaFree(oc.ids[i]), cudaFree(oc.w[i]), free(hids[i]);
            free(hw), free(seen);
        }
        for (size_t i = 0; i < lc.np; i++) {
            cublasLtMatrixLayoutDestroy(lc.p[i].a), cublasLtMatrixLayoutDestroy(lc.p[i].b);
            cublasLtMatrixLayoutDestroy(lc.p[i].c);
        }
        free(lc.p);
        cublasLtMatmulDescDestroy(lc.op);
        for (uint64_t e = 0; e < E; e++) cudaFree(wgu[e]), cudaFree(wd[e]);
        free(wgu), free(wd);
        cudaFree(x), cudaFree(y), cudaFree(hb), cudaFree(yb), cudaFree(lws);
        hc_gpu_model_free(md);
        hc_container_free(c);
        unlink(path);
    }
    cudaStreamDestroy(s);
    cublasLtDestroy(lth);
    hc_gpu_free(g);
    return 0;
}
