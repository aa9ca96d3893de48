/* moe_test.c: hc_gpu_moe on the GPU against a float64 reference written here from the
 * generated weights (tile_synth.h: the codes, scales and zero points as they are generated, not
 * read back through the layout) and against the CPU twin hc_cpu_moe_block. Every layout x
 * block shapes (per-expert gate/up/down with act-order permutations for the integer codes,
 * SiLU, NVFP4 experts each with their own global divisor; a gpt-oss-like fused interleaved
 * gate_up with biases and the clamped SwiGLU, E = 128; a fused stacked gate_up with H % 8 != 0;
 * H = 2560 at small M, where K is split over blocks and gate_up and down run different
 * kernels) x M in {1, 3, 16, 64, 333} x top-k in
 * {1, 2, 4, 8} on the E = 8 and E = 128 blocks (one top-k each in turn on the others; 4096 with
 * every top-k on the GPU; 16384 x top-8 past a chunk of the workspace), uniform and skewed
 * routing (ids -1 and E included: they contribute nothing), each grouped kernel forced once
 * per layout (moe-ws96 also at M = 333 x top-4: two 96-row tiles an expert; moe-ws256r where
 * experts get a 256-row tile and a 64-row remainder, one of them alone, uniform and skewed;
 * moe-ws288 at ~300 and ~166 rows an expert, moe-ws96w at ~166, moe-ws24x6 at ~16 and ~256,
 * moe-ws80r and moe-ws80d at ~64 and ~166), the activation in gate_up's epilogue (the default
 * wherever the plan allows) and
 * in its own launch (forced "moe-act-apart") on the picks and each warp-specialised tile, a
 * rank of expert parallelism, and the same bits on a second run; the
 * warp-owned small-M kernel (moe-w8) forced on every block. Without a GPU
 * it checks the CPU twin against the reference on the first layout (and says so).
 * HC_GPU_TEST_QUICK (the sanitizer runs): the first layout only. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hconvert.h"
#include "hcrt.h"
#include "moe_synth.h"

static int passed, failed;
/* check() forces "moe-act-apart" too: the activation in a launch of its own where the plan
 * (runtime/gpu_plan.c hc__gpu_moe_fuse_plan) would put it in gate_up's epilogue */
static bool act_apart;

static float bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1)) & 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }

/* The float64 block and a per-output bound on |gpu - ref|: the GPU rounds gate/up sums, the
 * activation's output, each expert's down output and y to bf16 (2^-8 relative each) and, on
 * the tensor-core paths, the scaled weights to bf16; the bound carries each rounding through
 * the activation's derivative and the down projection's |weights|, doubled. */
static void reference(const mcfg *c, const mref *r, const float *xb, uint64_t M,
                      const int32_t *ids, const float *w, uint64_t k, double *y, double *bnd) {
    const uint64_t H = c->H, I = c->I;
    /* tokens over the cores (each its own rows of y and bnd; the sums in the same order as on
     * one core): the M = 4096-16384 checks are most of the full run's time otherwise */
#pragma omp parallel
    {
        double *h = malloc(I * 8), *he = malloc(I * 8);
#pragma omp for schedule(dynamic, 16)
        for (int64_t ti = 0; ti < (int64_t)M; ti++) {
            const uint64_t t = (uint64_t)ti;
            if (!h || !he) { /* (no memory: NaN outputs, which no bound passes) */
                for (uint64_t n = 0; n < H; n++) y[t * H + n] = bnd[t * H + n] = NAN;
                continue;
            }
            double *yt = y + t * H, *bt = bnd + t * H;
            for (uint64_t n = 0; n < H; n++) yt[n] = bt[n] = 0;
            for (uint64_t j = 0; j < k; j++) {
                int32_t e = ids[t * k + j];
                if (e < 0 || (uint64_t)e >= c->E) continue;
                const float *x = xb + t * H;
                for (uint64_t q = 0; q < I; q++) {
                    const double *gw = r->gate + ((uint64_t)e * I + q) * H;
                    const double *uw = r->up + ((uint64_t)e * I + q) * H;
                    double g = r->bg[e * I + q], u = r->bu[e * I + q], ga = fabs(g), ua = fabs(u);
                    for (uint64_t i = 0; i < H; i++)
                        g += gw[i] * x[i], u += uw[i] * x[i], ga += fabs(gw[i] * x[i]),
                            ua += fabs(uw[i] * x[i]);
                    double dg, du;
                    if (c->swiglu) {
                        double gc = g < 7.0 ? g : 7.0, uc = u < -7.0 ? -7.0 : u > 7.0 ? 7.0 : u;
                        double s = sigm(1.702 * gc);
                        h[q] = gc * s * (uc + 1.0);
                        dg = fabs(uc + 1.0) * (s + 1.702 * fabs(gc) * s * (1 - s));
                        du = fabs(gc * s);
                    } else {
                        double s = sigm(g);
                        h[q] = g * s * u;
                        dg = fabs(u) * (s + fabs(g) * s * (1 - s));
                        du = fabs(g * s);
                    }
                    he[q] = ldexp(dg * ga + du * ua, -7) + ldexp(fabs(h[q]), -8);
                }
                for (uint64_t n = 0; n < H; n++) {
                    const double *dw = r->down + ((uint64_t)e * H + n) * I;
                    double o = r->bd[e * H + n], oa = fabs(o), oe = 0;
                    for (uint64_t q = 0; q < I; q++)
                        o += dw[q] * h[q], oa += fabs(dw[q] * h[q]), oe += fabs(dw[q]) * he[q];
                    yt[n] += w[t * k + j] * o;
                    bt[n] += fabs(w[t * k + j]) * (oe + ldexp(oa, -7));
                }
            }
            for (uint64_t n = 0; n < H; n++) bt[n] = 2.0 * (bt[n] + ldexp(fabs(yt[n]), -8)) + 1e-6;
        }
        free(h), free(he);
    }
}

