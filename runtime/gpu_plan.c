/* gpu_plan.c: the kernel chooser (gpu_plan.h): for a layer, M and a device, which kernel of the
 * family registry runs and with what grid, block, shared memory and K split. Pure: no CUDA, no
 * state, so tests/t_plan.c checks every branch on any machine. */
#include "gpu_plan.h"

#include "config.h"
#include "layouts.h"
#include "moe_args.h"
#include "streamk_rule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

hc_status hc__gpu_force_parse(const char *name, int *forced, hc_err *err) {
    *forced = HC_GPU_KERNEL_AUTO;
    if (!name || !*name || !strcmp(name, "auto")) return HC_OK;
    char names[512] = "auto";
    size_t len = strlen(names);
    for (int k = 0; k < HC_GK_COUNT; k++) {
        const hc_gpu_variant *v = NULL;
        if (!hc__gpu_kernel_family((hc_gpu_kernel)k, &v) || !v->forced) continue;
        if (!strcmp(v->forced, name)) {
            *forced = k;
            return HC_OK;
        }
        int w = snprintf(names + len, sizeof names - len, ", %s", v->forced);
        if (w > 0 && (size_t)w < sizeof names - len) len += (size_t)w;
    }
    size_t nv = 0;
    const hc_gpu_moe_variant *mv = hc__gpu_moe_variants(&nv);
    for (size_t k = 0; k < nv; k++) {
        if (!strcmp(mv[k].forced, name)) {
            *forced = HC_GPU_MOE_FORCED + (int)k;
            return HC_OK;
        }
        int w = snprintf(names + len, sizeof names - len, ", %s", mv[k].forced);
        if (w > 0 && (size_t)w < sizeof names - len) len += (size_t)w;
    }
    /* the names that are not a kernel of their own (gpu_plan.h) */
    static const struct {
        const char *name;
        int forced;
    } modes[] = {{"moe-act-apart", HC_GPU_MOE_ACT_APART}, {"moe-w8-lap", HC_GPU_MOE_W8_LAP}};
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        if (!strcmp(modes[k].name, name)) {
            *forced = modes[k].forced;
            return HC_OK;
        }
        int w = snprintf(names + len, sizeof names - len, ", %s", modes[k].name);
        if (w > 0 && (size_t)w < sizeof names - len) len += (size_t)w;
    }
    return hc__fail(err, HC_USAGE, "hc_gpu_model_force_kernel: '%s' is none of %s", name, names);
}

hc_status hc__gpu_force_check(const hc_gpu_caps *dev, int forced, hc_err *err) {
    /* (moe-w8-lap: moe-w8, whose family runs wherever the runtime does) */
    if (forced == HC_GPU_KERNEL_AUTO || forced == HC_GPU_MOE_ACT_APART ||
        forced == HC_GPU_MOE_W8_LAP)
        return HC_OK;
    if (forced >= HC_GPU_MOE_FORCED) { /* a grouped kernel: its dense twin's family decides */
        size_t nv = 0;
        const hc_gpu_moe_variant *mv = hc__gpu_moe_variants(&nv);
        if (forced - HC_GPU_MOE_FORCED >= (int)nv)
            return hc__fail(err, HC_INVALID, "forced kernel %d is not a forcible kernel", forced);
        const hc_gpu_moe_variant *m = &mv[forced - HC_GPU_MOE_FORCED];
        const hc_gpu_family *f = hc__gpu_kernel_family(m->like, NULL);
        if (!hc__gpu_family_runs_on(f, dev->arch, dev->tmap))
            return hc__fail(err, HC_UNSUPPORTED, "hc_gpu_model_force_kernel(\"%s\"): that kernel "
                           "is not available here (%s%s)", m->forced, dev->arch,
                           dev->tmap ? "" : ", no cuTensorMapEncodeTiled");
        return HC_OK;
    }
    const hc_gpu_variant *v = NULL;
    const hc_gpu_family *f =
        forced >= 0 && forced < HC_GK_COUNT ? hc__gpu_kernel_family((hc_gpu_kernel)forced, &v) : NULL;
    if (!f || !v->forced)
        return hc__fail(err, HC_INVALID, "forced kernel %d is not a forcible kernel", forced);
    if (!hc__gpu_family_runs_on(f, dev->arch, dev->tmap))
        return hc__fail(err, HC_UNSUPPORTED, "hc_gpu_model_force_kernel(\"%s\"): that kernel is "
                       "not available here (%s%s)", v->forced, dev->arch,
                       dev->tmap ? "" : ", no cuTensorMapEncodeTiled");
    return HC_OK;
}

static bool serves(const hc_gpu_family *f, uint64_t m) { return m >= f->m_min && m <= f->m_max; }

/* Whether variant v of family f fits a block of dev at the layer's chunk (hc__gpu_smem_fits). */
static bool fits(const hc_gpu_caps *dev, const hc_gpu_family *f, const hc_gpu_variant *v,
                 const hc_gpu_shape *l) {
    return hc__gpu_smem_fits(dev, f->smem(v, l->chunk_bytes));
}

/* Whether variant v of family f can run layer l on dev: f reads the layer's layout, runs on the
 * device (architecture, tensor maps) and v's shared memory fits a block. */
static bool runs_here(const hc_gpu_caps *dev, const hc_gpu_family *f, const hc_gpu_variant *v,
                      const hc_gpu_shape *l) {
    return (l->families & f->kf) && hc__gpu_family_runs_on(f, dev->arch, dev->tmap) &&
           fits(dev, f, v, l);
}

