/* convert.c: the conversion pipeline: open and check the checkpoint, plan every module's
 * layout (scales only), then write the container with each quantized module repacked into its
 * tile layout as the writer reaches it (one module per thread in memory), and copy the
 * non-weight files so the output folder is servable. */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "checkpoint.h"
#include "container_write.h"
#include "hconvert.h"
#include "jsonutil.h"
#include "quant.h"
#include "tiles.h"

struct hc_converter {
    int threads, dry_run, progress, tp_size, repack;
    hc_conv_stats stats;
    hc_err err;
};

hc_converter *hc_converter_create(void) {
    hc_converter *c = calloc(1, sizeof *c);
    if (c) c->tp_size = 1, c->repack = 1;
    return c;
}

void hc_converter_free(hc_converter *c) { free(c); }

hc_status hc_converter_set(hc_converter *c, hc_conv_param p, int64_t v) {
    hc_err_clear(&c->err);
    switch (p) {
    case HC_CONV_THREADS: c->threads = v > 4096 ? 4096 : (int)(v < 0 ? 0 : v); return HC_OK;
    case HC_CONV_DRY_RUN: c->dry_run = v != 0; return HC_OK;
    case HC_CONV_PROGRESS: c->progress = v != 0; return HC_OK;
    case HC_CONV_REPACK: c->repack = v != 0; return HC_OK;
    case HC_CONV_TP_SIZE:
        if (v != 1)
            return hc_fail(&c->err, HC_UNSUPPORTED, "--tp %lld: tensor-parallel sharding is not "
                           "in this version (only 1)", (long long)v);
        c->tp_size = 1;
        return HC_OK;
    }
    return hc_fail(&c->err, HC_USAGE, "unknown converter parameter %d", (int)p);
}

const char *hc_converter_errmsg(const hc_converter *c) { return c->err.msg; }
const hc_conv_stats *hc_converter_stats(const hc_converter *c) { return &c->stats; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    double last;
} progress_state;

static void progress_cb(void *ctx, uint64_t done, uint64_t total) {
    progress_state *ps = ctx;
    double t = now_s();
    if (done < total && t - ps->last < 0.1) return;
    ps->last = t;
    int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    fprintf(stderr, "\rwriting: %3d%% (%.2f / %.2f GB)%s", pct, (double)done / 1e9,
            (double)total / 1e9, done >= total ? "\n" : "");
}

/* Scales, zero points and small tensors compress well; big weights stay raw to be mapped. */
static bool wants_zstd(const char *name, uint64_t size) {
    return size <= (1u << 20) || strstr(name, "scale") || strstr(name, "zero") ||
           strstr(name, "g_idx");
}

static hc_status ensure_dir(const char *dir, hc_err *err) {
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return hc_fail(err, HC_USAGE, "output '%s' exists and is not a folder", dir);
        return HC_OK;
    }
    if (mkdir(dir, 0755) != 0)
        return hc_fail(err, HC_IO, "cannot create output folder '%s': %s", dir, strerror(errno));
    return HC_OK;
}

/* Per-module plan shared by the planning pass and the writer's fill calls. */
typedef struct {
    const hc_model *md;
    hc_tile_plan *plan;   /* per module */
    bool *tiled;          /* per module */
    hc_tile_stats *stats; /* per module, filled by the writer */
} conv_plan;

/* Writer callback: decode the module's codes, pack them, drop the source pages. */
static hc_status fill_tiles(void *ctx, size_t i, void *dst, hc_err *err) {
    conv_plan *cp = ctx;
    const hc_module *m = &cp->md->m[i];
    hc_qtensor q;
    hc_findings f = {0};
    hc_status st = hc_module_decode(cp->md, m, 0, &q, &f, err);
    if (!st) st = hc_tile_pack(&q, &cp->plan[i], dst, &cp->stats[i], err);
    hc_qtensor_free(&q);
    hc_findings_free(&f);
    hc_module_release(cp->md, m);
    return st;
}

/* The tensors of a module that a tile layout replaces. */
static bool consumed(hc_role r) {
    return r == HC_ROLE_WEIGHT || r == HC_ROLE_SCALE || r == HC_ROLE_ZERO || r == HC_ROLE_GIDX ||
           r == HC_ROLE_SHAPE || r == HC_ROLE_GSCALE;
}