/* Routing of M tokens, top-k: uniform (distinct experts per token) or skewed (expert
 * floor(E u^3), repeats allowed, one slot in 16 -1 or E: nowhere). Weights in (0, 1]. */
static void route(uint64_t E, uint64_t M, uint64_t k, bool skew, uint64_t seed, int32_t *ids,
                  float *w) {
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 3;
    for (uint64_t t = 0; t < M; t++)
        for (uint64_t j = 0; j < k; j++) {
            int32_t e;
            if (skew) {
                double u = (double)(rng_next(&rng) % 1000000) / 1e6;
                e = (int32_t)(E * u * u * u);
                if (rng_next(&rng) % 16 == 0) e = rng_next(&rng) & 1 ? -1 : (int32_t)E;
            } else {
                bool dup;
                do {
                    e = (int32_t)(rng_next(&rng) % E);
                    dup = false;
                    for (uint64_t q = 0; q < j; q++) dup |= ids[t * k + q] == e;
                } while (dup && k <= E);
            }
            ids[t * k + j] = e;
            w[t * k + j] = (float)((double)(rng_next(&rng) % 1000 + 1) / 1000.0);
        }
}

/* One call: GPU twice (same bits), against the reference and (up to M = 333) the CPU twin. */
static void check(hc_gpu_model *md, hc_container *c, const mcfg *cf, const mref *r,
                  const char *label, const char *kern, uint64_t M, uint64_t k, bool skew,
                  uint64_t seed, uint32_t e0, uint32_t e1) {
    const uint64_t H = cf->H;
    char msg[1024];
    float *x = malloc(M * H * 4), *y = malloc(M * H * 4), *y2 = malloc(M * H * 4);
    float *yc = malloc(M * H * 4), *w = malloc(M * k * 4);
    int32_t *ids = malloc(M * k * 4);
    double *ref = malloc(M * H * 8), *bnd = malloc(M * H * 8);
    uint64_t rng = seed + 77;
    for (uint64_t i = 0; i < M * H; i++)
        x[i] = bf16_round((float)((double)(rng_next(&rng) % 2000) / 1000.0 - 1.0));
    route(cf->E, M, k, skew, seed, ids, w);
    int ok = 1;
    if (!md) { /* no GPU: the CPU twin stands in, so the reference is checked everywhere */
        if (hc_cpu_moe_block(c, mcfg_name(cf), x, M, H, ids, w, k, y, msg, sizeof msg)) {
            printf("FAIL %s: CPU twin: %s\n", label, msg);
            failed++;
            goto done;
        }
        memcpy(y2, y, M * H * 4);
    } else if (hc_gpu_model_force_kernel(md, kern, msg, sizeof msg) ||
               (act_apart && hc_gpu_model_force_kernel(md, "moe-act-apart", msg, sizeof msg)) ||
               hc_gpu_moe_host(md, mcfg_name(cf), x, M, ids, w, k, y, msg, sizeof msg) ||
               hc_gpu_moe_host(md, mcfg_name(cf), x, M, ids, w, k, y2, msg, sizeof msg)) {
        printf("FAIL %s M=%llu top-%llu %s%s: %s\n", label, (unsigned long long)M,
               (unsigned long long)k, kern ? kern : "auto", act_apart ? " act-apart" : "", msg);
        failed++;
        goto done;
    }
    { /* expert parallelism: the model holds [e0, e1); the other slots count for nothing */
        int32_t *mine = malloc(M * k * 4);
        for (uint64_t i = 0; i < M * k; i++)
            mine[i] = ids[i] >= (int32_t)e0 && ids[i] < (int32_t)e1 ? ids[i] : -1;
        reference(cf, r, x, M, mine, w, k, ref, bnd);
        free(mine);
    }
    uint64_t bad = 0, cbad = 0, worst = 0;
    double num = 0, den = 0, wr = 0;
    for (uint64_t i = 0; i < M * H; i++) {
        double d = fabs((double)y[i] - ref[i]);
        if (!(d <= bnd[i])) {
            if (!bad || d / bnd[i] > wr) wr = d / bnd[i], worst = i;
            bad++;
        }
        num += d * d, den += ref[i] * ref[i];
    }
    bool same = memcmp(y, y2, M * H * 4) == 0;
    if (md && M <= 333 && e0 == 0 && e1 >= cf->E) {
        if (hc_cpu_moe_block(c, mcfg_name(cf), x, M, H, ids, w, k, yc, msg, sizeof msg)) {
            printf("FAIL %s: CPU twin: %s\n", label, msg);
            ok = 0;
        }
        for (uint64_t i = 0; ok && i < M * H; i++) cbad += !(fabs((double)yc[i] - ref[i]) <= bnd[i]);
    }
    double rel = den > 0 ? sqrt(num / den) : 0;
    ok = ok && !bad && !cbad && same && rel < 0.1; /* (the bound decides; rel: gross errors) */
    if (ok) {
        printf("ok   %s M=%llu top-%llu %s %s%s (rel %.1e)\n", label, (unsigned long long)M,
               (unsigned long long)k, skew ? "skewed" : "uniform",
               md ? kern ? kern : "auto" : "CPU twin", act_apart ? " act-apart" : "", rel);
    } else {
        printf("FAIL %s M=%llu top-%llu %s %s%s: %llu of %llu beyond the bound (worst "
               "y[%llu][%llu] %g vs %g, bound %g), CPU twin %llu beyond, rel %.2e%s\n", label,
               (unsigned long long)M, (unsigned long long)k, skew ? "skewed" : "uniform",
               kern ? kern : "auto", act_apart ? " act-apart" : "",
               (unsigned long long)bad, (unsigned long long)(M * H),
               (unsigned long long)(worst / H), (unsigned long long)(worst % H), (double)y[worst],
               ref[worst], bnd[worst], (unsigned long long)cbad, rel, same ? "" : ", two runs differ");
    }
    passed += ok, failed += !ok;
done:
    if (md) hc_gpu_model_force_kernel(md, NULL, msg, sizeof msg);
    free(x), free(y), free(y2), free(yc), free(w), free(ids), free(ref), free(bnd);
}

