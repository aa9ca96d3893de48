/* gpu_moe_load.c: the load-time half of the GPU MoE block (gpu_moe.h): for each layer of the
 * container's MoE record, the device tables of every expert's tiles, act-order permutations and
 * NVFP4 divisors, its biases, the grouped kernels of its kinds and the routing module; one
 * workspace for all layers; which tensors a rank of expert parallelism holds. A layer the GPU
 * cannot run keeps the reason, which hc_gpu_moe reports. docs/gpu.md, "Mixture of experts". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_moe.h"
#include "jit.h"
#include "moe_args.h"
#include "moe_int.h"
#include "moe_record.h"

int hc__gpu_moe_cmp(const void *a, const void *b) {
    return strcmp(((const hc_gpu_moe_layer *)a)->name, ((const hc_gpu_moe_layer *)b)->name);
}

hc_status hc__gpu_moe_need(const hc_gpu_caps *dev, const hc_gpu_moe_layer *ml, uint64_t slots,
                          int forced, hc_gpu_moe_wsneed *w, hc_gpu_moe_route *r,
                          hc_gpu_moe_launch *lu, hc_gpu_moe_launch *ld, hc_err *err) {
    memset(w, 0, sizeof *w);
    unsigned fam = ml->up.shape.families & ml->down.shape.families;
    /* (the wider of the two projections' codes: a 4-bit-only tile only where both are) */
    const unsigned bits = ml->up.shape.code_bits > ml->down.shape.code_bits
                              ? ml->up.shape.code_bits : ml->down.shape.code_bits;
    HC_TRY(hc__gpu_moe_route_plan(dev, fam, bits, slots, ml->El, forced, r, err));
    HC_TRY(hc__gpu_moe_gemm_plan(dev, &ml->up.shape, ml->parts, r, lu, err));
    HC_TRY(hc__gpu_moe_gemm_plan(dev, &ml->down.shape, 1, r, ld, err));
    w->rows = r->rows_max, w->tiles = r->tiles_max;
    /* (every product below is of numbers bounded by 65535 tiles x 256 rows x a layer's sides) */
    w->xs = (size_t)(w->rows * (ml->ldx > ml->H ? ml->ldx : ml->H) * 2);
    w->g = (size_t)(w->rows * ml->up.mp.N * ml->parts * 2);
    w->h = (size_t)(w->rows * ml->ldh * 2);
    w->part = (size_t)(lu->part_bytes > ld->part_bytes ? lu->part_bytes : ld->part_bytes);
    w->cnt = (size_t)(lu->cnt_bytes > ld->cnt_bytes ? lu->cnt_bytes : ld->cnt_bytes);
    return HC_OK;
}

static hc_gpu_layer *find_layer(hc_gpu_model *md, const char *name) {
    hc_gpu_layer key = {.name = (char *)name};
    return md->n ? bsearch(&key, md->l, md->n, sizeof *md->l, hc__gpu_layer_cmp) : NULL;
}

/* Device copy of n bytes at *dst (NULL when n is 0). */
static hc_status upload(void **dst, const void *src, size_t n, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    *dst = NULL;
    if (!n) return HC_OK;
    CU(hc__cuda.malloc_(dst, n), "cudaMalloc(MoE tables)");
    CU(hc__cuda.memcpy_(*dst, src, n, cudaMemcpyHostToDevice), "upload of MoE tables");
out:
    if (st) *perr = err;
    return st;
}

/* Sets why (and returns false) when the condition fails. */
#define REFUSE(cond, ...)                                                                    \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            snprintf(ml->why, sizeof ml->why, __VA_ARGS__);                                  \
            goto refused;                                                                    \
        }                                                                                    \
    } while (0)

/* Projection pr of layer ml from the layer names pat[0..parts-1] (a '*' pattern per expert, or
 * a fused [E, N, K] tensor): every local expert's tiles on the GPU, one kind, one geometry;
 * act-order permutations all or none (and the same for gate and up, which share X). A reason
 * in ml->why when the GPU cannot run it; an error only for CUDA or memory. */
