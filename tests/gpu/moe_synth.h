/* moe_synth.h: containers holding one random MoE block "mlp" of any layout (tile_synth.h's
 * layers): per-expert gate/up/down, or a fused gate_up (interleaved or stacked) and down, a
 * router, optional biases, and the container's MoE record -- for the GPU MoE test and the MoE
 * benchmark. Optionally the block's weights as float64 for a reference. */
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
} mcfg;

/* The block's weights as float64, per expert: gate [E][I][H], up [E][I][H], down [E][H][I]
 * (source column order), biases [E][I], [E][I], [E][H] (0 without). */
typedef struct {
    double *gate, *up, *down, *bg, *bu, *bd;
} mref;

static void mref_free(mref *r) {
    free(r->gate), free(r->up), free(r->down), free(r->bg), free(r->bu), free(r->bd);
    memset(r, 0, sizeof *r);
}

/* Writes the block "mlp" of cfg c in layout sp to path (tensors, router, biases, MoE record)
 * and, with r non-NULL, its float64 weights into r. */
static int write_block(const char *path, const synth_spec *sp, const mcfg *c, uint64_t seed,
                       mref *r, char *msg, size_t ml) {
    const uint64_t E = c->E, H = c->H, I = c->I;
    mref none = {0}, *rr = r ? r : &none;
    memset(rr, 0, sizeof *rr);
    if (r) {
        r->gate = calloc(E * I * H, 8), r->up = calloc(E * I * H, 8);
        r->down = calloc(E * H * I, 8);
    }
    rr->bg = calloc(E * I, 8), rr->bu = calloc(E * I, 8), rr->bd = calloc(E * H, 8);
    synth_layer *L = calloc(3 * E + 2, sizeof *L);
    unsigned nl = 0, nt = 0;
    hc_cw_tensor *t = calloc(6 * E + 8, sizeof *t);
    double *tmp = r ? calloc(E * 2 * I * H + 1, 8) : NULL;
    float *bgu = calloc(E * 2 * I + 1, 4), *bd = calloc(E * H + 1, 4);
    uint16_t *router = calloc(E * H, 2);
    int rc = -1;
    if ((r && (!r->gate || !r->up || !r->down || !tmp)) || !rr->bg || !rr->bu || !rr->bd || !L ||
        !t || !bgu || !bd || !router) {
        snprintf(msg, ml, "out of memory");
        goto done;
    }
    if (c->gm == G_SPLIT) {
        for (uint64_t e = 0; e < E; e++) {
            /* NVFP4: each per-expert layer its own global divisor (compressed-tensors writes a
             * weight_global_scale per layer) */
            synth_spec spe = *sp;
            if (spe.global_div != 0) spe.global_div *= 1.0 + (double)(e % 5) / 4.0;
            char n[3][128];
            snprintf(n[0], sizeof n[0], "mlp.experts.%llu.gate_proj", (unsigned long long)e);
            snprintf(n[1], sizeof n[1], "mlp.experts.%llu.up_proj", (unsigned long long)e);
            snprintf(n[2], sizeof n[2], "mlp.experts.%llu.down_proj", (unsigned long long)e);
            /* gate and up share their permutation (GPTQ orders both by the same X) */
            if (synth_layer_make(&L[nl++], n[0], &spe, 1, I, H, c->perm, 1000 + e, seed + 3 * e,
                                 r ? r->gate + e * I * H : NULL, msg, ml) ||
                synth_layer_make(&L[nl++], n[1], &spe, 1, I, H, c->perm, 1000 + e, seed + 3 * e + 1,
                                 r ? r->up + e * I * H : NULL, msg, ml) ||
                synth_layer_make(&L[nl++], n[2], &spe, 1, H, I, c->perm, 5000 + e, seed + 3 * e + 2,
                                 r ? r->down + e * H * I : NULL, msg, ml))
                goto done;
        }
    } else {
        if (synth_layer_make(&L[nl++], "mlp.experts.gate_up_proj", sp, E, 2 * I, H, false, 0,
                             seed, tmp, msg, ml) ||
            synth_layer_make(&L[nl++], "mlp.experts.down_proj", sp, E, H, I, false, 0, seed + 1,
                             r ? r->down : NULL, msg, ml))
            goto done;
        for (uint64_t e = 0; r && e < E; e++)
            for (uint64_t j = 0; j < I; j++) {
                uint64_t gr = c->gm == G_INTERLEAVED ? 2 * j : j;
                uint64_t ur = c->gm == G_INTERLEAVED ? 2 * j + 1 : I + j;
                memcpy(r->gate + (e * I + j) * H, tmp + (e * 2 * I + gr) * H, H * 8);
                memcpy(r->up + (e * I + j) * H, tmp + (e * 2 * I + ur) * H, H * 8);
            }
    }
    for (unsigned i = 0; i < nl; i++)
        for (unsigned j = 0; j < L[i].n; j++) t[nt++] = L[i].t[j];
    t[nt++] = (hc_cw_tensor){.name = "mlp.gate.weight", .dtype = HC_DT_BF16, .ndim = 2,
                             .shape = {E, H}, .padded_shape = {E, H}, .layout = "source",
                             .data = router, .size = E * H * 2};
    uint64_t rng = seed * 31 + 5;
    if (c->bias) { /* gate biases of +-8 on every fifth row: past the clamp at 7 */
        for (uint64_t e = 0; e < E; e++)
            for (uint64_t j = 0; j < I; j++) {
                float g = j % 5 == 0 ? (msyn_rng(&rng) & 1 ? 8.0f : -8.0f)
                                     : (float)((double)(msyn_rng(&rng) % 1000) / 1000.0 - 0.5);
                float u = (float)((double)(msyn_rng(&rng) % 1000) / 500.0 - 1.0);
                uint64_t gr = c->gm == G_INTERLEAVED ? 2 * j : j;
                uint64_t ur = c->gm == G_INTERLEAVED ? 2 * j + 1 : I + j;
                bgu[e * 2 * I + gr] = g, bgu[e * 2 * I + ur] = u;
                rr->bg[e * I + j] = g, rr->bu[e * I + j] = u;
            }
        for (uint64_t i = 0; i < E * H; i++)
            rr->bd[i] = bd[i] = (float)((double)(msyn_rng(&rng) % 1000) / 2000.0 - 0.25);
        t[nt++] = (hc_cw_tensor){.name = "mlp.experts.gate_up_proj_bias", .dtype = HC_DT_F32,
                                 .ndim = 2, .shape = {E, 2 * I}, .padded_shape = {E, 2 * I},
                                 .layout = "source", .data = bgu, .size = E * 2 * I * 4};
        t[nt++] = (hc_cw_tensor){.name = "mlp.experts.down_proj_bias", .dtype = HC_DT_F32,
                                 .ndim = 2, .shape = {E, H}, .padded_shape = {E, H},
                                 .layout = "source", .data = bd, .size = E * H * 4};
    }
    hc_moe_layer_info info = {.name = "mlp", .experts = (uint32_t)E,
                              .layout = c->gm == G_SPLIT ? HC_MOE_PER_EXPERT : HC_MOE_FUSED,
                              .router = "mlp.gate"};
    if (c->gm == G_SPLIT) {
        info.gate = "mlp.experts.*.gate_proj", info.up = "mlp.experts.*.up_proj";
        info.down = "mlp.experts.*.down_proj";
    } else {
        info.gate_up = "mlp.experts.gate_up_proj", info.down = "mlp.experts.down_proj";
        info.gate_up_order = c->gm == G_INTERLEAVED ? HC_MOE_INTERLEAVED : HC_MOE_STACKED;
    }
    if (c->bias)
        info.gate_up_bias = "mlp.experts.gate_up_proj_bias",
        info.down_bias = "mlp.experts.down_proj_bias";
    if (c->swiglu) info.activation = HC_MOE_SWIGLU_CLAMP, info.alpha = 1.702, info.limit = 7.0;
    cJSON *rec = hc__moe_record_json(&info, 1);
    hc_cw_options o = {.source_format = "synthetic", .target = "tiles", .tp_size = 1,
                       .moe_layers = rec};
    hc_err err = {0};
    if (!rec || hc__container_write(path, t, nt, &o, &err)) {
        snprintf(msg, ml, "write: %s", rec ? err.msg : "record");
    } else {
        rc = 0;
    }
    cJSON_Delete(rec);
done:
    for (unsigned i = 0; L && i < nl; i++) synth_layer_free(&L[i]);
    free(L), free(t), free(tmp), free(bgu), free(bd), free(router);
    if (!r) mref_free(&none);
    return rc;
}

#endif