/* The activation in gate_up's epilogue gives the separate launch's bits (the same function,
 * the same rounding of gate and up): one call with kernel kern (NULL: the pick) as it runs,
 * fused where the plan allows, then with the activation apart ("moe-act-apart"), y compared bit
 * for bit. */
static void act_same_bits(hc_gpu_model *md, const mcfg *cf, const char *label, const char *kern,
                          uint64_t M, uint64_t k, uint64_t seed) {
    const uint64_t H = cf->H;
    char msg[1024] = "";
    float *x = malloc(M * H * 4), *y0 = malloc(M * H * 4), *y1 = malloc(M * H * 4);
    float *w = malloc(M * k * 4);
    int32_t *ids = malloc(M * k * 4);
    uint64_t rng = seed + 5;
    for (uint64_t i = 0; i < M * H; i++)
        x[i] = bf16_round((float)((double)(rng_next(&rng) % 2000) / 1000.0 - 1.0));
    route(cf->E, M, k, true, seed, ids, w);
    const bool ran =
        !hc_gpu_model_force_kernel(md, kern, msg, sizeof msg) &&
        !hc_gpu_moe_host(md, mcfg_name(cf), x, M, ids, w, k, y0, msg, sizeof msg) &&
        !hc_gpu_model_force_kernel(md, "moe-act-apart", msg, sizeof msg) &&
        !hc_gpu_moe_host(md, mcfg_name(cf), x, M, ids, w, k, y1, msg, sizeof msg);
    const bool ok = ran && memcmp(y0, y1, M * H * 4) == 0;
    printf("%s %s M=%llu top-%llu %s: act fused %s\n", ok ? "ok  " : "FAIL", label,
           (unsigned long long)M, (unsigned long long)k, kern ? kern : "auto",
           !ran  ? msg
           : ok ? "gives the separate launch's bits"
                : "differs from the separate launch");
    passed += ok, failed += !ok;
    hc_gpu_model_force_kernel(md, NULL, msg, sizeof msg);
    free(x), free(y0), free(y1), free(w), free(ids);
}