/* The variant of family f for m tokens. Small M: the first whose stages hold M rows and fit the
 * device (t8 for M = 1 where t1's six stages do not: 8-bit chunks on sm_86/sm_89). GEMM: the
 * smallest token tile that holds M (at most half empty), else the largest; then smaller while
 * the grid of (stripe pairs x token tiles) would leave a quarter of the SMs idle. */
static const hc_gpu_variant *variant_for(const hc_gpu_family *f, const hc_gpu_caps *dev,
                                         const hc_gpu_shape *l, uint64_t m) {
    unsigned i = 0;
    if (f->args == HC_GPU_ARGS_GEMV) {
        while (i + 1 < f->nvar && (m > f->var[i].m_max || !fits(dev, f, &f->var[i], l))) i++;
        return &f->var[i];
    }
    while (i + 1 < f->nvar && m > f->var[i].toks) i++;
    if (f->args == HC_GPU_ARGS_STREAMK) return &f->var[i]; /* (its blocks fill the GPU) */
    uint64_t pairs = (l->tiles_n + 1) / 2;
    while (i > 0 && pairs * hc__cdiv_u64(m, f->var[i].toks) * 4 < dev->sms * 3) i--;
    return &f->var[i];
}

/* The skinny kernels' persistent grid: (output tiles of 4 stripes x token tiles) x tiles_k
 * work items cut into one equal range per block, a block per SM but none with fewer than
 * HC_SKINNY_MIN_TILES items (and none empty); the workspace holds two segments a block. */
static hc_status streamk_grid(const hc_gpu_caps *dev, const hc_gpu_shape *l, uint64_t tiles_m,
                              const hc_gpu_variant *v, hc_gpu_choice *out, hc_err *err) {
    uint64_t units, items, blocks, prod;
    if (v->id == HC_GK_SKINNY16Q || v->id == HC_GK_SKINNY32Q || v->id == HC_GK_SKINNY64Q) {
        /* skinny-q: an output tile of one stripe, whole tiles a block (no fix-up), a block per
         * SM at most; the workspace sized as the skinny kernels' (a bench build's timeline
         * goes after it), no counter used */
        if (!hc__mul_u64(l->tiles_n, tiles_m, &units) ||
            !hc__mul_u64(units, (l->tiles_k + 3) / 4, &items) || items == 0)
            return hc__fail(err, HC_INVALID, "the layer has no work items or too many");
        if (items >= (1ull << 31))
            return hc__fail(err, HC_UNSUPPORTED, "the layer's %llu x %llu tiles are too many for "
                           "the skinny-q kernel", (unsigned long long)l->tiles_n,
                           (unsigned long long)tiles_m);
        blocks = units < dev->sms ? units : dev->sms;
        out->grid[0] = (unsigned)blocks, out->grid[1] = 1;
        out->part_bytes = hc_streamk_segment_bytes(blocks, v->toks);
        out->cnt_bytes = 4;
        out->tmap_toks = v->toks;
        return HC_OK;
    }
    /* (output tiles of four stripes; ws128k's of a pair, kernels/gemm/ws_gemm.cuh
     * ws_gemm_streamk -- its segments, two consumer warpgroups' sums, fit the skinny ones') */
    const uint64_t tile_stripes = v->id == HC_GK_WS128K ? 2 : 4;
    if (!hc__mul_u64(hc__cdiv_u64(l->tiles_n, tile_stripes), tiles_m, &units) ||
        !hc__mul_u64(units, l->tiles_k, &items) || items == 0)
        return hc__fail(err, HC_INVALID, "the layer has no work items or too many");
    blocks = hc_streamk_blocks(items, dev->sms, HC_SKINNY_MIN_TILES);
    if (!hc__mul_u64(items, blocks, &prod) || prod > (1ull << 62) || items >= (1ull << 31))
        return hc__fail(err, HC_UNSUPPORTED, "%llu work items are too many for the stream-K "
                        "kernel", (unsigned long long)items);
    out->grid[0] = (unsigned)blocks, out->grid[1] = 1;
    out->part_bytes = hc_streamk_segment_bytes(blocks, v->toks);
    out->cnt_bytes = units * 4;
    out->tmap_toks = v->toks;
    return HC_OK;
}

/* The skinny-q family and variant in place of skinny variant *pv (16, 32 or 64 tokens) for M
 * within one token tile, where a layer's output tiles of one stripe fill the SMs once -- at
 * most one a block, at least three quarters of the SMs busy -- and each tile has
 * HC_SKINNY_MIN_TILES quads of K tiles: whole tiles a block, the K split among its warpgroups,
 * no cross-block fix-up (v59: 8192^2 at M <= 32, 128 tiles; the fix-up was a fifth of its time,
 * bench/NOTES.md session 25; v60 skinny64q on 8192^2 at M = 48 / 64, H200: int4 23.6 / 20.7
 * us against skinny64's 26.0 / 26.9, mxfp4 24.8 / 24.6 against 30.4 / 30.8, but at M = 96, two
 * token tiles, 49.8 against 38.6 -- racecheck's reports on its 4-stage ring were the tool's,
 * settled in session 33: every consumer lane arriving on the empty barrier, 0 hazards); else
 * *pf and *pv stay. */
