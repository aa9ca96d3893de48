/* convert.c: the conversion pipeline: open and check the checkpoint, plan every module's
 * layout (plan.c: each module decoded once, kept for the writer within a budget), then,
 * holding OUT's lock, copy the non-weight files (so the output folder is servable) and write
 * the container with each quantized module repacked into its tile layout as the writer
 * reaches it; every file of every rank is renamed into place only once all are written
 * (docs/convert.md). */
#include <errno.h>
#include <stdarg.h>
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
#include "families.h"
#include "moe.h"
#include "plan.h"
#include "quant.h"
#include "shard.h"
#include "tiles.h"

struct hc_converter {
    int threads, dry_run, progress, tp_size, repack;
    uint64_t hold_bytes; /* decoded tensors the planning pass keeps for the writer */
    hc_ckpt_opts ckpt;   /* extraction limits of an archive SRC */
    hc_out_options out;
    hc_conv_stats stats;
    char *report; /* the plan and the notes of the last run */
    size_t report_len;
    hc_err err;
};

hc_converter *hc_converter_create(void) {
    hc_converter *c = calloc(1, sizeof *c);
    if (c) {
        c->tp_size = 1, c->repack = 1, c->hold_bytes = HC_CONV_HOLD_DEFAULT;
        c->out.side_file_limit = HC_SIDE_FILE_LIMIT_DEFAULT;
    }
    return c;
}

hc_out_options *hc__converter_out_options(hc_converter *c) { return &c->out; }

void hc_converter_free(hc_converter *c) {
    if (c) free(c->report);
    free(c);
}

const char *hc_converter_report(const hc_converter *c) { return c->report ? c->report : ""; }

static void note(hc_converter *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(hc_converter *c, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t l = strlen(line);
    char *r = realloc(c->report, c->report_len + l + 2);
    if (!r) return;
    c->report = r;
    memcpy(r + c->report_len, line, l);
    r[c->report_len + l] = '\n';
    r[c->report_len + l + 1] = 0;
    c->report_len += l + 1;
}

hc_status hc_converter_set(hc_converter *c, hc_conv_param p, int64_t v) {
    hc__err_clear(&c->err);
    switch (p) {
    case HC_CONV_THREADS: c->threads = v > 4096 ? 4096 : (int)(v < 0 ? 0 : v); return HC_OK;
    case HC_CONV_DRY_RUN: c->dry_run = v != 0; return HC_OK;
    case HC_CONV_PROGRESS: c->progress = v != 0; return HC_OK;
    case HC_CONV_REPACK: c->repack = v != 0; return HC_OK;
    case HC_CONV_TP_SIZE:
        if (v < 1 || v > 64)
            return hc__fail(&c->err, HC_USAGE, "--tp %lld: expected 1..64 ranks", (long long)v);
        c->tp_size = (int)v;
        return HC_OK;
    case HC_CONV_MAX_EXTRACT_BYTES:
    case HC_CONV_MAX_EXTRACT_RATIO:
        if (v < 1)
            return hc__fail(&c->err, HC_USAGE, "extraction limit %lld: expected a positive value",
                           (long long)v);
        *(p == HC_CONV_MAX_EXTRACT_BYTES ? &c->ckpt.max_extract_bytes
                                         : &c->ckpt.max_extract_ratio) = (uint64_t)v;
        return HC_OK;
    case HC_CONV_SIDE_FILE_LIMIT:
        if (v < 1)
            return hc__fail(&c->err, HC_USAGE, "side-file limit %lld: expected at least 1 byte",
                           (long long)v);
        c->out.side_file_limit = (uint64_t)v;
        return HC_OK;
    case HC_CONV_HOLD_BYTES:
        if (v < 0)
            return hc__fail(&c->err, HC_USAGE, "hold budget %lld: expected 0 or more bytes",
                           (long long)v);
        c->hold_bytes = (uint64_t)v;
        return HC_OK;
    }
    return hc__fail(&c->err, HC_USAGE, "unknown converter parameter %d", (int)p);
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
            return hc__fail(err, HC_USAGE, "output '%s' exists and is not a folder", dir);
        return HC_OK;
    }
    if (mkdir(dir, 0755) != 0)
        return hc__fail(err, HC_IO, "cannot create output folder '%s': %s", dir, strerror(errno));
    return HC_OK;
}

