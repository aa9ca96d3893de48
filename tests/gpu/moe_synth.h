/* moe_synth.h: containers holding random MoE blocks ("mlp", or as named) of any layout
 * (tile_synth.h's layers): per-expert gate/up/down, or a fused gate_up (interleaved or stacked)
 * and down, a router, optional biases, and the container's MoE record -- for the GPU MoE test
 * and the MoE benchmark. Optionally the blocks' weights as float64 for a reference. */
#ifndef HC_MOE_SYNTH_H
#define HC_MOE_SYNTH_H

#include "moe_record.h"
#include "tile_synth.h"

static uint64_t msyn_rng(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

typedef enum { G_SPLIT, G_INTERLEAVED, G_STACKED } gmode;
typedef struct {
    uint64_t E, H, I;
    gmode gm;
    bool perm, swiglu, bias;
    const char *name; /* the block's name (its tensors' prefix); NULL: "mlp" */
} mcfg;

static const char *mcfg_name(const mcfg *c) { return c->name ? c->name : "mlp"; }

/* The block's weights as float64, per expert: gate [E][I][H], up [E][I][H], down [E][H][I]
 * (source column order), biases [E][I], [E][I], [E][H] (0 without). */
typedef struct {
    double *gate, *up, *down, *bg, *bu, *bd;
} mref;

static void mref_free(mref *r) {
    free(r->gate), free(r->up), free(r->down), free(r->bg), free(r->bu), free(r->bd);
    memset(r, 0, sizeof *r);
}

/* One block's tensors, kept until the container is written. */
typedef struct {
    synth_layer *L;
    unsigned nl;
    double *tmp;
    float *bgu, *bd;
    uint16_t *router;
    char names[9][160]; /* gate_up, down, router weight, router, biases, gate, up, down patterns */
} mblock;

static void mblock_free(mblock *b) {
    for (unsigned i = 0; b->L && i < b->nl; i++) synth_layer_free(&b->L[i]);
    free(b->L), free(b->tmp), free(b->bgu), free(b->bd), free(b->router);
    memset(b, 0, sizeof *b);
}

/* Block c's tensors into t (at *nt; room for 6 E + 8 more) and its record into info; with rr's
 * weights filled where they are non-NULL (gate, up, down; the biases always). */
static int mblock_make(mblock *b, const synth_spec *sp, const mcfg *c, uint64_t seed, mref *rr,
                       bool want, hc_cw_tensor *t, unsigned *nt, hc_moe_layer_info *info,
                       char *msg, size_t ml) {
    const uint64_t E = c->E, H = c->H, I = c->I;
    const char *nm = mcfg_name(c);
    if (want) {
        rr->gate = calloc(E * I * H, 8), rr->up = calloc(E * I * H, 8);
        rr->down = calloc(E * H * I, 8);
    }
    rr->bg = calloc(E * I, 8), rr->bu = calloc(E * I, 8), rr->bd = calloc(E * H, 8);
    b->L = calloc(3 * E + 2, sizeof *b->L);
    b->tmp = want ? calloc(E * 2 * I * H + 1, 8) : NULL;
    b->bgu = calloc(E * 2 * I + 1, 4), b->bd = calloc(E * H + 1, 4);
    b->router = calloc(E * H, 2);
    if ((want && (!rr->gate || !rr->up || !rr->down || !b->tmp)) || !rr->bg || !rr->bu ||
        !rr->bd || !b->L || !b->bgu || !b->bd || !b->router) {
        snprintf(msg, ml, "out of memory");
        return -1;
    }
    if (c->gm == G_SPLIT) {
        for (uint64_t e = 0; e < E; e++) {
            /* NVFP4: each per-expert layer its own global divisor (compressed-tensors writes a
             * weight_global_scale per layer) */
            synth_spec spe = *sp;
            if (spe.global_div != 0) spe.global_div *= 1.0 + (double)(e % 5) / 4.0;
            char n[3][160];
            snprintf(n[0], sizeof n[0], "%s.experts.%llu.gate_proj", nm, (unsigned long long)e);
            snprintf(n[1], sizeof n[1], "%s.experts.%llu.up_proj", nm, (unsigned long long)e);
            snprintf(n[2], sizeof n[2], "%s.experts.%llu.down_proj", nm, (unsigned long long)e);
            /* gate and up share their permutation (GPTQ orders both by the same X) */
            if (synth_layer_make(&b->L[b->nl++], n[0], &spe, 1, I, H, c->perm, 1000 + e,
                                 seed + 3 * e, want ? rr->gate + e * I * H : NULL, msg, ml) ||
                synth_layer_make(&b->L[b->nl++], n[1], &spe, 1, I, H, c->perm, 1000 + e,
                                 seed + 3 * e + 1, want ? rr->up + e * I * H : NULL, msg, ml) ||
                synth_layer_make(&b->L[b->nl++], n[2], &spe, 1, H, I, c->perm, 5000 + e,
                                 seed + 3 * e + 2, want ? rr->down + e * H * I : NULL, msg, ml))
                return -1;
        }
    } else {
        snprintf(b->names[0], sizeof b->names[0], "%s.experts.gate_up_proj", nm);
        snprintf(b->names[1], sizeof b->names[1], "%s.experts.down_proj", nm);
        if (synth_layer_make(&b->L[b->nl++], b->names[0], sp, E, 2 * I, H, false, 0, seed,
                             b->tmp, msg, ml) ||
            synth_layer_make(&b->L[b->nl++], b->names[1], sp, E, H, I, false, 0, seed + 1,
                             want ? rr->down : NULL, msg, ml))
            return -1;
        for (uint64_t e = 0; want && e < E; e++)
            for (uint64_t j = 0; j < I; j++) {
                uint64_t gr = c->gm == G_INTERLEAVED ? 2 * j : j;
                uint64_t ur = c->gm == G_INTERLEAVED ? 2 * j + 1 : I + j;
                memcpy(rr->gate + (e * I + j) * H, b->tmp + (e * 2 * I + gr) * H, H * 8);
                memcpy(rr->up + (e * I + j) * H, b->tmp + (e * 2 * I + ur) * H, H * 8);
            }
    }
    for (unsigned i = 0; i < b->nl; i++)
        for (unsigned j = 0; j < b->L[i].n; j++) t[(*nt)++] = b->L[i].t[j];
    snprintf(b->names[2], sizeof b->names[2], "%s.gate.weight", nm);
    snprintf(b->names[3], sizeof b->names[3], "%s.gate", nm);
    t[(*nt)++] = (hc_cw_tensor){.name = b->names[2], .dtype = HC_DT_BF16, .ndim = 2,
                                .shape = {E, H}, .padded_shape = {E, H}, .layout = "source",
                                .data = b->router, .size = E * H * 2};
    uint64_t rng = seed * 31 + 5;
    if (c->bias) { /* gate biases of +-8 on every fifth row: past the clamp at 7 */
        for (uint64_t e = 0; e < E; e++)
            for (uint64_t j = 0; j < I; j++) {
                float g = j % 5 == 0 ? (msyn_rng(&rng) & 1 ? 8.0f : -8.0f)
                                     : (float)((double)(msyn_rng(&rng) % 1000) / 1000.0 - 0.5);
                float u = (float)((double)(msyn_rng(&rng) % 1000) / 500.0 - 1.0);
                uint64_t gr = c->gm == G_INTERLEAVED ? 2 * j : j;
                uint64_t ur = c->gm == G_INTERLEAVED ? 2 * j + 1 : I + j;
                b->bgu[e * 2 * I + gr] = g, b->bgu[e * 2 * I + ur] = u;
                rr->bg[e * I + j] = g, rr->bu[e * I + j] = u;
            }
        for (uint64_t i = 0; i < E * H; i++)
            rr->bd[i] = b->bd[i] = (float)((double)(msyn_rng(&rng) % 1000) / 2000.0 - 0.25);
        snprintf(b->names[4], sizeof b->names[4], "%s.experts.gate_up_proj_bias", nm);
        snprintf(b->names[5], sizeof b->names[5], "%s.experts.down_proj_bias", nm);
        t[(*nt)++] = (hc_cw_tensor){.name = b->names[4], .dtype = HC_DT_F32, .ndim = 2,
                                    .shape = {E, 2 * I}, .padded_shape = {E, 2 * I},
                                    .layout = "source", .data = b->bgu, .size = E * 2 * I * 4};
        t[(*nt)++] = (hc_cw_tensor){.name = b->names[5], .dtype = HC_DT_F32, .ndim = 2,
                                    .shape = {E, H}, .padded_shape = {E, H},
                                    .layout = "source", .data = b->bd, .size = E * H * 4};
    }
    *info = (hc_moe_layer_info){.name = nm, .experts = (uint32_t)E,
                                .layout = c->gm == G_SPLIT ? HC_MOE_PER_EXPERT : HC_MOE_FUSED,
                                .router = b->names[3]};
    if (c->gm == G_SPLIT) {
        snprintf(b->names[6], sizeof b->names[6], "%s.experts.*.gate_proj", nm);
        snprintf(b->names[7], sizeof b->names[7], "%s.experts.*.up_proj", nm);
        snprintf(b->names[8], sizeof b->names[8], "%s.experts.*.down_proj", nm);
        info->gate = b->names[6], info->up = b->names[7], info->down = b->names[8];
    } else {
        info->gate_up = b->names[0], info->down = b->names[1];
        info->gate_up_order = c->gm == G_INTERLEAVED ? HC_MOE_INTERLEAVED : HC_MOE_STACKED;
    }
    if (c->bias) info->gate_up_bias = b->names[4], info->down_bias = b->names[5];
    if (c->swiglu) info->activation = HC_MOE_SWIGLU_CLAMP, info->alpha = 1.702, info->limit = 7.0;
    return 0;
}

/* Writes the nb blocks c[0..nb) in layout sp to path (tensors, routers, biases, the MoE record
 * of all of them) and, with r non-NULL, their float64 weights into r[0..nb). */
static int write_blocks(const char *path, const synth_spec *sp, const mcfg *c, size_t nb,
                        uint64_t seed, mref *r, char *msg, size_t ml) {
    size_t tmax = 0;
    for (size_t i = 0; i < nb; i++) tmax += 6 * c[i].E + 8;
    mblock *b = calloc(nb, sizeof *b);
    mref *none = calloc(nb, sizeof *none);
    hc_moe_layer_info *info = calloc(nb, sizeof *info);
    hc_cw_tensor *t = calloc(tmax, sizeof *t);
    unsigned nt = 0;
    int rc = -1;
    if (!b || !none || !info || !t) {
        snprintf(msg, ml, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nb; i++) {
        mref *rr = r ? &r[i] : &none[i];
        memset(rr, 0, sizeof *rr);
        if (mblock_make(&b[i], sp, &c[i], seed + 7919 * i, rr, r != NULL, t, &nt, &info[i], msg,
                        ml))
            goto done;
    }
    {
        cJSON *rec = hc__moe_record_json(info, nb);
        hc_cw_options o = {.source_format = "synthetic", .target = "tiles", .tp_size = 1,
                           .moe_layers = rec};
        hc_err err = {0};
        if (!rec || hc__container_write(path, t, nt, &o, &err))
            snprintf(msg, ml, "write: %s", rec ? err.msg : "record");
        else
            rc = 0;
        cJSON_Delete(rec);
    }
done:
    for (size_t i = 0; b && i < nb; i++) mblock_free(&b[i]);
    for (size_t i = 0; none && i < nb; i++) mref_free(&none[i]);
    if (rc && r)
        for (size_t i = 0; i < nb; i++) mref_free(&r[i]);
    free(b), free(none), free(info), free(t);
    return rc;
}

/* Writes the block of cfg c (named as c says, "mlp" by default) in layout sp to path and, with
 * r non-NULL, its float64 weights into r. */
static int write_block(const char *path, const synth_spec *sp, const mcfg *c, uint64_t seed,
                       mref *r, char *msg, size_t ml) {
    return write_blocks(path, sp, c, 1, seed, r, msg, ml);
}

#endif