static void quarters_instead(const hc_gpu_caps *dev, const hc_gpu_shape *l, uint64_t m,
                             const hc_gpu_family **pf, const hc_gpu_variant **pv) {
    const hc_gpu_variant *v = *pv, *q = NULL;
    const hc_gpu_kernel k = v->id == HC_GK_SKINNY16   ? HC_GK_SKINNY16Q
                            : v->id == HC_GK_SKINNY32 ? HC_GK_SKINNY32Q
                            : v->id == HC_GK_SKINNY64 ? HC_GK_SKINNY64Q
                                                      : HC_GK_COUNT;
    const hc_gpu_family *f = k == HC_GK_COUNT ? NULL : hc__gpu_kernel_family(k, &q);
    uint64_t units;
    if (!f || m > v->toks || !hc__mul_u64(l->tiles_n, hc__cdiv_u64(m, v->toks), &units) ||
        units > dev->sms || units * 4 < (uint64_t)dev->sms * 3 ||
        (l->tiles_k + 3) / 4 < HC_SKINNY_MIN_TILES || !runs_here(dev, f, q, l))
        return;
    *pf = f, *pv = q;
}

/* 8 < M <= 16: the skinny kernel's tiles of 16 where each block gets at least
 * HC_SKINNY16_MIN_ITEMS work items, else the small-M kernel (bench/NOTES.md session 17, skinny
 * under PDL: 28672x8192, 108 items a block, skinny16 46.4 vs one-stripe t16 53.6 us int4 and
 * 63.1 vs 71.6 mxfp4; 8192x8192, 31 a block, 18.9 vs 20.9 int4, 24.1 vs 23.7 mxfp4; session
 * 16, before PDL, took 64) -- but from HC_SKINNY16_MAX_ITEMS items a block the small-M kernel
 * again where its blocks take two stripes (config.h HC_GEMV_STRIPES: the 4-bit layouts), whose
 * long K runs keep the weights streaming (v49, session 22: 28672x8192 t16 45.9 vs skinny16
 * 48.1 us int4, 58.2 vs 62.5 mxfp4; 8192x8192 23.8 vs 18.9, 27.6 vs 23.8) */
#define HC_SKINNY16_MIN_ITEMS 16
#define HC_SKINNY16_MAX_ITEMS 64

/* The skinny family in place of the small-M kernel for m (see HC_SKINNY16_MIN_ITEMS), or NULL. */
static const hc_gpu_family *skinny_instead(const hc_gpu_caps *dev, const hc_gpu_shape *l,
                                           uint64_t m, const hc_gpu_variant **v) {
    const hc_gpu_variant *v16 = NULL;
    const hc_gpu_family *sk = hc__gpu_kernel_family(HC_GK_SKINNY16, &v16);
    uint64_t items;
    if (m <= 8 || m > 16 || !sk || !runs_here(dev, sk, v16, l) ||
        !hc__mul_u64(hc__cdiv_u64(l->tiles_n, 4), l->tiles_k, &items) ||
        items < (uint64_t)HC_SKINNY16_MIN_ITEMS * dev->sms ||
        (HC_GEMV_STRIPES(16u, l->chunk_bytes) == 2 &&
         items >= (uint64_t)HC_SKINNY16_MAX_ITEMS * dev->sms))
        return NULL;
    *v = v16;
    return sk;
}

/* Past its largest token tile (64 < M <= 128) the skinny family runs two or more token tiles,
 * each decoding the weights again: the runtime's pick only where the warp-specialised
 * kernel's grid of 64-token blocks, (stripe pairs) x ceil(M / 64), would be under this many
 * waves of the SMs (8192^2 at M = 128: 64 x 2 = 128 blocks on 132 SMs, where cuBLASLt bf16
 * beat ws64 in session 17; 28672 x 8192: 448, 3.4 waves), else the warp-specialised kernel.
 * v39, bench/NOTES.md session 20: 8192^2 M = 128 int4 41.6 -> 39.3 us, 28672 keeps ws128
 * (skinny64 there 121.8 vs 108.4). */
#define HC_SKINNY_WIDE_WAVES 2

/* Whether family f is the runtime's pick for m (served, readable, runs here, and past the
 * skinny family's largest tile only where HC_SKINNY_WIDE_WAVES says). */
static bool auto_serves(const hc_gpu_family *f, const hc_gpu_caps *dev, const hc_gpu_shape *l,
                        uint64_t m) {
    if (!serves(f, m) || !runs_here(dev, f, variant_for(f, dev, l, m), l))
        return false; /* (a variant past the device's shared memory: the next family) */
    const uint64_t top = f->var[f->nvar - 1].toks;
    return f->args != HC_GPU_ARGS_STREAMK || m <= top ||
           (l->tiles_n + 1) / 2 * hc__cdiv_u64(m, top) < (uint64_t)HC_SKINNY_WIDE_WAVES * dev->sms;
}

/* Past the skinny family's largest token tile, where it is still the pick (HC_SKINNY_WIDE_WAVES:
 * the warp-specialised grid would leave the SMs mostly idle), ws128k instead -- ws128's tiles
 * cut stream-K over a block per SM, one decode of the weights where skinny64 decodes them once
 * a token tile (v84, H100, bench/NOTES.md session 34: 8192^2 at M = 96 / 128 int4 37.9 / 38.0
 * us against skinny64's 39.5 / 40.1, mxfp4 40.5 / 42.5 against 47.3 / 47.7; on 28672 x 8192,
 * where ws128's grid is 1.7 waves, it did not beat ws128, which stays). Else *pf, *pv stay. */