static void source_tensor(hc_cw_tensor *t, const hc_ckpt *ck, const hc_ck_entry *e) {
    memset(t, 0, sizeof *t);
    t->name = e->name;
    t->dtype = e->t->dtype;
    t->ndim = e->t->ndim;
    memcpy(t->shape, e->t->shape, sizeof t->shape);
    memcpy(t->padded_shape, e->t->shape, sizeof t->padded_shape);
    t->layout = "source";
    t->layout_version = 1;
    t->data = hc_ckpt_data(ck, e);
    t->size = e->t->end - e->t->begin;
    t->try_zstd = wants_zstd(e->name, t->size);
}

static int cmp_cw_name(const void *a, const void *b) {
    return strcmp(((const hc_cw_tensor *)a)->name, ((const hc_cw_tensor *)b)->name);
}

/* Plans every module (in parallel; scales only). Refuses checkpoints validate rejects. */
static hc_status plan_modules(hc_converter *c, const hc_model *md, conv_plan *cp, hc_err *err) {
    for (size_t i = 0; i < md->config_findings.n; i++)
        if (md->config_findings.v[i].severity == HC_SEV_ERROR)
            return hc_fail(err, HC_INVALID, "%s (run 'hconvert validate' for every problem)",
                           md->config_findings.v[i].message);
    hc_err *errs = calloc(md->n ? md->n : 1, sizeof *errs);
    if (!errs) return hc_fail(err, HC_NOMEM, "out of memory");
    int threads = c->threads > 0 ? c->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t i = 0; i < md->n; i++) {
        const hc_module *m = &md->m[i];
        if (m->scheme.fmt == HC_FMT_PLAIN || !c->repack) continue;
        hc_qtensor q;
        hc_findings f = {0};
        if (hc_module_decode(md, m, HC_DECODE_NO_CODES, &q, &f, &errs[i]) != HC_OK) {
            hc_err_clear(&errs[i]);
            hc_fail(&errs[i], HC_INVALID, "%s (run 'hconvert validate' for every problem)",
                    f.n ? f.v[0].message : "cannot decode");
        } else {
            cp->tiled[i] = hc_tile_plan_make(&q, &cp->plan[i]);
            hc_qtensor_free(&q);
        }
        hc_findings_free(&f);
        hc_module_release(md, m);
    }
    hc_status st = HC_OK;
    for (size_t i = 0; i < md->n && !st; i++)
        if (errs[i].code) st = hc_fail(err, errs[i].code, "%s", errs[i].msg);
    free(errs);
    return st;
}