/* Two MoE blocks of one model with different expert counts (128 and 100) share the model's
 * workspace: calls alternate between them, each past 2048 slots (the routing sort over several
 * blocks, whose table and ticket the layers share), each against the CPU twin and the float64
 * reference. */
static void two_blocks(hc_gpu *g, uint64_t seed) {
    const synth_spec *sp = &synth_specs[0];
    const mcfg cfgs[2] = {{128, 200, 72, G_INTERLEAVED, false, false, false, "mlp"},
                          {100, 200, 72, G_INTERLEAVED, false, false, false, "layers.1.mlp"}};
    char path[256], msg[1024], label[2][128];
    snprintf(path, sizeof path, "/tmp/hc-moe-test-%d-two.hconvert", (int)getpid());
    mref r[2];
    hc_container *c = NULL;
    hc_gpu_model *md = NULL;
    if (write_blocks(path, sp, cfgs, 2, seed + 4242, r, msg, sizeof msg) ||
        hc_container_open(path, 1, &c, msg, sizeof msg) ||
        (g && hc_gpu_model_load(g, c, NULL, &md, msg, sizeof msg))) {
        printf("FAIL %s two blocks (E = 128, 100): setup: %s\n", sp->label, msg);
        failed++;
    } else {
        for (int i = 0; i < 2; i++)
            snprintf(label[i], sizeof label[i], "%s two blocks: %s E=%llu", sp->label,
                     cfgs[i].name, (unsigned long long)cfgs[i].E);
        for (int q = 0; q < 4; q++) /* A, B, A, B: 333 x 8 = 2664 slots each */
            check(md, c, &cfgs[q & 1], &r[q & 1], label[q & 1], NULL, 333, 8, q >= 2,
                  seed + 50 + (uint64_t)q, 0, (uint32_t)cfgs[q & 1].E);
        mref_free(&r[0]), mref_free(&r[1]);
    }
    hc_gpu_model_free(md);
    hc_container_free(c);
    unlink(path);
}

