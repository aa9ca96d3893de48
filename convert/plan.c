/* plan.c: convert's planning pass and the writer's fill of tiled modules. Each module is
 * decoded once where the budget allows: before the decode the pass estimates, from the
 * module's tensor shapes, the bytes its held form takes with the codes the fill will need
 * (none for a source whose codes the tiler reads in place) and reserves them; when they fit,
 * it decodes with those codes, checks the module as validate would, plans its tiles for every
 * rank, keeps the decode and settles the reservation to the held form's size; the fill packs
 * it and frees it after the last rank. A module whose held form does not fit is decoded with
 * its scales only and planned from them; it is kept still where the scales are all the fill
 * needs and they fit, and otherwise the fill decodes it again, once per rank, with the flags
 * the plan chose. The bytes written are the same either way. */
#include "plan.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moe.h"
#include "shard.h"

static hc_status decode(hc_conv_decodes *d, const hc_model *md, const hc_module *m,
                        unsigned flags, hc_qtensor *q, hc_findings *f, hc_err *err) {
    __atomic_add_fetch(&d->decodes, 1, __ATOMIC_RELAXED);
    return hc__module_decode(md, m, flags, q, f, err);
}

/* q without its codes: the planner sees what a scales-only decode gives, whatever was kept
 * for the fill, so the plan (and the bytes) do not depend on the budget. */
static hc_qtensor scales_view(const hc_qtensor *q) {
    hc_qtensor v = *q;
    v.codes = NULL;
    return v;
}

/* Bytes a decode holds. Each array passed the decoder's bound of 2^40 elements, so the sum
 * cannot overflow. */
static uint64_t held_size(const hc_qtensor *q) {
    uint64_t groups = q->E * q->sn * q->sk;
    return sizeof *q + (q->codes ? q->E * q->N * q->K : 0) + groups * sizeof *q->scales +
           (q->zeros ? groups * sizeof *q->zeros : 0) +
           (q->g_idx ? q->E * q->K * sizeof *q->g_idx : 0);
}

/* a + b and a * b, or UINT64_MAX (a size no budget holds) when they overflow */
static uint64_t sat_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return hc__add_u64(a, b, &r) ? r : UINT64_MAX;
}
static uint64_t sat_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return hc__mul_u64(a, b, &r) ? r : UINT64_MAX;
}

/* What held_size will count for module m, from its tensors' shapes before it is decoded (with
 * the codes when codes is set). Every decoder checks the scale tensor against its grid, so its
 * elements are the scale groups: 8 bytes each, 4 more with a zero-point tensor; a g_idx tensor
 * is 4 bytes per column; the codes are a byte each, as many as the weight's bytes hold at the
 * scheme's width (exact for packed words and one-byte codes, more where a wider element holds
 * one narrow code). A trivial g_idx or a zero-point tensor the scheme ignores makes it more
 * than the decode holds, never less; keep_for_fill settles the difference. */
static uint64_t held_estimate(const hc_module *m, bool codes) {
    const hc_ck_entry *w = m->t[HC_ROLE_WEIGHT], *s = m->t[HC_ROLE_SCALE];
    const hc_ck_entry *g = m->t[HC_ROLE_GIDX];
    uint64_t per_group = sizeof(double) + (m->t[HC_ROLE_ZERO] ? sizeof(int32_t) : 0);
    uint64_t est = sat_add(sizeof(hc_qtensor), sat_mul(s ? s->t->numel : 0, per_group));
    if (g) est = sat_add(est, sat_mul(g->t->numel, sizeof(int32_t)));
    if (codes && w) {
        uint64_t bytes = w->t->end - w->t->begin;
        unsigned b = m->scheme.bits >= 1 && m->scheme.bits <= 8 ? (unsigned)m->scheme.bits : 1;
        est = sat_add(est, sat_add(sat_mul(bytes / b, 8), bytes % b * 8 / b));
    }
    return est;
}

/* Scales that break the sanity rule (hc__scale_census_of): validate's errors, which convert
 * refuses too. */
static bool bad_scales(const hc_module *m, const hc_qtensor *q, hc_err *err) {
    if (q->kind == HC_Q_PLAIN || !q->scales) return false;
    hc_scale_census c;
    hc__scale_census_of(q, 0, q->E * q->sn * q->sk, NULL, &c);
    if (!c.bad) return false;
    const hc_ck_entry *se = m->t[HC_ROLE_SCALE];
    hc__fail(err, HC_INVALID, "tensor '%s': %llu of %llu scales are NaN, infinite, zero or "
            "negative (run 'hconvert validate' for every problem)", se ? se->name : m->name,
            (unsigned long long)c.bad, (unsigned long long)c.n);
    return true;
}