static hc_status setup_proj(hc_gpu_model *md, hc_container *c, hc_gpu_moe_layer *ml,
                            const hc_moe_layer_info *l, const char *const *pat, unsigned parts,
                            moe_proj *pr, hc_err *err) {
    hc_status st = HC_OK;
    uint64_t n = (uint64_t)parts * ml->El;
    uint64_t *wt = calloc(n + 1, sizeof *wt), *pt = calloc(ml->El + 1, sizeof *pt);
    const int32_t **hp = calloc(ml->El + 1, sizeof *hp);
    float *gd = calloc(n + 1, sizeof *gd);
    if (!wt || !pt || !hp || !gd) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto done;
    }
    unsigned withperm = 0;
    for (unsigned q = 0; q < parts; q++)
        for (uint32_t e = 0; e < ml->El; e++) {
            char name[HC_MOE_NAME_MAX + 16];
            uint32_t index = 0, id = ml->e0 + e;
            if (l->layout == HC_MOE_PER_EXPERT) {
                REFUSE(hc__moe_expert_name(pat[q], id, name, sizeof name),
                       "expert %u of '%s' does not fit a name", id, pat[q]);
            } else {
                snprintf(name, sizeof name, "%s", pat[q]);
                index = id;
            }
            hc_gpu_layer *L = find_layer(md, name);
            REFUSE(L, "'%s' is not on the GPU (the GPU runs tiled layers of its layouts; the CPU "
                   "twin hc_cpu_moe_block runs the rest)", name);
            REFUSE(index >= L->e0 && index - L->e0 < L->p.E, "'%s' holds %llu experts here, "
                   "not %u", name, (unsigned long long)L->p.E, id);
            index -= L->e0;
            if (q == 0 && e == 0) pr->mp = L->mp, pr->shape = L->shape, pr->mod = L->mod;
            /* (NVFP4's global divisor is each per-expert layer's own: a table, not the kind) */
            hc_mma_params mine = L->mp;
            gd[q * ml->El + e] = mine.global_div;
            mine.global_div = pr->mp.global_div;
            REFUSE(L->mod == pr->mod && !memcmp(&mine, &pr->mp, sizeof pr->mp),
                   "'%s' (expert %u) is not of the kind and geometry of the other experts "
                   "(one grouped GEMM runs them all)", name, id);
            wt[q * ml->El + e] = (uint64_t)(uintptr_t)L->w +
                                 (uint64_t)index * L->p.tiles_n * L->p.tiles_k * L->p.chunk_bytes;
            const hc_tensor_info *t;
            const int32_t *perm = NULL;
            hc_tile_params tp;
            HC_TRY_GOTO(st, hc__tile_layer(c, name, &t, &tp, &perm, err), done);
            REFUSE(!perm || index == 0, "'%s': an act-order permutation in a fused tensor", name);
            if (q == 0) {
                withperm += perm != NULL;
                hp[e] = perm, pt[e] = (uint64_t)(uintptr_t)L->perm;
            } else {
                REFUSE((!perm && !hp[e]) ||
                           (perm && hp[e] && !memcmp(perm, hp[e], tp.K * sizeof *perm)),
                       "'%s' and '%s' (expert %u) have different act-order permutations (the "
                       "grouped GEMM gathers X once for both)", pat[0], pat[q], id);
            }
        }
    REFUSE(withperm == 0 || withperm == ml->El, "act-order permutations in some experts of "
           "'%s' only", pat[0]);
    st = upload(&pr->wtab, wt, n * sizeof *wt, err);
    if (!st && withperm) st = upload(&pr->ptab, pt, ml->El * sizeof *pt, err);
    bool divides = false;
    for (uint64_t i = 0; i < n; i++) divides |= gd[i] != 0.0f;
    if (!st && divides) st = upload(&pr->gdiv, gd, n * sizeof *gd, err);
    goto done;
refused:
    st = HC_OK;
done:
    free(wt), free(pt), free(hp), free(gd);
    return st;
}

/* The id a per-expert layer name gives pattern pat ('*' standing for decimal digits), or -1. */
static long expert_id(const char *pat, const char *name) {
    const char *star = strchr(pat, '*');
    if (!star) return -1;
    size_t pre = (size_t)(star - pat), post = strlen(star + 1), n = strlen(name);
    if (n <= pre + post || strncmp(name, pat, pre) || strcmp(name + n - post, star + 1)) return -1;
    long id = 0;
    for (size_t i = pre; i < n - post; i++) {
        if (name[i] < '0' || name[i] > '9' || id > 100000000) return -1;
        id = id * 10 + (name[i] - '0');
    }
    return id;
}

/* What tensor NAME is to MoE layer l for experts [e0, e1): as hc__gpu_moe_tensor_part, or -1
 * when it is none of l's expert layers. */