int main(void) {
    /* a line a check, flushed as it is printed: a run cut short by a time limit (a hang) shows
     * the check it was in */
    setvbuf(stdout, NULL, _IOLBF, 0);
    hc_gpu *g = NULL;
    char msg[1024];
    hc_status st = hc_gpu_open(&g, msg, sizeof msg);
    if (st && st != HC_UNSUPPORTED) {
        printf("FAIL gpu open: %s\n0 passed, 1 failed\n", msg);
        return 1;
    }
    uint64_t seed = (uint64_t)time(NULL);
    if (!g) printf("skipped: no GPU (%s): the CPU twin against the reference only\n", msg);
    else printf("GPU %s, seed %llu\n", hc_gpu_arch(g), (unsigned long long)seed);
    const bool quick = getenv("HC_GPU_TEST_QUICK") != NULL || !g;
    static const uint64_t Ms[] = {1, 3, 16, 64, 333};
    static const uint64_t ks[] = {1, 2, 4, 8};
    static const char *const forced[] = {"moe-t8",       "moe-t16",      "moe-ws64",
                                         "moe-ws128",    "moe-ws256",    "moe-skinny16",
                                         "moe-skinny32", "moe-skinny64", "moe-ws96",
                                         "moe-ws256r",   "moe-ws288",
                                         "moe-ws96w",    "moe-ws24x6",   "moe-ws80r",
                                         "moe-ws80d",    "moe-skinny24", "moe-ws160"};
    for (size_t si = 0; si < (quick ? 1 : SYNTH_SPECS); si++) {
        const synth_spec *sp = &synth_specs[si];
        const mcfg cfgs[4] = {
            {8, 256, 80, G_SPLIT, sp->kind == HC_TL_INT, false, false, NULL},
            {128, 200, 72, G_INTERLEAVED, false, true, true, NULL},
            {8, 70, 64, G_STACKED, false, false, false, NULL},
            /* K split at small M; at M = 16 x top-2 (r = 8, tiles of 16) gate_up's 40 K tiles
             * run on moe-t16 and down on moe-skinny16 in one block (gpu_plan.c t16_serves) */
            {4, 2560, 256, G_INTERLEAVED, false, false, false, NULL},
        };
        for (int ci = 0; ci < 4; ci++) {
            const mcfg *cf = &cfgs[ci];
            if (ci == 2 && si % 3 != 0) continue; /* (H % 8 != 0 on every third layout) */
            if (ci == 3 && si % 4 != 0) continue; /* (the K split on every fourth) */
            char path[256], label[256];
            snprintf(path, sizeof path, "/tmp/hc-moe-test-%d-%zu-%d.hconvert", (int)getpid(), si, ci);
            snprintf(label, sizeof label, "%s %s E=%llu H=%llu I=%llu%s", sp->label,
                     ci == 0   ? "per-expert"
                     : ci == 1 ? "fused interleaved swiglu+bias"
                     : ci == 2 ? "fused stacked"
                               : "fused interleaved, K split",
                     (unsigned long long)cf->E, (unsigned long long)cf->H,
                     (unsigned long long)cf->I, cf->perm ? " act-order" : "");
            mref r;
            hc_container *c = NULL;
            hc_gpu_model *md = NULL;
            if (write_block(path, sp, cf, seed + si * 11 + (uint64_t)ci, &r, msg, sizeof msg) ||
                hc_container_open(path, 1, &c, msg, sizeof msg) ||
                (g && hc_gpu_model_load(g, c, NULL, &md, msg, sizeof msg))) {
                printf("FAIL %s: setup: %s\n", label, msg);
                failed++;
            } else {
                const uint32_t all = (uint32_t)cf->E;
                /* the E = 8 and E = 128 blocks: every M x every top-k (4096 on the GPU, the
                 * skewed routing at top-1 and top-4); the others: each M with one top-k in turn */
                for (size_t mi = 0; mi < (ci == 3 ? 3u : sizeof Ms / sizeof Ms[0]); mi++)
                    for (size_t ki = 0; ki < 4; ki++) {
                        if (ci >= 2 && ki != (mi + (size_t)ci) % 4) continue;
                        check(md, c, cf, &r, label, NULL, Ms[mi], ks[ki], (mi + ki) % 2,
                              seed + mi * 4 + ki, 0, all);
                    }
                for (size_t ki = 0; ci < 2 && md && !quick && ki < 4; ki++)
                    check(md, c, cf, &r, label, NULL, 4096, ks[ki], ki % 2 == 0, seed + 9 + ki, 0,
                          all);
                if (ci == 0 && si == 0 && !quick) /* 131072 slots: more than one chunk */
                    check(md, c, cf, &r, label, NULL, 16384, 8, false, seed + 10, 0, all);
                /* (the warp-specialised and skinny ones on sm_90a only) */
                const bool ws = g && !strcmp(hc_gpu_arch(g), "sm_90a");
                if (ci == 0 && md)
                    for (size_t f = 0; f < (ws ? sizeof forced / sizeof forced[0] : 2u); f++)
                        check(md, c, cf, &r, label, forced[f], 64, 2, true, seed + 20 + f, 0, all);
                /* moe-ws96 (v62, no dense twin) over experts of ~166 rows: two tiles each, the
                 * second part full */
                if (ci == 0 && md && ws) {
                    check(md, c, cf, &r, label, "moe-ws96", 333, 4, false, seed + 40, 0, all);
                }
                /* moe-ws256r (v63, two tile sizes) where experts get a tile of 256 and a
                 * remainder of 64 (~300 rows: 256 + ~44, uniform and skewed), a remainder over
                 * 64 (~166: one tile of 256) and one of 64 alone (at M = 64 above: ~16) */
                if (ci <= 1 && md && ws) {
                    check(md, c, cf, &r, label, "moe-ws256r", ci == 0 ? 300 : 4800, 8, false,
                          seed + 41, 0, all);
                    check(md, c, cf, &r, label, "moe-ws256r", 300, 8, true, seed + 42, 0, all);
                    check(md, c, cf, &r, label, "moe-ws256r", 333, 4, false, seed + 43, 0, all);
                }
                /* moe-ws288 (v68: k16 steps of two wgmma, activation tiles in two boxes) where
                 * experts get ~300 rows (a full tile and a second of ~12) and ~166 (one tile,
                 * skewed) */
                if (ci <= 1 && md && ws) {
                    check(md, c, cf, &r, label, "moe-ws288", ci == 0 ? 300 : 4800, 8, false,
                          seed + 47, 0, all);
                    check(md, c, cf, &r, label, "moe-ws288", 333, 4, true, seed + 48, 0, all);
                    /* moe-ws96w (v69: four stripes a block; the blocks' gate_up of 2 and 3
                     * stripes: one group, part dead) at ~166 rows an expert, uniform and skewed */
                    check(md, c, cf, &r, label, "moe-ws96w", 333, 4, false, seed + 49, 0, all);
                    check(md, c, cf, &r, label, "moe-ws96w", 333, 4, true, seed + 50, 0, all);
                    /* moe-ws24x6 (v72: six stripes a block, some dead in these blocks)
                     * at ~16 rows an expert on the E = 128 block, ~256 (11 tiles) on E = 8 */
                    check(md, c, cf, &r, label, "moe-ws24x6", 256, 8, false,
                          seed + 51, 0, all);
                    /* moe-ws80r (v78: tiles of 80 and of 64) at ~64 rows an expert on E = 8
                     * (about half the experts in a tile of 64) and ~166 skewed (80 + 80 and a
                     * remainder of 64 or 80) */
                    check(md, c, cf, &r, label, "moe-ws80r", 64, 8, false, seed + 54, 0, all);
                    check(md, c, cf, &r, label, "moe-ws80r", 333, 4, true, seed + 55, 0, all);
                    /* moe-ws80d (v79: two blocks an SM, registers cut to 24 / 104) at ~64 and
                     * at ~166 rows an expert (three tiles, the last short) */
                    check(md, c, cf, &r, label, "moe-ws80d", 64, 8, true, seed + 56, 0, all);
                    check(md, c, cf, &r, label, "moe-ws80d", 333, 4, true, seed + 52, 0, all);
                    /* moe-ws160 (v108: a tile of 160, run at 128 where it holds 128 rows or
                     * fewer) at ~128 rows an expert on E = 8 (M = 128 x top-8: both widths) and
                     * ~166 skewed (a full tile and a short one) */
                    check(md, c, cf, &r, label, "moe-ws160", 128, 8, false, seed + 57, 0, all);
                    check(md, c, cf, &r, label, "moe-ws160", 333, 4, true, seed + 58, 0, all);
                }
                /* the wide tiles forced at a full chunk of slots (8192 x top-8 = 65536 on the
                 * E = 8 block, ~8192 rows an expert): the workspace is sized at load for the
                 * runtime's pick there (moe-ws256: 8 x 255 pad rows at most), and forcing
                 * moe-ws288 (8 x 287) grows it (hc__gpu_moe_ws_fit) rather than refusing each
                 * call; the model's device bytes say whether it grew */
                if (ci == 0 && si == 0 && md && ws && !quick) {
                    static const char *const wk[] = {"moe-ws288", "moe-ws256", "moe-ws160",
                                                     "moe-ws96w"};
                    uint64_t b0 = 0, b1 = 0;
                    hc_gpu_model_stats(md, NULL, &b0, NULL);
                    for (size_t f = 0; f < sizeof wk / sizeof wk[0]; f++) {
                        check(md, c, cf, &r, label, wk[f], 8192, 8, false, seed + 80 + f, 0, all);
                        if (f == 0) hc_gpu_model_stats(md, NULL, &b1, NULL);
                    }
                    const bool grew = b1 > b0;
                    printf("%s %s: forcing moe-ws288 at 65536 slots %s the MoE workspace (model "
                           "%llu -> %llu bytes)%s\n", grew ? "ok  " : "FAIL", label,
                           grew ? "grew" : "did not grow", (unsigned long long)b0,
                           (unsigned long long)b1,
                           grew ? "" : " -- if the runtime's pick there is now moe-ws288, force a "
                                       "tile that pads more");
                    passed += grew, failed += !grew;
                }
                /* the activation in its own launch (forced "moe-act-apart"; everything else here
                 * runs it in gate_up's epilogue where the plan allows, v74): halves on
                 * the per-expert block (I = 80: a half's second stripe short; the integer kinds'
                 * act-order down keeps the separate launch) and the stacked one (I = 64), pairs
                 * on the interleaved one (144 rows, gpt-oss's clamped SwiGLU and biases; NVFP4's
                 * gate and up divisors keep the per-expert block apart) -- the pick at ~166 and
                 * ~10 rows an expert, and each warp-specialised tile forced */
                if (ci <= 2 && md && ws) {
                    static const char *const fk[] = {"moe-ws64",   "moe-ws128",  "moe-ws288",
                                                     "moe-ws96w",  "moe-ws24x6", "moe-ws80r",
                                                     "moe-ws80d",  "moe-ws160"};
                    act_apart = true;
                    check(md, c, cf, &r, label, NULL, 333, 4, false, seed + 60, 0, all);
                    check(md, c, cf, &r, label, NULL, 256, 8, true, seed + 61, 0, all);
                    for (size_t f = 0; f < sizeof fk / sizeof fk[0]; f++)
                        check(md, c, cf, &r, label, fk[f], 333, 4, f % 2 == 1, seed + 62 + f, 0,
                              all);
                    act_apart = false;
                    act_same_bits(md, cf, label, NULL, 256, 8, seed + 70);
                    for (size_t f = 0; f < sizeof fk / sizeof fk[0]; f++)
                        act_same_bits(md, cf, label, fk[f], 333, 4, seed + 71 + f);
                }
                /* the warp-owned small-M kernel (forced only): every layout on the per-expert
                 * block (act-order: the expanded rows) and the interleaved ones (x gathered by
                 * slot), at 1-3 and ~16-128 rows a tile of 8; and on one block, so that each
                 * warp takes hundreds of items and its ring of 48 descriptors laps (v105) */
                if (md) {
                    check(md, c, cf, &r, label, "moe-w8", ci == 0 ? 64 : 16, ci == 0 ? 2 : 8,
                          ci != 1, seed + 45, 0, all);
                    check(md, c, cf, &r, label, "moe-w8", 3, 4, true, seed + 46, 0, all);
                    check(md, c, cf, &r, label, "moe-w8-lap", 333, 4, ci == 2, seed + 47, 0, all);
                }
                /* expert parallelism: a rank holding the middle half of the experts */
                hc_gpu_model *ep = NULL;
                uint32_t q0 = all / 4, q1 = all / 4 * 3;
                char el[300];
                snprintf(el, sizeof el, "%s, experts [%u, %u) of %u", label, q0, q1, all);
                if (md && ci < 2) {
                    if (hc_gpu_model_load_experts(g, c, q0, q1, &ep, msg, sizeof msg)) {
                        printf("FAIL %s: load: %s\n", el, msg);
                        failed++;
                    } else {
                        check(ep, c, cf, &r, el, NULL, 64, 4, false, seed + 31, q0, q1);
                        check(ep, c, cf, &r, el, NULL, 333, 8, true, seed + 32, q0, q1);
                        act_apart = true; /* (the default, fused where it can, just above) */
                        check(ep, c, cf, &r, el, NULL, 333, 8, false, seed + 33, q0, q1);
                        act_apart = false;
                    }
                }
                hc_gpu_model_free(ep);
            }
            hc_gpu_model_free(md);
            hc_container_free(c);
            mref_free(&r);
            unlink(path);
        }
    }
    two_blocks(g, seed);
    hc_gpu_free(g);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
