/* checkpoint.c: opens a checkpoint from what the user names (a folder, a single safetensors
 * file, a container written by convert, an archive) and closes it; the parts are in
 * checkpoint_files.c (folder listing, link checks), checkpoint_shards.c (shards, index),
 * checkpoint_json.c (configs) and checkpoint_archive.c (extraction). */
#include "checkpoint.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_int.h"
#include "jsonutil.h"

void hc__ck_warn(hc_ckpt *c, const char *fmt, ...) {
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    char **w = msg ? realloc(c->warnings, (c->nwarnings + 1) * sizeof *w) : NULL;
    if (!w) {
        free(msg);
        return;
    }
    c->warnings = w;
    w[c->nwarnings++] = msg;
}

static void free_names(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* A checkpoint folder: its shards (those the index names when there is one), its configs and
 * its side files. */
static hc_status open_folder(hc_ckpt *c, hc_err *err) {
    char **names = NULL;
    size_t n = 0;
    hc_status st = hc__ck_set_root_real(c, err);
    if (!st) st = hc__ck_list_dir(c, &names, &n, err);
    if (st) goto out;
    bool has_index = false, has_pickle = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], INDEX_NAME) == 0) has_index = true;
        if (hc__ends_with(names[i], ".bin") || hc__ends_with(names[i], ".pt") ||
            hc__ends_with(names[i], ".pth"))
            has_pickle = true;
    }
    if (has_index) {
        st = hc__ck_load_index(c, err);
        if (st) goto out;
        for (size_t i = 0; i < n; i++)
            if (hc__ends_with(names[i], ".safetensors") && !hc__ck_is_shard(c, names[i]))
                hc__ck_warn(c, "'%s' is not named in %s and is ignored", names[i], INDEX_NAME);
    } else {
        for (size_t i = 0; i < n; i++)
            if (hc__ends_with(names[i], ".safetensors")) {
                st = hc__ck_add_shard(c, names[i], err);
                if (st) goto out;
            }
        if (c->nshards == 0) {
            st = hc__fail(err, HC_INVALID, "'%s': no .safetensors files%s", c->src,
                         has_pickle ? " (pickle .bin/.pt checkpoints are not read: convert them "
                                      "to safetensors first)" : "");
            goto out;
        }
        st = hc__ck_build_entries(c, err);
        if (st) goto out;
    }
    st = hc__ck_load_configs(c, err);
    if (st) goto out;
    st = hc__ck_keep_side_files(c, names, n, err);
out:
    free_names(names, n);
    return st;
}

/* A container written by convert, read back as a checkpoint: its tensors become entries
 * (source layouts in the source's own encoding; tiled modules are decoded by the model's
 * HC_FMT_TILES decoder), its header's config.json the config. */
static hc_status open_container(hc_ckpt *c, const char *file, hc_err *err) {
    char msg[HC_ERRMSG_MAX];
    hc_status st = hc_container_open(file, 0, &c->container, msg, sizeof msg);
    if (st) return hc__fail(err, st, "%s", msg);
    c->is_container = 1;
    size_t n = hc_container_tensor_count(c->container);
    c->ct_tensors = calloc(n ? n : 1, sizeof *c->ct_tensors);
    c->entries = calloc(n ? n : 1, sizeof *c->entries);
    c->owned = calloc(n ? n : 1, sizeof *c->owned);
    if (!c->ct_tensors || !c->entries || !c->owned) return hc__fail(err, HC_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const hc_tensor_info *ti = hc_container_tensor(c->container, i);
        hc_st_tensor *t = &c->ct_tensors[i];
        t->name = hc__strdup(ti->name);
        if (!t->name) return hc__fail(err, HC_NOMEM, "out of memory");
        t->dtype = ti->dtype;
        t->ndim = ti->ndim;
        memcpy(t->shape, ti->shape, sizeof t->shape);
        t->numel = 1;
        for (int d = 0; d < t->ndim; d++) t->numel *= ti->shape[d];
        t->end = ti->raw_length;
        const void *data = NULL;
        HC_TRY(hc_container_tensor_data(c->container, ti, &data, &c->owned[c->nowned]));
        if (c->owned[c->nowned]) c->nowned++;
        c->entries[i] = (hc_ck_entry){.name = t->name, .t = t, .data = data, .info = ti};
        c->nentries++;
    }
    qsort(c->entries, c->nentries, sizeof *c->entries, hc__ck_cmp_entry);
    for (size_t i = 1; i < c->nentries; i++)
        if (!strcmp(c->entries[i].name, c->entries[i - 1].name))
            return hc__fail(err, HC_INVALID, "container '%s': tensor '%s' appears twice", file,
                           c->entries[i].name);
    /* the folder's configs (convert copies config.json and the legacy quantization configs
     * beside the container), then the header's verbatim config.json over the folder's */
    st = hc__ck_set_root_real(c, err);
    if (!st) st = hc__ck_load_configs(c, err);
    size_t hl = 0;
    cJSON *hdr = st ? NULL : cJSON_ParseWithLength(hc_container_header_json(c->container, &hl), hl);
    const char *cfg = hdr ? hc__json_str(cJSON_GetObjectItemCaseSensitive(hdr, "model"),
                                        "config_json") : NULL;
    if (cfg) {
        cJSON_Delete(c->config);
        free(c->config_text);
        c->config = NULL;
        c->config_len = strlen(cfg);
        c->config_text = hc__strdup(cfg);
        st = c->config_text ? hc__json_parse(cfg, c->config_len, "config.json (in the container)",
                                            &c->config, err)
                            : hc__fail(err, HC_NOMEM, "out of memory");
    }
    cJSON_Delete(hdr);
    return st;
}