static int part_of(const hc_moe_layer_info *l, const char *name, uint32_t e0, uint32_t e1,
                   uint32_t *first, uint32_t *count) {
    const char *pats[4] = {l->gate, l->up, l->gate_up, l->down};
    for (int q = 0; q < 4; q++) {
        if (!pats[q]) continue;
        if (l->layout == HC_MOE_PER_EXPERT) {
            long id = expert_id(pats[q], name);
            if (id >= 0) return (uint64_t)id >= e0 && (uint64_t)id < e1 ? HC_GPU_MOE_WHOLE
                                                                       : HC_GPU_MOE_ELSEWHERE;
        } else if (!strcmp(pats[q], name)) {
            *first = e0, *count = e1 - e0;
            return HC_GPU_MOE_SLICE;
        }
    }
    return -1;
}

int hc__gpu_moe_tensor_part(hc_container *c, const char *name, uint32_t e0, uint32_t e1,
                            uint32_t *first, uint32_t *count) {
    for (size_t i = 0; i < hc_container_moe_count(c); i++) {
        int part = part_of(hc_container_moe(c, i), name, e0, e1, first, count);
        if (part >= 0) return part;
    }
    return HC_GPU_MOE_WHOLE;
}

const hc_moe_layer_info *hc__gpu_moe_record(hc_container *c, const char *layer) {
    for (size_t i = 0; layer && i < hc_container_moe_count(c); i++)
        if (!strcmp(hc_container_moe(c, i)->name, layer)) return hc_container_moe(c, i);
    return NULL;
}

bool hc__gpu_moe_layer_has(const hc_moe_layer_info *l, const char *name) {
    uint32_t first, count;
    return part_of(l, name, 0, UINT32_MAX, &first, &count) >= 0;
}

/* Layer l of the record as the GPU runs it (ml->why says when it does not). */
static hc_status setup_layer(hc_gpu_model *md, hc_container *c, const hc_moe_layer_info *l,
                             hc_gpu_moe_layer *ml, hc_err *err) {
    float *gu = NULL, *db = NULL, *gb = NULL;
    hc_status st = HC_OK;
    ml->E = l->experts;
    ml->e0 = md->e0 < l->experts ? md->e0 : l->experts;
    ml->El = (md->e1 < l->experts ? md->e1 : l->experts) - ml->e0;
    REFUSE(ml->El > 0, "this GPU model holds experts from %u, the layer has %u", md->e0, ml->E);
    ml->order = l->gate_up_order, ml->act = l->activation;
    ml->alpha = (float)l->alpha, ml->limit = (float)l->limit;
    REFUSE(ml->El >= 1 && ml->El <= HC_MOE_EXPERTS_MAX, "%u experts (the routing sorts at most "
           "%u)", ml->El, HC_MOE_EXPERTS_MAX);
    const char *up[2] = {l->gate_up ? l->gate_up : l->gate, l->up};
    ml->parts = l->gate_up ? 1 : 2;
    HC_TRY_GOTO(st, setup_proj(md, c, ml, l, up, ml->parts, &ml->up, err), done);
    if (ml->why[0]) goto done;
    HC_TRY_GOTO(st, setup_proj(md, c, ml, l, &l->down, 1, &ml->down, err), done);
    if (ml->why[0]) goto done;
    ml->H = ml->up.mp.K;
    ml->I = ml->parts == 1 ? ml->up.mp.N / 2 : ml->up.mp.N;
    REFUSE(ml->parts == 2 || ml->up.mp.N % 2 == 0, "gate_up has %llu rows, not 2 I",
           (unsigned long long)ml->up.mp.N);
    REFUSE(ml->down.mp.N == ml->H && ml->down.mp.K == ml->I, "down is [%llu, %llu], not [H=%llu, "
           "I=%llu]", (unsigned long long)ml->down.mp.N, (unsigned long long)ml->down.mp.K,
           (unsigned long long)ml->H, (unsigned long long)ml->I);
    ml->ldx = (ml->H + 7) / 8 * 8, ml->ldh = (ml->I + 7) / 8 * 8; /* (H, I < 2^40: tile_layer) */
    /* biases: gate_up's [E, 2I] in its row order -> [El][2][I] (gate, up); down's [E, H] */
    HC_TRY_GOTO(st, hc__moe_bias_f32(c, l, l->gate_up_bias, 2 * ml->I, &gu, err), done);
    HC_TRY_GOTO(st, hc__moe_bias_f32(c, l, l->down_bias, ml->H, &db, err), done);
    if (gu) {
        if (!(gb = malloc((size_t)ml->El * 2 * ml->I * sizeof *gb + 1))) {
            st = hc__fail(err, HC_NOMEM, "out of memory");
            goto done;
        }
        for (uint64_t e = 0; e < ml->El; e++)
            for (uint64_t j = 0; j < ml->I; j++) {
                const float *r = gu + (ml->e0 + e) * 2 * ml->I;
                bool il = ml->order == HC_MOE_INTERLEAVED;
                gb[(e * 2) * ml->I + j] = r[il ? 2 * j : j];
                gb[(e * 2 + 1) * ml->I + j] = r[il ? 2 * j + 1 : ml->I + j];
            }
        HC_TRY_GOTO(st, upload(&ml->bias_gu, gb, (size_t)ml->El * 2 * ml->I * sizeof *gb, err),
                    done);
    }
    if (db)
        HC_TRY_GOTO(st, upload(&ml->bias_d, db + (size_t)ml->e0 * ml->H,
                               (size_t)ml->El * ml->H * sizeof *db, err), done);
    /* the grouped kernels of both projections' kinds */
    HC_TRY_GOTO(st, hc__gpu_moe_module(md->g, ml->up.mod, err), done);
    HC_TRY_GOTO(st, hc__gpu_moe_module(md->g, ml->down.mod, err), done);
    /* (the K split of moe-t8/t16 reads their own occupancy, not the dense kernels') */
    hc__gpu_moe_gemv_occupancy(md->g, ml->up.mod, ml->up.shape.chunk_bytes, ml->up.shape.gemv_occ);
    hc__gpu_moe_gemv_occupancy(md->g, ml->down.mod, ml->down.shape.chunk_bytes,
                               ml->down.shape.gemv_occ);
    goto done;
refused:
    st = HC_OK;
done:
    free(gu), free(db), free(gb);
    return st;
}

