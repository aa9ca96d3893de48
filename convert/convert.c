/* convert.c: the conversion pipeline. In this version every source tensor is stored as it
 * is (layout "source"); the non-weight files are copied so the output folder is servable. */
#include <errno.h>
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

struct hc_converter {
    int threads, dry_run, progress, tp_size;
    hc_conv_stats stats;
    hc_err err;
};

hc_converter *hc_converter_create(void) {
    hc_converter *c = calloc(1, sizeof *c);
    if (c) c->tp_size = 1;
    return c;
}

void hc_converter_free(hc_converter *c) { free(c); }

hc_status hc_converter_set(hc_converter *c, hc_conv_param p, int64_t v) {
    hc_err_clear(&c->err);
    switch (p) {
    case HC_CONV_THREADS: c->threads = v > 4096 ? 4096 : (int)(v < 0 ? 0 : v); return HC_OK;
    case HC_CONV_DRY_RUN: c->dry_run = v != 0; return HC_OK;
    case HC_CONV_PROGRESS: c->progress = v != 0; return HC_OK;
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

hc_status hc_converter_run(hc_converter *c, const char *src, const char *out_dir) {
    hc_err *err = &c->err;
    hc_err_clear(err);
    memset(&c->stats, 0, sizeof c->stats);
    double t0 = now_s();
    hc_ckpt *ck = NULL;
    hc_cw_tensor *tv = NULL;
    char *path = NULL;
    hc_status st = hc_ckpt_open(src, &ck, err);
    if (st) goto out;
    tv = calloc(ck->nentries ? ck->nentries : 1, sizeof *tv);
    if (!tv) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    if (!c->dry_run) {
        st = hc_ckpt_map(ck, err);
        if (st) goto out;
    }
    for (size_t i = 0; i < ck->nentries; i++) {
        const hc_ck_entry *e = &ck->entries[i];
        hc_cw_tensor *t = &tv[i];
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
        c->stats.source_bytes += t->size;
    }
    c->stats.tensors = ck->nentries;
    if (c->dry_run) goto out;
    st = ensure_dir(out_dir, err);
    if (st) goto out;
    path = hc_asprintf("%s/%s", out_dir, HC_CONTAINER_FILE);
    if (!path) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    progress_state ps = {0};
    const char *quant = NULL;
    const cJSON *qc = ck->config ? cJSON_GetObjectItemCaseSensitive(ck->config,
                                                                     "quantization_config")
                                 : NULL;
    if (qc) quant = hc_json_str(qc, "quant_method");
    hc_cw_options o = {
        .source_format = quant ? quant : "safetensors",
        .target = "passthrough",
        .tp_rank = 0,
        .tp_size = 1,
        .config_json = ck->config_text,
        .config_len = ck->config_len,
        .threads = c->threads,
        .progress = c->progress ? progress_cb : NULL,
        .progress_ctx = &ps,
    };
    st = hc_container_write(path, tv, ck->nentries, &o, err);
    if (st) goto out;
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
    hc_ckpt_close(ck);
    return st;
}