/* A source tensor cut for a rank along dim: rows (dim 0 of a role 'c' weight) or the columns
of every row (a role 'r' weight; a role 'c' bias, 1-D or a fused layer's [E, rows]). */
typedef struct {
    const hc_ckpt *ck;
    const hc_ck_entry *e;
    int dim;
    unsigned rank, tp;
} slice_job;

static hc_status fill_slice(void *ctx, size_t i, void *dst, hc_err *err) {
    const slice_job *j = &((const slice_job *)ctx)[i];
    const uint8_t *src = hc__ckpt_data(j->ck, j->e);
    uint64_t es = hc_dtype_bits(j->e->t->dtype) / 8;
    uint64_t rows = j->e->t->ndim == 2 ? j->e->t->shape[0] : 1;
    uint64_t cols = j->e->t->ndim == 2 ? j->e->t->shape[1] : j->e->t->shape[0];
    uint64_t b, e;
    (void)err;
    if (j->dim == 0 && j->e->t->ndim == 2) {
        hc__shard_range(rows, j->tp, j->rank, &b, &e);
        memcpy(dst, src + b * cols * es, (e - b) * cols * es);
    } else { /* columns of every row (a 1-D bias: its one row) */
        hc__shard_range(cols, j->tp, j->rank, &b, &e);
        for (uint64_t r = 0; r < rows; r++)
            memcpy((uint8_t *)dst + r * (e - b) * es, src + (r * cols + b) * es, (e - b) * es);
    }
    return HC_OK;
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
    t->data = hc__ckpt_data(ck, e);
    t->size = e->t->end - e->t->begin;
    t->try_zstd = wants_zstd(e->name, t->size);
}

/* Whether a source tensor of a parallel layer is cut, and how. */
static bool sliceable(const hc_ck_entry *e, hc_role r, char role) {
    unsigned bits = hc_dtype_bits(e->t->dtype);
    if (!role || bits < 8 || bits % 8) return false;
    if (r == HC_ROLE_WEIGHT) return e->t->ndim == 2;
    /* a column-parallel layer's bias: 1-D, or [E, rows] of fused experts (its rows cut as the
     * layer's are); a row-parallel layer's bias is added once, whole */
    return r == HC_ROLE_BIAS && role == 'c' && (e->t->ndim == 1 || e->t->ndim == 2);
}

/* Copies the non-weight files into a rank's folder, into the set: nothing is renamed before
 * the whole output is written (docs/convert.md). */
static hc_status copy_side_files(hc_converter *c, const hc_ckpt *ck, const char *dir,
                                 hc_atomic_set *set, hc_err *err) {
    hc_status st = HC_OK;
    for (size_t i = 0; i < ck->nextra && !st; i++) {
        char *from = hc__asprintf("%s/%s", ck->root, ck->extra_files[i]);
        char *to = hc__asprintf("%s/%s", dir, ck->extra_files[i]);
        hc_atomic_file af;
        st = from && to ? hc__out_open(&af, to, c->out.fault, err)
                        : hc__fail(err, HC_NOMEM, "out of memory");
        if (!st) {
            st = hc__atomic_copy(&af, from, c->out.side_file_limit,
                                ck->extra_ids ? &ck->extra_ids[i] : NULL, err);
            if (st) hc__atomic_abort(&af);
            else st = hc__atomic_set_add(set, &af, false, err);
        }
        free(from);
        free(to);
        c->stats.files_copied += !st;
    }
    return st;
}

/* The container of one rank: its tensor list, then the file copies and the write (into the
 * set, renamed when every rank is written). */