static void streamk_tiles_instead(const hc_gpu_caps *dev, const hc_gpu_shape *l, uint64_t m,
                                  const hc_gpu_family **pf, const hc_gpu_variant **pv) {
    const hc_gpu_family *f = *pf;
    const hc_gpu_variant *k = NULL;
    const hc_gpu_family *wk = hc__gpu_kernel_family(HC_GK_WS128K, &k);
    if (f->args != HC_GPU_ARGS_STREAMK || m <= f->var[f->nvar - 1].toks || !wk || !serves(wk, m) ||
        !runs_here(dev, wk, k, l))
        return;
    *pf = wk, *pv = k;
}

hc_status hc__gpu_choose(const hc_gpu_caps *dev, const hc_gpu_shape *l, uint64_t m, int forced,
                        hc_gpu_choice *out, hc_err *err) {
    memset(out, 0, sizeof *out);
    if (m > HC_GPU_M_MAX)
        return hc__fail(err, HC_INVALID, "M=%llu exceeds %llu tokens per call",
                       (unsigned long long)m, HC_GPU_M_MAX);
    const hc_gpu_family *f = NULL;
    const hc_gpu_variant *v = NULL;
    if (forced != HC_GPU_KERNEL_AUTO) {
        const hc_gpu_family *ff = forced >= 0 && forced < HC_GK_COUNT
                                      ? hc__gpu_kernel_family((hc_gpu_kernel)forced, &v)
                                      : NULL;
        /* it applies to the calls its family serves (ws64: M > 16), a small-M variant to the M
         * its token tile holds (t8: M <= 8) */
        if (ff && (!serves(ff, m) || (ff->args == HC_GPU_ARGS_GEMV && m > v->m_max))) {
            v = NULL;
        } else {
            HC_TRY(hc__gpu_force_check(dev, forced, err));
            if (!(l->families & ff->kf))
                return hc__fail(err, HC_UNSUPPORTED, "hc_gpu_model_force_kernel(\"%s\"): the %s "
                               "kernels do not read this layer's layout", v->forced, ff->name);
            if (!fits(dev, ff, v, l))
                return hc__fail(err, HC_UNSUPPORTED, "hc_gpu_model_force_kernel(\"%s\"): its %zu "
                               "bytes of shared memory a block for this layer's %llu-byte tiles "
                               "are more than this device allows (%llu, %s)", v->forced,
                               ff->smem(v, l->chunk_bytes), (unsigned long long)l->chunk_bytes,
                               (unsigned long long)dev->smem_block, dev->arch);
            f = ff;
        }
    }
    const bool applied = f != NULL; /* (a forced kernel not serving m: the runtime's pick) */
    size_t nf = 0;
    const hc_gpu_family *fams = hc__gpu_families(&nf);
    for (size_t i = 0; !f && i < nf; i++)
        if (auto_serves(&fams[i], dev, l, m)) f = &fams[i];
    if (!f)
        return hc__fail(err, HC_UNSUPPORTED, "no GPU kernel runs M=%llu of this layer's layout "
                       "on %s", (unsigned long long)m, dev->arch);
    if (!v && f->args == HC_GPU_ARGS_GEMV) {
        const hc_gpu_family *sk = skinny_instead(dev, l, m, &v);
        if (sk) f = sk;
    }
    if (!v) v = variant_for(f, dev, l, m);
    if (!applied && f->args == HC_GPU_ARGS_STREAMK) {
        quarters_instead(dev, l, m, &f, &v);
        streamk_tiles_instead(dev, l, m, &f, &v);
    }
    out->family = f, out->variant = v, out->kernel = v->id;
    out->block = f->block;
    out->smem = f->smem(v, l->chunk_bytes);
    out->ksplit = 1;
    if (f->args == HC_GPU_ARGS_GEMV) {
        /* a block per HC_GEMV_STRIPES stripes (config.h) */
        const unsigned occ = l->gemv_occ[v - f->var];
        const uint64_t blocks = hc__cdiv_u64(l->tiles_n, HC_GEMV_STRIPES(v->toks, l->chunk_bytes));
        out->ksplit = hc__gemv_ksplit(blocks, l->tiles_k, dev->sms, occ);
        out->grid[0] = (unsigned)blocks, out->grid[1] = out->ksplit;
        out->part_bytes = (uint64_t)out->ksplit * l->tiles_n * 64 * v->toks * 4;
        out->cnt_bytes = out->ksplit > 1 ? l->tiles_n * 4 : 0;
        return HC_OK;
    }
    uint64_t tiles_m = hc__cdiv_u64(m, v->toks);
    if (f->args == HC_GPU_ARGS_STREAMK) return streamk_grid(dev, l, tiles_m, v, out, err);
    if (tiles_m > 65535)
        return hc__fail(err, HC_UNSUPPORTED, "M=%llu needs more than 65535 blocks of %u tokens "
                       "(grid.y)", (unsigned long long)m, v->toks);
    out->grid[0] = (unsigned)((l->tiles_n + 1) / 2), out->grid[1] = (unsigned)tiles_m;
    out->tmap_toks = f->tmap ? v->toks : 0;
    return HC_OK;
}

/* ---- mixture of experts ---- */