hc_status hc__ckpt_open(const char *src, hc_ckpt **out, hc_err *err) {
    return hc__ckpt_open_opts(src, NULL, out, err);
}

hc_status hc__ckpt_open_opts(const char *src, const hc_ckpt_opts *o, hc_ckpt **out, hc_err *err) {
    *out = NULL;
    hc_ckpt *c = calloc(1, sizeof *c);
    if (!c) return hc__fail(err, HC_NOMEM, "out of memory");
    hc_status st = HC_OK;
    c->src = hc__strdup(src);
    c->max_tensors = o && o->max_tensors ? o->max_tensors : HC_CKPT_MAX_TENSORS;
    struct stat sb;
    if (!c->src) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    if (stat(src, &sb) != 0) {
        st = hc__fail(err, HC_IO, "cannot open '%s': %s", src, strerror(errno));
        goto out;
    }
    char *ct = hc_container_locate(src);
    if (ct) {
        const char *slash = strrchr(ct, '/');
        c->root = slash ? strndup(ct, (size_t)(slash - ct)) : hc__strdup(".");
        st = c->root ? open_container(c, ct, err) : hc__fail(err, HC_NOMEM, "out of memory");
        free(ct);
    } else if (S_ISDIR(sb.st_mode)) {
        c->root = hc__strdup(src);
        st = c->root ? open_folder(c, err) : hc__fail(err, HC_NOMEM, "out of memory");
    } else if (!S_ISREG(sb.st_mode)) {
        st = hc__fail(err, HC_INVALID, "'%s' is neither a folder nor a regular file", src);
    } else if (hc__ends_with(src, ".safetensors")) {
        c->is_single_file = 1;
        const char *slash = strrchr(src, '/');
        c->root = slash ? strndup(src, (size_t)(slash - src)) : hc__strdup(".");
        st = hc__ck_add_shard(c, hc__basename(src), err);
        if (!st) st = hc__ck_build_entries(c, err);
    } else {
        st = hc__ck_extract(c, src, o, err);
        if (!st) st = open_folder(c, err);
    }
out:
    if (st) {
        hc__err_prefix(err, "checkpoint '%s'", src);
        hc__ckpt_close(c);
    } else {
        *out = c;
    }
    return st;
}

hc_status hc__ckpt_map(hc_ckpt *c, hc_err *err) {
    for (size_t s = 0; s < c->nshards; s++) HC_TRY(hc__st_map(c->shards[s], err));
    return HC_OK;
}

const void *hc__ckpt_data(const hc_ckpt *c, const hc_ck_entry *e) {
    return e->data ? e->data : hc__st_data(c->shards[e->shard], e->t);
}

void hc__ckpt_release(const hc_ckpt *c, const hc_ck_entry *e) {
    if (e->data) return;
    const hc_st_file *f = c->shards[e->shard];
    if (!f->map) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)(f->map + f->data_start + e->t->begin);
    uintptr_t b = (uintptr_t)(f->map + f->data_start + e->t->end);
    a = (a + page - 1) & ~(page - 1);
    b &= ~(page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

void hc__ckpt_close(hc_ckpt *c) {
    if (!c) return;
    for (size_t s = 0; s < c->nshards; s++) hc__st_close(c->shards[s]);
    free(c->shards);
    for (size_t i = 0; c->ct_tensors && i < hc_container_tensor_count(c->container); i++)
        free(c->ct_tensors[i].name);
    free(c->ct_tensors);
    for (size_t i = 0; i < c->nowned; i++) free(c->owned[i]);
    free(c->owned);
    hc_container_free(c->container);
    free(c->entries);
    cJSON_Delete(c->config);
    cJSON_Delete(c->quant_config);
    free(c->config_text);
    free(c->quant_config_name);
    free(c->index_name);
    free_names(c->extra_files, c->nextra);
    free(c->extra_ids);
    free_names(c->warnings, c->nwarnings);
    if (c->tmpdir) hc__remove_tree(c->tmpdir);
    free(c->tmpdir);
    free(c->root);
    free(c->root_real);
    free(c->cache_blobs);
    free(c->src);
    free(c);
}