static hc_status write_rank(hc_converter *c, const hc_ckpt *ck, const hc_model *md,
                            hc_conv_plan *cp, const char *dir, hc_atomic_set *set, hc_err *err) {
    hc_status st = HC_OK;
    size_t nt = 0, nslice = 0;
    hc_cw_tensor *tv = calloc(ck->nentries + md->n + 1, sizeof *tv);
    cJSON **params = calloc(md->n ? md->n : 1, sizeof *params);
    char **perm_names = calloc(md->n ? md->n : 1, sizeof *perm_names);
    slice_job *jobs = calloc(ck->nentries + 1, sizeof *jobs);
    char *path = NULL;
    if (!tv || !params || !perm_names || !jobs) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    uint64_t stored = 0, padding = 0, scales = 0;
    for (size_t i = 0; i < md->n; i++) {
        const hc_module *m = &md->m[i];
        bool tiled = cp->tiled[i];
        if (cp->rank == 0 && m->scheme.fmt != HC_FMT_PLAIN) {
            if (tiled) c->stats.modules_repacked++;
            else c->stats.modules_kept++;
            if (!tiled && c->repack)
                note(c, "note: module '%s' keeps its source layout: %s", m->name,
                     cp->plan[i].reason);
        }
        for (int r = 0; r < HC_ROLE_COUNT; r++) {
            const hc_ck_entry *e = m->t[r];
            if (!e) continue;
            if (cp->rank == 0) c->stats.source_bytes += e->t->end - e->t->begin;
            if (tiled && consumed((hc_role)r)) continue;
            hc_cw_tensor *t = &tv[nt++];
            source_tensor(t, ck, e);
            if (cp->tp > 1 && sliceable(e, (hc_role)r, cp->role[i])) {
                slice_job *j = &jobs[nslice];
                bool rows = r == HC_ROLE_WEIGHT && cp->role[i] == 'c';
                int d = rows || e->t->ndim == 1 ? 0 : 1;
                *j = (slice_job){.ck = ck, .e = e, .dim = d, .rank = cp->rank, .tp = cp->tp};
                uint64_t b, en;
                hc__shard_range(e->t->shape[d], cp->tp, cp->rank, &b, &en);
                t->shape[d] = t->padded_shape[d] = en - b;
                t->size = t->size / e->t->shape[d] * (en - b);
                t->data = NULL;
                t->try_zstd = false;
                t->fill = fill_slice;
                t->fill_ctx = jobs;
                t->fill_index = nslice++;
            }
            stored += t->size;
        }
        if (!tiled) continue;
        const hc_tile_params *p = &cp->plan[i].p;
        hc_cw_tensor *t = &tv[nt++];
        t->name = m->name;
        t->dtype = HC_DT_U8;
        t->ndim = 4;
        uint64_t sh[4] = {p->E, p->tiles_n, p->tiles_k, p->chunk_bytes};
        memcpy(t->shape, sh, sizeof sh);
        memcpy(t->padded_shape, sh, sizeof sh);
        t->layout = hc__layout_by_kind(p->kind)->id;
        t->layout_version = hc__tile_layout_version(p);
        t->size = hc_tile_bytes(p);
        params[i] = hc__tile_params_json(p);
        t->layout_params = params[i];
        t->fill = hc__conv_fill_tiles;
        t->fill_ctx = cp;
        t->fill_index = i;
        uint64_t pad = p->E * (p->Np * p->Kp - p->N * p->K) * p->code_bits / 8;
        uint64_t sc = p->E * p->tiles_n * p->tiles_k * (p->scale_bytes + p->zero_bytes);
        padding += pad, scales += sc, stored += t->size;
        if (c->dry_run)
            note(c, "%s%s: %s v%u, %s[%llu, %llu] -> [%llu, %llu], %llu bytes (padding %llu, "
                 "scales %llu)%s", cp->tp > 1 ? "  " : "", m->name, t->layout, t->layout_version,
                 p->E > 1 ? "E x " : "", (unsigned long long)p->N, (unsigned long long)p->K,
                 (unsigned long long)p->Np, (unsigned long long)p->Kp,
                 (unsigned long long)t->size, (unsigned long long)pad, (unsigned long long)sc,
                 p->perm ? ", act-order" : p->sign_magnitude ? ", sign-magnitude" : "");
        if (cp->plan[i].perm) { /* act-order: the runtime gathers activation columns by it */
            hc_cw_tensor *pt = &tv[nt++];
            pt->name = perm_names[i] = hc__asprintf("%s.perm", m->name);
            if (!pt->name) {
                st = hc__fail(err, HC_NOMEM, "out of memory");
                goto out;
            }
            pt->dtype = HC_DT_I32;
            pt->ndim = 1;
            pt->shape[0] = pt->padded_shape[0] = p->K;
            pt->layout = "source";
            pt->layout_version = 1;
            pt->data = cp->plan[i].perm;
            pt->size = p->K * 4;
            stored += pt->size;
        }
    }
    qsort(tv, nt, sizeof *tv, hc__cmp_name);
    c->stats.padding_bytes += padding;
    if (cp->rank == 0) c->stats.tensors = nt;
    if (c->dry_run) {
        note(c, "rank %u of %u: %zu tensors, %llu bytes stored (tile padding %llu, scales and "
             "zero points %llu)", cp->rank, cp->tp, nt, (unsigned long long)stored,
             (unsigned long long)padding, (unsigned long long)scales);
        goto out;
    }
    st = ensure_dir(dir, err);
    if (!st) st = copy_side_files(c, ck, dir, set, err);
    if (st) goto out;
    path = hc__asprintf("%s/%s", dir, HC_CONTAINER_FILE);
    if (!path) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    progress_state ps = {0};
    cJSON *tile = cJSON_CreateObject();
    cJSON_AddNumberToObject(tile, "tile_n", HC_TILE_N);
    cJSON_AddNumberToObject(tile, "tile_k", HC_TILE_K);
    cJSON_AddNumberToObject(tile, "align", HC_TILE_ALIGN);
    /* each MoE layer's structure, checked by the reader against these tensors */
    hc_moe_layer_info *moe = NULL;
    size_t nmoe = 0;
    st = hc__model_moe_layers(md, &moe, &nmoe, err);
    cJSON *moe_json = !st && nmoe ? hc__moe_record_json(moe, nmoe) : NULL;
    hc__moe_record_free(moe, nmoe);
    if (!st && nmoe && !moe_json) st = hc__fail(err, HC_NOMEM, "out of memory");
    if (st) {
        cJSON_Delete(tile);
        goto out;
    }
    hc_cw_options o = {
        .source_format = md->quant_method[0] ? md->quant_method : "safetensors",
        .target = c->repack ? "tiles" : "passthrough",
        .tp_rank = cp->rank,
        .tp_size = cp->tp,
        .config_json = ck->config_text,
        .config_len = ck->config_len,
        .tile_config = c->repack ? tile : NULL,
        .moe_layers = moe_json,
        .threads = c->threads,
        .progress = c->progress ? progress_cb : NULL,
        .progress_ctx = &ps,
        .set = set,
        .fault = c->out.fault,
    };
    st = hc__container_write(path, tv, nt, &o, err);
    cJSON_Delete(tile);
    cJSON_Delete(moe_json);
    if (st) goto out;
    for (size_t i = 0; i < md->n; i++) {
        c->stats.tiles += cp->stats[i].tiles;
        c->stats.mx_unfolded += cp->stats[i].mx_unfolded;
    }
out:
    for (size_t i = 0; params && i < md->n; i++) cJSON_Delete(params[i]);
    for (size_t i = 0; perm_names && i < md->n; i++) free(perm_names[i]);
    free(params);
    free(perm_names);
    free(jobs);
    free(tv);
    free(path);
    return st;
}