/* The routing sort (kernels/moe_route.cu): one block while each warp walks at most two 32-slot
 * steps, else a block per HC_MOE_SORT_BLOCK_SLOTS slots, at most HC_MOE_ROUTE_BLOCKS (the one
 * block took 310 us of the Qwen3-like block at M = 16384 -- two chunks of 65536 slots, 64
 * serial steps a warp a pass each: bench/NOTES.md MoE v3; v40, session 18: the split, 2 steps
 * a warp at 65536 slots, measured in session 20 at 71.6 us) */
#define HC_MOE_SORT_ONE_BLOCK_SLOTS 2048u
#define HC_MOE_SORT_BLOCK_SLOTS 1024u
/* the longest K (in tiles of 64) a projection of tiles of 8 runs on moe-w8 (w8_serves): MoE
 * down at I = 256 (DeepSeek-like, 4 tiles); not gate_up at H = 2048 and past (bench/NOTES.md
 * session 20: v44 lost at long K), nor Qwen3-like down at I = 768 (12 tiles; H100, session 45,
 * 12 against 8 in one call: block 93.4 / 90.1 us at M = 16, 133.7 / 129.1 at M = 64 -- moe-t8's
 * K split ahead there) */
#define HC_MOE_W8_TILES_K 8u

/* the fewest K tiles of 64 at which a projection of a tile-of-16 route (moe-skinny16's) runs
 * on moe-t16, the small-M body with its K split, instead (t16_serves): H200, r = 8 -- DeepSeek-
 * like FP8 gate_up (112 tiles) 245.3 us against skinny16's 332.5, gpt-oss-like MXFP4 (45 tiles
 * both) block 817.3 against 840.7; H100 (session 31) gpt-oss-like gate_up 523.3 against
 * 547.3; DeepSeek-like down (4 tiles) 417 against 218: short K stays on skinny16 */
#define HC_MOE_T16_TILES_K 40u

/* Whether a tile of T rows holds r + 2 sqrt(r) (a touched expert's count, r +- sqrt(r) under
 * uniform routing, with room): r <= T and (T - r)^2 >= 4 r. */
static bool tile_holds(uint64_t T, uint64_t r) { return r <= T && (T - r) * (T - r) >= 4 * r; }

/* The warp-specialised tiles past what a skinny tile of 64 holds (r >= 50 rows an expert),
 * each with its cost a tile in rows' worth: its rows plus what a tile costs beside its wgmma
 * (the decode of its weight rows x K, the pipeline's fill and drain). Fitted on the H100
 * (bench/NOTES.md v68, v69): ws128 / ws256 at r = 256 give 53 rows; moe-ws288 -- four stages,
 * two wgmma a k16 step -- 90; moe-ws96w -- four stripes a block, two a consumer warpgroup --
 * 44: between its fits at r = 64 (36) and r = 256 (51), and past what makes it the pick at r =
 * 128, where it won on the gpt-oss-like MXFP4 gate_up (1625.5 us, ws128 1795.1) but lost on the
 * DeepSeek-like FP8 one (1196.0, ws128 1144.4). moe-ws80d -- tiles of 80, two blocks an SM --
 * at the cost of moe-ws96w at tiles of 80 (ws80w, v71, since deleted: 50, 161.7 us to ws96w's
 * 173.0 at r = 64 on the Qwen3-like gate_up, 805.2 to 840.7 on the gpt-oss-like one), which it
 * replaced where that was the pick: its gate_up 5% under ws80w's at r = 64 (163.0 against
 * 172.1, block 270.6 against 290.9) but within +-4% of it at r = 128 and 256 (session 33), so
 * the bounds stay: the pick up to r ~ 68, where ws96w's fewer second tiles take over, and at
 * r = 128-146 in two tiles. moe-ws160 (v108) -- one tile an expert at r ~ 128, run at 128 where
 * it holds 128 rows or fewer -- at ws128's + 53, for 4-bit codes only (bits4): H100, gpt-oss-like
 * MXFP4 M = 4096 (r = 128) block 2324.0 -> 1982.9 us, gate_up 1456.2 -> 1217.1, down 874.0 ->
 * 710.7 against ws80d's two tiles in the same session (an expert's weights decoded once, not
 * twice); DeepSeek-like FP8 block 2193.8 against ws80d's 1948-2051 in earlier sessions (the
 * 8-bit decode is cheaper, and ws80d's two blocks an SM overlap its 4-K-tile down's epilogue).
 * The int4 layouts at r ~ 128 are the model's, not yet measured (bench/NOTES.md session 44). */
static const struct {
    hc_gpu_moe_kernel k;
    unsigned rows, cost;
    bool bits4; /* for layers of 4-bit codes only */
} ws_tiles[] = {{HC_GMK_WS80D, 80, 80 + 50, false},   {HC_GMK_WS96W, 96, 96 + 44, false},
                {HC_GMK_WS128, 128, 128 + 53, false}, {HC_GMK_WS256, 256, 256 + 53, false},
                {HC_GMK_WS288, 288, 288 + 90, false}, {HC_GMK_WS160, 160, 160 + 53, true}};

/* The tiles an expert of about r rows takes on average in tiles of T: a touched expert's count c
 * spreads as r +- sqrt(r) (uniform routing), so E[ceil(c / T)] = 1 + the sum over k >= 1 of
 * P(c > k T), each a normal tail. Pure (the same r, the same answer). */
static double ws_tiles_of(uint64_t T, uint64_t r) {
    const double sd = sqrt((double)r), rr = (double)r;
    double n = 1.0;
    for (uint64_t k = 1; (double)(k * T) < rr + 8.0 * sd; k++)
        n += 0.5 * erfc(((double)(k * T) - rr) / (sd * sqrt(2.0)));
    return n;
}