hc_status hc_converter_run(hc_converter *c, const char *src, const char *out_dir) {
    hc_err *err = &c->err;
    hc_err_clear(err);
    memset(&c->stats, 0, sizeof c->stats);
    double t0 = now_s();
    hc_ckpt *ck = NULL;
    hc_model *md = NULL;
    hc_cw_tensor *tv = NULL;
    cJSON **params = NULL;
    char **perm_names = NULL;
    char *path = NULL;
    conv_plan cp = {0};
    size_t nt = 0;
    hc_status st = hc_ckpt_open(src, &ck, err);
    if (!st) st = hc_ckpt_map(ck, err);
    if (!st) st = hc_model_open(ck, &md, err);
    if (st) goto out;
    cp.md = md;
    cp.plan = calloc(md->n ? md->n : 1, sizeof *cp.plan);
    cp.tiled = calloc(md->n ? md->n : 1, sizeof *cp.tiled);
    cp.stats = calloc(md->n ? md->n : 1, sizeof *cp.stats);
    /* at most: every source tensor, plus a permutation per module */
    tv = calloc(ck->nentries + md->n + 1, sizeof *tv);
    params = calloc(md->n ? md->n : 1, sizeof *params);
    perm_names = calloc(md->n ? md->n : 1, sizeof *perm_names);
    if (!cp.plan || !cp.tiled || !cp.stats || !tv || !params || !perm_names) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    st = plan_modules(c, md, &cp, err);
    if (st) goto out;
    for (size_t i = 0; i < md->n; i++) {
        const hc_module *m = &md->m[i];
        if (m->scheme.fmt != HC_FMT_PLAIN) {
            if (cp.tiled[i]) c->stats.modules_repacked++;
            else c->stats.modules_kept++;
        }
        for (int r = 0; r < HC_ROLE_COUNT; r++)
            if (m->t[r] && !(cp.tiled[i] && consumed((hc_role)r))) {
                source_tensor(&tv[nt], ck, m->t[r]);
                c->stats.source_bytes += tv[nt++].size;
            } else if (m->t[r]) {
                c->stats.source_bytes += m->t[r]->t->end - m->t[r]->t->begin;
            }
        if (!cp.tiled[i]) continue;
        const hc_tile_params *p = &cp.plan[i].p;
        hc_cw_tensor *t = &tv[nt++];
        t->name = m->name;
        t->dtype = HC_DT_U8;
        t->ndim = 4;
        uint64_t sh[4] = {p->E, p->tiles_n, p->tiles_k, p->chunk_bytes};
        memcpy(t->shape, sh, sizeof sh);
        memcpy(t->padded_shape, sh, sizeof sh);
        t->layout = p->kind == HC_TL_INT ? HC_LAYOUT_INT : p->kind == HC_TL_FP4 ? HC_LAYOUT_FP4
                    : p->kind == HC_TL_MXFOLD ? HC_LAYOUT_MXFOLD : HC_LAYOUT_FP8;
        t->layout_version = HC_LAYOUT_VERSION;
        t->size = hc_tile_bytes(p);
        params[i] = hc_tile_params_json(p);
        t->layout_params = params[i];
        t->fill = fill_tiles;
        t->fill_ctx = &cp;
        t->fill_index = i;
        c->stats.padding_bytes += (p->E * (p->Np * p->Kp - p->N * p->K)) * p->code_bits / 8;
        if (cp.plan[i].perm) { /* act-order: the runtime gathers activation columns by it */
            hc_cw_tensor *pt = &tv[nt++];
            memset(pt, 0, sizeof *pt);
            pt->name = perm_names[i] = hc_asprintf("%s.perm", m->name);
            if (!pt->name) {
                st = hc_fail(err, HC_NOMEM, "out of memory");
                goto out;
            }
            pt->dtype = HC_DT_I32;
            pt->ndim = 1;
            pt->shape[0] = pt->padded_shape[0] = p->K;
            pt->layout = "source";
            pt->layout_version = 1;
            pt->data = cp.plan[i].perm;
            pt->size = p->K * 4;
            pt->try_zstd = false; /* read in place by the runtime */
        }
    }
    qsort(tv, nt, sizeof *tv, cmp_cw_name);
    c->stats.tensors = nt;
    if (c->dry_run) goto out;
    st = ensure_dir(out_dir, err);
    if (st) goto out;
    path = hc_asprintf("%s/%s", out_dir, HC_CONTAINER_FILE);
    if (!path) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    progress_state ps = {0};
    cJSON *tile = cJSON_CreateObject();
    cJSON_AddNumberToObject(tile, "tile_n", HC_TILE_N);
    cJSON_AddNumberToObject(tile, "tile_k", HC_TILE_K);
    cJSON_AddNumberToObject(tile, "align", HC_TILE_ALIGN);
    hc_cw_options o = {
        .source_format = md->quant_method[0] ? md->quant_method : "safetensors",
        .target = c->repack ? "tiles" : "passthrough",
        .tp_rank = 0,
        .tp_size = 1,
        .config_json = ck->config_text,
        .config_len = ck->config_len,
        .tile_config = c->repack ? tile : NULL,
        .threads = c->threads,
        .progress = c->progress ? progress_cb : NULL,
        .progress_ctx = &ps,
    };
    st = hc_container_write(path, tv, nt, &o, err);
    cJSON_Delete(tile);
    if (st) goto out;
    for (size_t i = 0; i < md->n; i++) {
        c->stats.tiles += cp.stats[i].tiles;
        c->stats.mx_unfolded += cp.stats[i].mx_unfolded;
    }
    struct stat sb;
    if (stat(path, &sb) == 0) c->stats.container_bytes = (uint64_t)sb.st_size;
    for (size_t i = 0; i < ck->nextra && !st; i++) {
        char *from = hc_asprintf("%s/%s", ck->root, ck->extra_files[i]);
        char *to = hc_asprintf("%s/%s", out_dir, ck->extra_files[i]);
        st = from && to ? hc_atomic_copy(from, to, err) : hc_fail(err, HC_NOMEM, "out of memory");
        free(from);
        free(to);
        c->stats.files_copied += !st;
    }
out:
    c->stats.seconds = now_s() - t0;
    free(path);
    free(tv);
    for (size_t i = 0; md && i < md->n; i++) {
        if (cp.plan) hc_tile_plan_free(&cp.plan[i]);
        if (params) cJSON_Delete(params[i]);
        if (perm_names) free(perm_names[i]);
    }
    free(params);
    free(perm_names);
    free(cp.plan);
    free(cp.tiled);
    free(cp.stats);
    hc_model_free(md);
    hc_ckpt_close(ck);
    return st;
}