/* OUT exists, is ours for the run (the lock) and holds no temporary file a killed run left. */
static hc_status open_out(hc_converter *c, const char *out_dir, int *lock, hc_err *err) {
    size_t removed = 0;
    HC_TRY(ensure_dir(out_dir, err));
    HC_TRY(hc__out_lock(out_dir, lock, err));
    HC_TRY(hc__out_clean_stale(out_dir, &removed, err));
    if (removed)
        note(c, "note: removed %zu temporary file%s a killed convert left in '%s'", removed,
             removed == 1 ? "" : "s", out_dir);
    return HC_OK;
}

hc_status hc_converter_run(hc_converter *c, const char *src, const char *out_dir) {
    hc_err *err = &c->err;
    hc__err_clear(err);
    memset(&c->stats, 0, sizeof c->stats);
    free(c->report);
    c->report = NULL;
    c->report_len = 0;
    double t0 = now_s();
    hc_ckpt *ck = NULL;
    hc_model *md = NULL;
    unsigned tp = (unsigned)c->tp_size;
    hc_conv_plan *cps = calloc(tp, sizeof *cps);
    /* decodes kept for the writer (a dry run writes nothing: none) */
    hc_conv_decodes dec = {.budget = c->dry_run ? 0 : c->hold_bytes};
    char *roles = NULL;
    int lock = -1;
    hc_atomic_set set = {0};
    hc_status st = cps ? hc__ckpt_open_opts(src, &c->ckpt, &ck, err) : hc__fail(err, HC_NOMEM, "out of memory");
    if (!st) st = hc__ckpt_map(ck, err);
    if (!st) st = hc__model_open(ck, &md, err);
    /* (a dry run prints the plan alone: validate reports these) */
    for (size_t i = 0; !st && !c->dry_run && i < ck->nwarnings; i++) /* e.g. a side file left out */
        note(c, "warning: %s", ck->warnings[i]);
    if (st) goto out;
    if (tp > 1 && !c->repack) {
        st = hc__fail(err, HC_USAGE, "--tp %u needs a tiled target (sm90, sm80 or cpu), not "
                     "passthrough", tp);
        goto out;
    }
    roles = calloc(md->n ? md->n : 1, 1);
    dec.v = calloc(md->n ? md->n : 1, sizeof *dec.v);
    dec.n = md->n;
    if (!roles || !dec.v) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < md->n; i++) roles[i] = tp > 1 ? hc__tp_role(md->m[i].name) : 0;
    for (unsigned r = 0; r < tp; r++) {
        cps[r] = (hc_conv_plan){.md = md, .rank = r, .tp = tp, .role = roles, .dec = &dec};
        cps[r].plan = calloc(md->n ? md->n : 1, sizeof *cps[r].plan);
        cps[r].tiled = calloc(md->n ? md->n : 1, sizeof *cps[r].tiled);
        cps[r].stats = calloc(md->n ? md->n : 1, sizeof *cps[r].stats);
        if (!cps[r].plan || !cps[r].tiled || !cps[r].stats) {
            st = hc__fail(err, HC_NOMEM, "out of memory");
            goto out;
        }
    }
    st = hc__conv_plan_modules(md, cps, tp, c->threads, c->repack, err);
    if (!st && !c->dry_run) st = open_out(c, out_dir, &lock, err);
    for (unsigned r = 0; r < tp && !st; r++) {
        char *dir = tp > 1 ? hc__asprintf("%s/rank%u", out_dir, r) : hc__strdup(out_dir);
        if (c->dry_run && tp > 1) note(c, "rank %u:", r);
        st = dir ? write_rank(c, ck, md, &cps[r], dir, &set, err)
                 : hc__fail(err, HC_NOMEM, "out of memory");
        free(dir);
    }
    for (size_t i = 0; !st && i < set.n; i++)
        if (set.v[i].last) c->stats.container_bytes += set.v[i].size;
    size_t dropped = 0;
    if (!st && !c->dry_run) st = hc__out_drop_other_ranks(out_dir, tp, &dropped, err);
    if (dropped)
        note(c, "note: removed %zu container%s an earlier convert with another --tp left in '%s'",
             dropped, dropped == 1 ? "" : "s", out_dir);
    if (!st && !c->dry_run) st = hc__atomic_set_commit(&set, err);
out:
    hc__atomic_set_abort(&set);
    hc__out_unlock(lock);
    c->stats.seconds = now_s() - t0;
    c->stats.decodes = dec.decodes;
    c->stats.held_peak = dec.held_peak;
    c->stats.decodes_wasted = dec.wasted;
    hc__conv_decodes_free(&dec);
    for (unsigned r = 0; cps && r < tp; r++) {
        for (size_t i = 0; md && cps[r].plan && i < md->n; i++) hc__tile_plan_free(&cps[r].plan[i]);
        free(cps[r].plan);
        free(cps[r].tiled);
        free(cps[r].stats);
    }
    free(cps);
    free(roles);
    hc__model_free(md);
    hc__ckpt_close(ck);
    return st;
}