hc_status hc__gpu_moe_route_plan(const hc_gpu_caps *dev, unsigned families, unsigned code_bits,
                                uint64_t slots, uint64_t el, int forced, hc_gpu_moe_route *out,
                                hc_err *err) {
    memset(out, 0, sizeof *out);
    if (!slots || !el) return hc__fail(err, HC_INVALID, "no slot or no local expert to route");
    size_t nv = 0;
    const hc_gpu_moe_variant *mv = hc__gpu_moe_variants(&nv);
    out->touched = el < slots ? el : slots;
    out->sort_blocks = 1;
    if (slots > HC_MOE_SORT_ONE_BLOCK_SLOTS) {
        const uint64_t b = hc__cdiv_u64(slots, HC_MOE_SORT_BLOCK_SLOTS);
        out->sort_blocks = b < HC_MOE_ROUTE_BLOCKS ? (unsigned)b : HC_MOE_ROUTE_BLOCKS;
    }
    uint64_t r = hc__cdiv_u64(slots, out->touched);
    int k = forced;
    if (k == HC_GPU_KERNEL_AUTO) {
        /* the rows a tile must hold: a touched expert's count spreads around r (uniform
         * routing: about r +- sqrt(r)), so the smallest tile T of 8, 16, 32, 64 with r + 2
         * sqrt(r) <= T, i.e. r <= T and (T - r)^2 >= 4 r (bench/NOTES.md MoE v5: the tile
         * twice r measured fastest at r = 8, 16 and 32); past what 64 holds, the
         * warp-specialised tile of least expected cost (ws_tiles) */
        uint64_t T = 8;
        while (T < 64 && !tile_holds(T, r)) T *= 2;
        const hc_gpu_family *ws = hc__gpu_kernel_family(HC_GK_WS64, NULL);
        const hc_gpu_family *sk = hc__gpu_kernel_family(HC_GK_SKINNY64, NULL);
        const bool has_ws = (families & ws->kf) && hc__gpu_family_runs_on(ws, dev->arch, dev->tmap);
        const bool has_sk = (families & sk->kf) && hc__gpu_family_runs_on(sk, dev->arch, dev->tmap);
        if (T == 8)
            k = HC_GMK_T8;
        else if (has_ws && !tile_holds(64, r)) {
            /* r >= 50: the warp-specialised tile of least expected cost, its tiles an expert x
             * its cost a tile (H100, Qwen3-like gate_up: r = 64 -- moe-ws80d 163.0 us, ws96w
             * 166.7-173.0, ws96 188.5, ws128 209.7, skinny64 266.2; r = 256 -- ws288 428.8,
             * ws96w 492.8, ws256r 498.3, ws256 505.6, ws128 522.2; r = 1024 -- ws256 1935.9,
             * ws128 2052.2) */
            double best = HUGE_VAL;
            for (size_t i = 0; i < sizeof ws_tiles / sizeof ws_tiles[0]; i++) {
                if (ws_tiles[i].bits4 && code_bits != 4) continue;
                const double c = ws_tiles_of(ws_tiles[i].rows, r) * ws_tiles[i].cost;
                if (c < best) best = c, k = ws_tiles[i].k;
            }
        } else if (has_sk && T == 32 && tile_holds(24, r)) {
            /* r = 10-16: one tile of 24 on moe-skinny24, the skinny body's 16 consumer warps an
             * SM behind a quarter less pad than skinny32's (H100, Qwen3-like gate_up at r = 16
             * with v90's L2 priorities: skinny24 94.1 us, skinny32 99.0, moe-ws24x6 -- the pick
             * here until then, 8 consumer warps an SM -- 110.1; bench/NOTES.md session 38; on
             * the H200 skinny32 already beat ws24x6 without v90: 100.2 against 112.6) */
            k = HC_GMK_SKINNY24;
        } else if (has_ws && T == 64) {
            /* r = 23-49: a tile of 64 holds an expert's rows; moe-ws80r takes them in one, four
             * stripes a block (H100, M = 1024 at r = 32: gpt-oss-like block 1239.3 us against
             * moe-skinny64's 1380.8, DeepSeek-like 999.7 against 1006.0; bench/NOTES.md
             * session 33) */
            k = HC_GMK_WS80R;
        } else if (has_sk && r <= 64)
            k = T == 16 ? HC_GMK_SKINNY16 : T == 32 ? HC_GMK_SKINNY32 : HC_GMK_SKINNY64;
        else
            k = HC_GMK_T16;
    }
    if (k < 0 || k >= (int)nv)
        return hc__fail(err, HC_INVALID, "forced MoE kernel %d is not one of the grouped kernels", k);
    const hc_gpu_variant *v = NULL;
    const hc_gpu_family *f = hc__gpu_kernel_family(mv[k].like, &v);
    if (!(families & f->kf))
        return hc__fail(err, HC_UNSUPPORTED, "the grouped %s kernel (%s) does not read this "
                       "layer's layout", f->name, mv[k].forced);
    if (!hc__gpu_family_runs_on(f, dev->arch, dev->tmap))
        return hc__fail(err, HC_UNSUPPORTED, "the grouped %s kernel (%s) does not run here (%s%s)",
                       f->name, mv[k].forced, dev->arch, dev->tmap ? "" : ", no cuTensorMapEncodeTiled");
    out->kernel = (hc_gpu_moe_kernel)k;
    out->forced = forced != HC_GPU_KERNEL_AUTO;
    out->tile = hc__gpu_moe_tile(&mv[k]);
    out->tile_small = mv[k].small;
    /* an expert's pads: under T; with Ts its tiles are its whole ones of T and at most one
     * more, of T (a remainder past Ts: at most T - Ts - 1 pads) or of Ts (at most Ts - 1), and
     * the rows at least a tile of T (the tensor map's rows hold a box; moe_route.cu
     * route_split) */
    const uint64_t T = out->tile, Ts = out->tile_small;
    const uint64_t most = !Ts ? T : T - Ts > Ts ? T - Ts : Ts;
    uint64_t pad;
    if (!hc__mul_u64(out->touched, most - 1, &pad) || !hc__add_u64(pad, slots, &pad))
        return hc__fail(err, HC_INVALID, "%llu slots overflow the routing", (unsigned long long)slots);
    out->tiles_max = Ts ? slots / T + out->touched : pad / T;
    out->rows_max = Ts ? (pad > T ? pad : T) : out->tiles_max * T;
    if (out->tiles_max > 65535)
        return hc__fail(err, HC_UNSUPPORTED, "%llu slots over %llu experts need up to %llu tiles of "
                       "%u rows (at most 65535 a launch)", (unsigned long long)slots,
                       (unsigned long long)el, (unsigned long long)out->tiles_max, out->tile);
    return HC_OK;
}