/* The routing module (kernels/moe_route.cu), once per device, its sorts' shared memory raised
 * to what el experts need (HC_MOE_ROUTE_SMEM_BYTES, 4 x (36 el + 66) bytes: 148 KB at the 1024
 * most; a device without that much leaves the MoE layers refused, saying so). */
static hc_status route_module(hc_gpu *g, uint32_t el, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    void *cubin = NULL;
    size_t size = 0;
    const int need = (int)HC_MOE_ROUTE_SMEM_BYTES((size_t)el);
    pthread_mutex_lock(&g->mu);
    if (g->moe_lib) goto smem;
    st = hc__jit_compile("moe_route.cu", g->arch, NULL, 0, &cubin, &size, &err);
    if (st) goto out;
    CU(hc__cuda.lib_load(&g->moe_lib, cubin, NULL, NULL, 0, NULL, NULL, 0),
       "cudaLibraryLoadData(moe_route)");
    CU(hc__cuda.lib_kernel(&g->moe_route, g->moe_lib, "hc_moe_route"), "hc_moe_route");
    CU(hc__cuda.lib_kernel(&g->moe_route_count, g->moe_lib, "hc_moe_route_count"),
       "hc_moe_route_count");
    CU(hc__cuda.lib_kernel(&g->moe_route_place, g->moe_lib, "hc_moe_route_place"),
       "hc_moe_route_place");
    CU(hc__cuda.lib_kernel(&g->moe_expand, g->moe_lib, "hc_moe_expand"), "hc_moe_expand");
    CU(hc__cuda.lib_kernel(&g->moe_act, g->moe_lib, "hc_moe_act"), "hc_moe_act");
    CU(hc__cuda.lib_kernel(&g->moe_finalize, g->moe_lib, "hc_moe_finalize"), "hc_moe_finalize");
smem:
    if (need > g->moe_route_smem) {
        const cudaKernel_t sorts[3] = {g->moe_route, g->moe_route_count, g->moe_route_place};
        const char *const names[3] = {"hc_moe_route", "hc_moe_route_count", "hc_moe_route_place"};
        for (int i = 0; i < 3; i++) {
            char what[96];
            snprintf(what, sizeof what, "shared memory of %s for %u experts (%d bytes)", names[i],
                     el, need);
            CU(hc__cuda.func_attr((const void *)sorts[i],
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, need), what);
        }
        g->moe_route_smem = need;
    }
out:
    if (st && g->moe_lib && !g->moe_route_smem) { /* (a failed build, not a refused size) */
        hc__cuda.lib_unload(g->moe_lib);
        g->moe_lib = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    free(cubin);
    if (st) *perr = err;
    return st;
}

/* The device bytes of workspace w (0 for none), as the model's size counts them. */
static uint64_t ws_bytes(const struct hc_gpu_moe_ws *w) {
    return w ? w->rows * 4 + w->slots * 4 + w->xs_bytes + w->g_bytes + w->h_bytes +
                   w->part_bytes + w->cnt_bytes + w->rtab_bytes
             : 0;
}

static void ws_free(struct hc_gpu_moe_ws *w) {
    if (!w) return;
    if (hc__cuda.loaded) {
        hc__cuda.free_(w->sorted), hc__cuda.free_(w->inv), hc__cuda.free_(w->meta);
        hc__cuda.free_(w->xs), hc__cuda.free_(w->g), hc__cuda.free_(w->h);
        hc__cuda.free_(w->part), hc__cuda.free_(w->cnt), hc__cuda.free_(w->rtab);
    }
    free(w);
}

/* What a chunk of `slots` slots of layer i of md needs of the workspace with grouped kernel
 * `kernel` (HC_GPU_KERNEL_AUTO: the runtime's choice) into *n; false where the layer does not
 * run on the GPU or that kernel cannot run it (chunk() says why when a call asks). */
static bool layer_need(const hc_gpu_model *md, const hc_gpu_caps *dev, size_t i, uint64_t slots,
                       int kernel, hc_gpu_moe_wsneed *n) {
    hc_gpu_moe_route r;
    hc_gpu_moe_launch lu, ld;
    hc_err e = {0};
    return !md->moe[i].why[0] &&
           !hc__gpu_moe_need(dev, &md->moe[i], slots, kernel, n, &r, &lu, &ld, &e);
}

/* One workspace for every layer that runs: the largest chunk (slots, a power of two) whose
 * needs fit MOE_WS_BUDGET, with the small-M K split's partial sums for every chunk size the
 * small-M kernels take (their split shrinks as tiles grow: no single worst case), and what a
 * chunk of those slots needs with grouped kernel `forced` (HC_GPU_KERNEL_AUTO: none). The
 * output of down reuses xs (dead once gate_up has read it). It replaces md's workspace (freed
 * after the device is synchronised) only once the new one is whole. */
static hc_status ws_alloc(hc_gpu_model *md, int forced, hc_err *perr) {
    hc_err err = {0};
    hc_status st = HC_OK;
    hc_gpu_caps dev = hc__gpu_caps_of(md->g);
    struct hc_gpu_moe_ws *w = calloc(1, sizeof *w);
    if (!w) return hc__fail(perr, HC_NOMEM, "out of memory");
    uint64_t slots = MOE_SLOTS_MAX;
    for (;; slots /= 2) {
        hc_gpu_moe_wsneed tot = {0};
        for (size_t i = 0; i < md->nmoe; i++) {
            hc_gpu_moe_wsneed n;
            if (!layer_need(md, &dev, i, slots, HC_GPU_KERNEL_AUTO, &n)) continue;
            if (n.rows > tot.rows) tot.rows = n.rows;
            if (n.xs > tot.xs) tot.xs = n.xs;
            if (n.g > tot.g) tot.g = n.g;
            if (n.h > tot.h) tot.h = n.h;
        }
        if (tot.xs + tot.g + tot.h <= MOE_WS_BUDGET || slots <= MOE_SLOTS_MIN) {
            w->slots = slots, w->rows = tot.rows;
            w->xs_bytes = tot.xs, w->g_bytes = tot.g, w->h_bytes = tot.h;
            break;
        }
    }
    /* meta: the most tiles of any tile size (8-row tiles of every touched expert; two sizes,
     * moe-ws256r: slots / T + touched, gpu_plan.c). (Its rows, slots + touched x 191, can pass
     * those sized for the runtime's pick: a forced kernel's are added below.) */
    const unsigned t256r = hc__gpu_moe_tile(&hc__gpu_moe_variants(&(size_t){0})[HC_GMK_WS256R]);
    for (size_t i = 0; i < md->nmoe; i++) {
        const hc_gpu_moe_layer *ml = &md->moe[i];
        if (ml->why[0]) continue;
        const uint64_t touched = ml->El < w->slots ? ml->El : w->slots;
        uint64_t t = (w->slots + (uint64_t)ml->El * 7) / 8 + 1, t2 = w->slots / t256r + touched + 1;
        if (t2 > t) t = t2;
        if (t > w->tiles) w->tiles = t;
        /* the small-M K split, whichever the slots (it is not monotone in them): a split is
         * taken only while blocks x split fit one wave (hc__gemv_ksplit), so its partial sums
         * are at most sms x occ blocks of 64 rows x 16 tokens and its counters one per block of
         * a split of at least 2 */
        for (int q = 0; q < 2; q++) {
            const hc_gpu_shape *sh = q ? &ml->down.shape : &ml->up.shape;
            for (int v = 1; v < 3; v++) {
                uint64_t wave = (uint64_t)md->g->sms * (sh->gemv_occ[v] ? sh->gemv_occ[v] : 1);
                if (wave * 64 * 16 * 4 > w->part_bytes) w->part_bytes = wave * 64 * 16 * 4;
                if (wave / 2 * 4 > w->cnt_bytes) w->cnt_bytes = wave / 2 * 4;
            }
        }
    }
    /* the skinny kernels (the registry's stream-K ones, forced ones too) at the chunk's slots:
     * their segments do not depend on the slots and their counters grow with the tiles, so this
     * chunk size is their most (hc__gpu_moe_need refuses where the device or the layout has
     * none) */
    size_t nv;
    const hc_gpu_moe_variant *mv = hc__gpu_moe_variants(&nv);
    for (size_t i = 0; i < md->nmoe; i++) {
        for (size_t q = 0; q < nv; q++) {
            hc_gpu_variant v;
            hc_gpu_moe_wsneed n;
            if (hc__gpu_moe_like(&mv[q], &v)->args != HC_GPU_ARGS_STREAMK ||
                !layer_need(md, &dev, i, w->slots, (int)q, &n))
                continue;
            if (n.part > w->part_bytes) w->part_bytes = n.part;
            if (n.cnt > w->cnt_bytes) w->cnt_bytes = n.cnt;
        }
    }
    /* a forced kernel's chunk at these slots (a wider tile pads more rows) */
    for (size_t i = 0; forced != HC_GPU_KERNEL_AUTO && i < md->nmoe; i++) {
        hc_gpu_moe_wsneed n;
        if (!layer_need(md, &dev, i, w->slots, forced, &n)) continue;
        if (n.rows > w->rows) w->rows = n.rows;
        if (n.tiles + 1 > w->tiles) w->tiles = n.tiles + 1;
        if (n.xs > w->xs_bytes) w->xs_bytes = n.xs;
        if (n.g > w->g_bytes) w->g_bytes = n.g;
        if (n.h > w->h_bytes) w->h_bytes = n.h;
        if (n.part > w->part_bytes) w->part_bytes = n.part;
        if (n.cnt > w->cnt_bytes) w->cnt_bytes = n.cnt;
    }
    if (w->tiles > 65535 + 1) w->tiles = 65535 + 1;
    /* the many-slot routing sort's table for the most local experts, and its ticket */
    for (size_t i = 0; i < md->nmoe; i++) {
        size_t b = ((size_t)HC_MOE_ROUTE_TABLE_WORDS(md->moe[i].El) + 1) * 4;
        if (!md->moe[i].why[0] && b > w->rtab_bytes) w->rtab_bytes = b;
    }
    CU(hc__cuda.malloc_(&w->sorted, w->rows * 4 + 16), "cudaMalloc(MoE routing)");
    CU(hc__cuda.malloc_(&w->inv, w->slots * 4 + 16), "cudaMalloc(MoE routing)");
    CU(hc__cuda.malloc_(&w->meta, (1 + 2 * w->tiles + 2) * 4 + 16),
       "cudaMalloc(MoE routing)");
    CU(hc__cuda.malloc_(&w->xs, w->xs_bytes + 16), "cudaMalloc(MoE activations)");
    CU(hc__cuda.malloc_(&w->g, w->g_bytes + 16), "cudaMalloc(MoE gate_up outputs)");
    CU(hc__cuda.malloc_(&w->h, w->h_bytes + 16), "cudaMalloc(MoE activation outputs)");
    if (w->part_bytes) CU(hc__cuda.malloc_(&w->part, w->part_bytes), "cudaMalloc(MoE K split)");
    if (w->cnt_bytes) {
        CU(hc__cuda.malloc_(&w->cnt, w->cnt_bytes), "cudaMalloc(MoE K split)");
        CU(hc__cuda.memset_(w->cnt, 0, w->cnt_bytes), "cudaMemset(MoE K split)");
    }
    if (w->rtab_bytes) {
        CU(hc__cuda.malloc_(&w->rtab, w->rtab_bytes), "cudaMalloc(MoE routing table)");
        CU(hc__cuda.memset_(w->rtab, 0, w->rtab_bytes), "cudaMemset(MoE routing table)");
    }
    CU(hc__cuda.sync(), "synchronise after clearing the MoE workspace");
    md->bytes += ws_bytes(w) - ws_bytes(md->mws);
    ws_free(md->mws); /* (the sync above: no launch still uses it) */
    md->mws = w;
out:
    if (st) {
        ws_free(w);
        *perr = err;
    }
    return st;
}

hc_status hc__gpu_moe_load(hc_gpu_model *md, hc_container *c, const char *only, hc_err *err) {
    size_t n = hc_container_moe_count(c), runs = 0;
    if (!n) return HC_OK;
    if (!(md->moe = calloc(n, sizeof *md->moe))) return hc__fail(err, HC_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const hc_moe_layer_info *l = hc_container_moe(c, i);
        if (only && strcmp(only, l->name)) continue; /* (its experts are not uploaded) */
        hc_gpu_moe_layer *ml = &md->moe[md->nmoe];
        if (!(ml->name = hc__strdup(l->name))) return hc__fail(err, HC_NOMEM, "out of memory");
        md->nmoe++;
        hc_err e1 = {0};
        hc_status s1 = setup_layer(md, c, l, ml, &e1);
        if (s1 == HC_NOMEM) return hc__fail(err, s1, "%s", e1.msg);
        if (s1) snprintf(ml->why, sizeof ml->why, "%s", e1.msg); /* (its kernels, a CUDA call) */
        runs += !ml->why[0];
    }
    qsort(md->moe, md->nmoe, sizeof *md->moe, hc__gpu_moe_cmp);
    if (!runs) return HC_OK;
    uint32_t el = 1;
    for (size_t i = 0; i < md->nmoe; i++)
        if (!md->moe[i].why[0] && md->moe[i].El > el) el = md->moe[i].El;
    /* (a routing module or workspace the device cannot give leaves the dense layers loaded:
     * each MoE layer keeps the reason, which hc_gpu_moe reports) */
    hc_err e2 = {0};
    hc_status st = route_module(md->g, el, &e2);
    if (!st) st = ws_alloc(md, HC_GPU_KERNEL_AUTO, &e2);
    if (st == HC_NOMEM) return hc__fail(err, st, "%s", e2.msg);
    for (size_t i = 0; st && i < md->nmoe; i++)
        if (!md->moe[i].why[0])
            snprintf(md->moe[i].why, sizeof md->moe[i].why, "the MoE kernels or workspace: %s",
                     e2.msg);
    return HC_OK;
}

hc_status hc__gpu_moe_ws_fit(hc_gpu_model *md, int forced, hc_err *err) {
    if (!md->mws || forced == HC_GPU_KERNEL_AUTO) return HC_OK;
    hc_gpu_caps dev = hc__gpu_caps_of(md->g);
    for (size_t i = 0; i < md->nmoe; i++) {
        hc_gpu_moe_wsneed n;
        if (layer_need(md, &dev, i, md->mws->slots, forced, &n) &&
            !hc__gpu_moe_ws_holds(md->mws, &n))
            return ws_alloc(md, forced, err);
    }
    return HC_OK;
}

void hc__gpu_moe_free(hc_gpu_model *md) {
    for (size_t i = 0; i < md->nmoe; i++) {
        hc_gpu_moe_layer *ml = &md->moe[i];
        if (hc__cuda.loaded) {
            hc__cuda.free_(ml->up.wtab), hc__cuda.free_(ml->up.ptab), hc__cuda.free_(ml->up.gdiv);
            hc__cuda.free_(ml->down.wtab), hc__cuda.free_(ml->down.ptab);
            hc__cuda.free_(ml->down.gdiv);
            hc__cuda.free_(ml->bias_gu), hc__cuda.free_(ml->bias_d);
        }
        free(ml->name);
    }
    free(md->moe);
    md->moe = NULL, md->nmoe = 0;
    ws_free(md->mws);
    md->mws = NULL;
}