/* Takes bytes of the hold budget, if they fit (atomically: the pass runs on many threads;
 * a named OpenMP critical would be an exported symbol of the shared library). */
static bool reserve(hc_conv_decodes *d, uint64_t bytes) {
    uint64_t cur = __atomic_load_n(&d->held_bytes, __ATOMIC_RELAXED);
    do {
        if (bytes > d->budget || cur > d->budget - bytes) return false;
    } while (!__atomic_compare_exchange_n(&d->held_bytes, &cur, cur + bytes, true,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return true;
}

/* Gives back bytes reserve() took. */
static void release(hc_conv_decodes *d, uint64_t bytes) {
    if (bytes) __atomic_sub_fetch(&d->held_bytes, bytes, __ATOMIC_RELAXED);
}

/* Decodes held now, and the most held at once. */
static void held_add(hc_conv_decodes *d, uint64_t bytes) {
    uint64_t now = __atomic_add_fetch(&d->held_now, bytes, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&d->held_peak, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&d->held_peak, &peak, now, true,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
static void held_free(hc_conv_decodes *d, hc_conv_decode *x) {
    __atomic_sub_fetch(&d->held_now, held_size(&x->q), __ATOMIC_RELAXED);
    hc__qtensor_free(&x->q);
    x->held = false;
}

/* The flags of the planning pass's decode, and the bytes reserved to keep it (*reserved): the
 * codes the fill will need when the held form with them (estimated) fits the budget; scales
 * only, nothing reserved, for a module that is not tiled or whose held form does not fit
 * (keep_for_fill may still keep a decode of scales that are all the fill needs). */
static unsigned plan_flags(hc_conv_decodes *d, const hc_module *m, bool tile, unsigned tp,
                           uint64_t *reserved) {
    *reserved = 0;
    if (!tile) return HC_DECODE_NO_CODES;
    uint64_t est = held_estimate(m, true);
    if (!reserve(d, est)) return HC_DECODE_NO_CODES;
    *reserved = est;
    /* a cut copies the codes; act-order (a g_idx) packs them permuted */
    return tp > 1 || m->t[HC_ROLE_GIDX] ? 0 : HC_DECODE_CODES_UNPACKED;
}

/* After module i is planned: what its fill needs, and whether the decode is kept for it. The
 * bytes reserved before the decode are settled to the held form's size: what the estimate
 * overstated goes back to the budget, what it understated is taken if it fits. */
static void keep_for_fill(hc_conv_decodes *d, const hc_conv_plan *cp0, size_t i, hc_qtensor *q,
                          uint64_t reserved) {
    hc_conv_decode *x = &d->v[i];
    x->fill_codes = cp0->tp > 1 || !q->packed || cp0->plan[i].perm;
    if (q->codes && !x->fill_codes) { /* a g_idx that turned out trivial */
        free(q->codes);
        q->codes = NULL;
    }
    uint64_t size = held_size(q);
    bool fits = false;
    if (!x->fill_codes || q->codes) {
        if (size <= reserved) fits = true, release(d, reserved - size);
        else fits = reserve(d, size - reserved);
    }
    if (fits) {
        x->q = *q;
        x->held = true;
        held_add(d, size);
        return;
    }
    release(d, reserved);
    if (q->codes) __atomic_add_fetch(&d->wasted, 1, __ATOMIC_RELAXED);
    hc__qtensor_free(q);
}

hc_status hc__conv_plan_modules(const hc_model *md, hc_conv_plan *cps, unsigned tp, int threads,
                                bool repack, hc_err *err) {
    for (size_t i = 0; i < md->config_findings.n; i++)
        if (md->config_findings.v[i].severity == HC_SEV_ERROR)
            return hc__fail(err, HC_INVALID, "%s (run 'hconvert validate' for every problem)",
                           md->config_findings.v[i].message);
    hc_err *errs = calloc(md->n ? md->n : 1, sizeof *errs);
    hc_moe_shape *shapes = calloc(md->n ? md->n : 1, sizeof *shapes);
    if (!errs || !shapes) {
        free(errs), free(shapes);
        return hc__fail(err, HC_NOMEM, "out of memory");
    }
    hc_conv_decodes *d = cps[0].dec;
    if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t i = 0; i < md->n; i++) {
        const hc_module *m = &md->m[i];
        /* experts are decoded whatever they hold, as validate decodes them: the MoE check
         * below must see the same shapes to refuse what validate rejects */
        bool tile = m->scheme.fmt != HC_FMT_PLAIN && repack;
        if (!tile && m->expert < 0) continue;
        hc_qtensor q;
        hc_findings f = {0};
        uint64_t reserved;
        unsigned flags = plan_flags(d, m, tile, tp, &reserved);
        if (decode(d, md, m, flags, &q, &f, &errs[i]) != HC_OK) {
            release(d, reserved);
            hc__err_clear(&errs[i]);
            hc__fail(&errs[i], HC_INVALID, "%s (run 'hconvert validate' for every problem)",
                    f.n ? f.v[0].message : "cannot decode");
        } else if (tile && bad_scales(m, &q, &errs[i])) {
            release(d, reserved);
            hc__qtensor_free(&q);
        } else {
            shapes[i] = (hc_moe_shape){true, q.kind, q.bits, q.N, q.K, q.gk};
            hc_qtensor view = scales_view(&q);
            for (unsigned r = 0; tile && r < tp && !errs[i].code; r++) {
                hc_qtensor sh;
                char why[160] = "";
                bool ok = tp == 1 || hc__qtensor_shard(&view, cps[r].role[i], r, tp, &sh, why,
                                                      sizeof why);
                if (ok) {
                    cps[r].tiled[i] = hc__tile_plan_make(tp == 1 ? &view : &sh, &cps[r].plan[i]);
                    if (tp > 1) hc__qtensor_free(&sh);
                }
                if (tp > 1 && (!ok || !cps[r].tiled[i]))
                    hc__fail(&errs[i], HC_UNSUPPORTED, "module '%s' cannot be cut for --tp %u "
                            "(rank %u): %s", m->name, tp, r, ok ? cps[r].plan[i].reason : why);
            }
            if (tile && !errs[i].code && cps[0].tiled[i]) {
                keep_for_fill(d, &cps[0], i, &q, reserved);
            } else {
                release(d, reserved);
                hc__qtensor_free(&q);
            }
        }
        hc__findings_free(&f);
        hc__module_release(md, m);
    }
    hc_status st = HC_OK;
    for (size_t i = 0; i < md->n && !st; i++)
        if (errs[i].code) st = hc__fail(err, errs[i].code, "%s", errs[i].msg);
    /* MoE layers: every expert present, all alike */
    hc_findings moe = {0};
    int layers = 0;
    if (!st) hc__model_check_moe(md, shapes, &moe, &layers);
    for (size_t i = 0; i < moe.n && !st; i++)
        if (moe.v[i].severity == HC_SEV_ERROR)
            st = hc__fail(err, HC_INVALID, "%s (run 'hconvert validate' for every problem)",
                         moe.v[i].message);
    hc__findings_free(&moe);
    free(errs);
    free(shapes);
    return st;
}

/* Writer callback: the module's decode (held, or made now with the plan's flags), the rank's
 * cut, the tiles; the source pages dropped. The last rank frees the held decode. */
hc_status hc__conv_fill_tiles(void *ctx, size_t i, void *dst, hc_err *err) {
    hc_conv_plan *cp = ctx;
    const hc_module *m = &cp->md->m[i];
    hc_conv_decode *x = &cp->dec->v[i];
    hc_qtensor own, sh, *q = &x->q;
    hc_status st = HC_OK;
    char why[160];
    if (!x->held) {
        hc_findings f = {0};
        st = decode(cp->dec, cp->md, m, x->fill_codes ? 0 : HC_DECODE_NO_CODES, &own, &f, err);
        hc__findings_free(&f);
        q = &own;
    }
    if (!st && cp->tp > 1) {
        if (hc__qtensor_shard(q, cp->role[i], cp->rank, cp->tp, &sh, why, sizeof why)) {
            st = hc__tile_pack(&sh, &cp->plan[i], dst, &cp->stats[i], err);
            hc__qtensor_free(&sh);
        } else {
            st = hc__fail(err, HC_INTERNAL, "module '%s': %s", m->name, why);
        }
    } else if (!st) {
        st = hc__tile_pack(q, &cp->plan[i], dst, &cp->stats[i], err);
    }
    if (!x->held) {
        hc__qtensor_free(&own);
    } else if (cp->rank + 1 == cp->tp) { /* ranks are written one after another */
        held_free(cp->dec, x);
    }
    hc__module_release(cp->md, m);
    return st;
}

void hc__conv_decodes_free(hc_conv_decodes *d) {
    for (size_t i = 0; d->v && i < d->n; i++)
        if (d->v[i].held) held_free(d, &d->v[i]);
    free(d->v);
    d->v = NULL;
}