/* moe-w8's launch for layer l: one wave of blocks -- as many an SM as its shared memory holds
 * (+ the items' descriptors and the 1 KiB the runtime keeps), at most 4; a warp takes every
 * 4 x wave-th item however many that is (its descriptors a ring, kernels/gemm/gemv_items.cuh:
 * v105 -- a second, short wave of blocks past HC_GEMVW_ITEMS items a warp had doubled the
 * DeepSeek-like down at M = 64). *items: the most the routing can give; *wave: the blocks of
 * one wave (0: none fits an SM; whether one fits a block is hc__gpu_smem_fits's, its
 * callers'). */
static hc_status w8_grid(const hc_gpu_caps *dev, const hc_gpu_shape *l, unsigned parts,
                         const hc_gpu_moe_route *r, size_t smem, uint64_t *items,
                         uint64_t *wave, hc_err *err) {
    *items = *wave = 0;
    if (l->tiles_n > 0xFFFFFFFFull || !hc__mul_u64(r->tiles_max, l->tiles_n * parts, items))
        return hc__fail(err, HC_INVALID, "too many stripes for one launch");
    const uint64_t per = dev->smem_sm / (smem + HC_GEMVW_DESC_BYTES + 1024);
    *wave = dev->sms * (per > 4 ? 4 : per);
    return HC_OK;
}

/* Whether a projection of tiles of 8 runs on moe-w8 rather than the route's moe-t8: a short K
 * (at most HC_MOE_W8_TILES_K tiles: the split-K kernel pays a pipeline fill, a block reduction
 * and its workspace per short item) and at least an item for each warp of one wave (the
 * warp-owned kernel has no K split to fill the machine with). bench/NOTES.md session 21. */
static bool w8_serves(const hc_gpu_caps *dev, const hc_gpu_shape *l, unsigned parts,
                      const hc_gpu_moe_route *r) {
    uint64_t items = 0, wave = 0;
    hc_err e = {0};
    if (r->forced || r->kernel != HC_GMK_T8 || l->tiles_k > HC_MOE_W8_TILES_K) return false;
    size_t nv = 0;
    const hc_gpu_moe_variant *w8 = &hc__gpu_moe_variants(&nv)[HC_GMK_W8];
    const size_t smem = hc__gpu_moe_smem(w8, l->chunk_bytes);
    return hc__gpu_smem_fits(dev, smem + w8->stat) &&
           !w8_grid(dev, l, parts, r, smem, &items, &wave, &e) && wave > 0 &&
           items >= 4 * wave && wave <= 65535 && items <= 0x7FFFFFFFull;
}

/* Whether a projection of the route's tiles of 16 on moe-skinny16 runs on moe-t16 instead: a
 * long K (at least HC_MOE_T16_TILES_K tiles), where the K split fills the machine from a
 * few stripes an expert and x is read in place (no expand); both take the route's tiles of 16.
 * Not where a kernel is forced. */
static bool t16_serves(const hc_gpu_caps *dev, const hc_gpu_shape *l, const hc_gpu_moe_route *r) {
    if (r->forced || r->kernel != HC_GMK_SKINNY16 || l->tiles_k < HC_MOE_T16_TILES_K) return false;
    size_t nv = 0;
    const hc_gpu_moe_variant *t16 = &hc__gpu_moe_variants(&nv)[HC_GMK_T16];
    const hc_gpu_family *f = hc__gpu_kernel_family(t16->like, NULL);
    return (l->families & f->kf) && hc__gpu_family_runs_on(f, dev->arch, dev->tmap) &&
           hc__gpu_smem_fits(dev, hc__gpu_moe_smem(t16, l->chunk_bytes) + t16->stat);
}

hc_status hc__gpu_moe_gemm_plan(const hc_gpu_caps *dev, const hc_gpu_shape *l, unsigned parts,
                               const hc_gpu_moe_route *r, hc_gpu_moe_launch *out, hc_err *err) {
    memset(out, 0, sizeof *out);
    out->kernel = w8_serves(dev, l, parts, r) ? HC_GMK_W8
                  : t16_serves(dev, l, r)      ? HC_GMK_T16
                                               : r->kernel;
    size_t nv = 0;
    const hc_gpu_moe_variant *mv = &hc__gpu_moe_variants(&nv)[out->kernel];
    const hc_gpu_variant *v = NULL;
    const hc_gpu_family *f = hc__gpu_kernel_family(mv->like, &v);
    out->args = f->args;
    out->block = f->block;
    out->smem = hc__gpu_moe_smem(mv, l->chunk_bytes);
    out->ksplit = 1;
    if (!hc__gpu_smem_fits(dev, out->smem + mv->stat))
        return hc__fail(err, HC_UNSUPPORTED, "the grouped kernel %s needs %zu bytes of shared "
                       "memory a block for this layer's %llu-byte tiles; a block of %s may have "
                       "%llu", mv->forced, out->smem + mv->stat,
                       (unsigned long long)l->chunk_bytes, dev->arch,
                       (unsigned long long)dev->smem_block);
    if (out->kernel == HC_GMK_W8) { /* no K split, no workspace */
        uint64_t items = 0, wave = 0;
        HC_TRY(w8_grid(dev, l, parts, r, out->smem, &items, &wave, err));
        if (!wave)
            return hc__fail(err, HC_UNSUPPORTED, "the warp-owned kernel (moe-w8) needs %zu bytes of "
                           "shared memory a block with this layout; an SM of %s has %llu",
                           out->smem + mv->stat, dev->arch, (unsigned long long)dev->smem_sm);
        if (wave > 65535 || items > 0x7FFFFFFFull)
            return hc__fail(err, HC_UNSUPPORTED, "%llu items of 8 rows are too many for the "
                           "warp-owned kernel (moe-w8)", (unsigned long long)items);
        out->grid[0] = (unsigned)wave, out->grid[1] = 1, out->grid[2] = 1;
        return HC_OK;
    }
    if (f->args == HC_GPU_ARGS_GEMV) {
        uint64_t stripes = l->tiles_n * parts, all;
        if (!hc__mul_u64(stripes, r->tiles_max, &all) || stripes > 0x7FFFFFFFull)
            return hc__fail(err, HC_INVALID, "too many stripes for one launch");
        out->ksplit = hc__gemv_ksplit(all, l->tiles_k, dev->sms, l->gemv_occ[v - f->var]);
        out->grid[0] = (unsigned)stripes, out->grid[1] = out->ksplit;
        out->grid[2] = (unsigned)r->tiles_max;
        if (out->ksplit > 1) {
            out->part_bytes = all * out->ksplit * 64 * v->toks * 4;
            out->cnt_bytes = all * 4;
        }
        return HC_OK;
    }
    if (f->args == HC_GPU_ARGS_STREAMK) { /* one block per SM over every tile's work */
        uint64_t units = 0, items = 0;
        if (!hc__mul_u64(r->tiles_max, hc__cdiv_u64(l->tiles_n, 4) * parts, &units) ||
            !hc__mul_u64(units, l->tiles_k, &items) || items >= (1ull << 31))
            return hc__fail(err, HC_UNSUPPORTED, "%llu tiles of %u rows are too many work items "
                           "for the skinny kernel", (unsigned long long)r->tiles_max, r->tile);
        out->grid[0] = (unsigned)dev->sms, out->grid[1] = 1, out->grid[2] = 1;
        out->part_bytes = hc_streamk_segment_bytes(dev->sms, r->tile);
        out->cnt_bytes = units * 4;
        return HC_OK;
    }
    const unsigned sb = hc__gpu_moe_stripes(mv); /* (a pair; four: moe-ws96w; six: ws24x6) */
    uint64_t groups = HC_MOE_WS_GROUPS(0u, 0u, l->tiles_n, sb / 2, (uint64_t)parts);
    if (groups > 0x7FFFFFFFull) return hc__fail(err, HC_INVALID, "too many stripes for one launch");
    /* (two tile sizes: a grid plane each, moe_gemm.cu moe_ws_two) */
    out->grid[0] = (unsigned)groups, out->grid[1] = (unsigned)r->tiles_max;
    out->grid[2] = r->tile_small ? 2 : 1;
    return HC_OK;
}

unsigned hc__gpu_moe_fuse_plan(hc_gpu_moe_launch *lu, unsigned parts, bool interleaved, uint64_t I,
                               bool part_divisors, bool down_perm, uint64_t *ustripes) {
    *ustripes = 0;
    size_t nv = 0;
    const hc_gpu_moe_variant *mv = &hc__gpu_moe_variants(&nv)[lu->kernel];
    /* (the warp-specialised body only: moe_gemm.cu moe_ws_tile) */
    const hc_gpu_family *f = hc__gpu_kernel_family(mv->like, NULL);
    if (lu->args != HC_GPU_ARGS_GEMM || f->kf != HC_KF_WS || down_perm || !I)
        return 0;
    if (interleaved) return parts == 1 ? 2u : 0u;
    if (parts == 2 ? part_divisors : parts != 1 || I % 64 != 0) return 0;
    if (parts == 1) *ustripes = I / 64;
    const unsigned half = hc__gpu_moe_stripes(mv) / 2;
    lu->grid[0] = (unsigned)HC_MOE_WS_GROUPS(1u, I, 0u, half, 1u);
    return 1;
}
