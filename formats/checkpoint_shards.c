/* checkpoint_shards.c: the safetensors shards of a checkpoint and its shard index: opened
 * within the tensor bound, every tensor an entry sorted by name (a name in two shards is an
 * error), and the index's weight_map checked against the shards in both directions. */
#include <stdlib.h>

#include "checkpoint_int.h"
#include "jsonutil.h"

/* A shard the index names is a file of the checkpoint folder itself. */
static bool is_plain_file_name(const char *s) {
    return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '\\');
}

/* Opens root/file as one more shard, within the bound on the tensors of all shards. */
hc_status hc__ck_add_shard(hc_ckpt *c, const char *file, hc_err *err) {
    HC_TRY(hc__ck_check_member(c, file, err));
    char *path = hc__asprintf("%s/%s", c->root, file);
    if (!path) return hc__fail(err, HC_NOMEM, "out of memory");
    hc_st_file *f = NULL;
    hc_status st = hc__st_open(path, &f, err);
    free(path);
    if (st) return st;
    uint64_t total; /* a running total: summing every shard again per shard is quadratic */
    if (!hc__add_u64(c->ntensors, f->ntensors, &total)) total = UINT64_MAX;
    if (total > c->max_tensors) { /* every later pass costs memory per tensor */
        char esc[512];
        hc__escape(f->path, esc, sizeof esc);
        hc__st_close(f);
        return hc__fail(err, HC_INVALID, "'%s': the checkpoint holds more than %llu tensors with "
                       "this shard (%llu); no model needs that many (docs/inputs.md)", esc,
                       (unsigned long long)c->max_tensors, (unsigned long long)total);
    }
    hc_st_file **v = realloc(c->shards, (c->nshards + 1) * sizeof *v);
    if (!v) {
        hc__st_close(f);
        return hc__fail(err, HC_NOMEM, "out of memory");
    }
    c->shards = v;
    v[c->nshards++] = f;
    c->ntensors = total;
    return HC_OK;
}

int hc__ck_cmp_entry(const void *a, const void *b) {
    const hc_ck_entry *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    if (r) return r;
    return x->shard < y->shard ? -1 : x->shard > y->shard;
}

/* Collects every tensor of every shard, sorted by name; a name in two shards is an error. */
hc_status hc__ck_build_entries(hc_ckpt *c, hc_err *err) {
    size_t n = 0;
    for (size_t s = 0; s < c->nshards; s++) n += c->shards[s]->ntensors;
    c->entries = calloc(n ? n : 1, sizeof *c->entries);
    if (!c->entries) return hc__fail(err, HC_NOMEM, "out of memory");
    for (size_t s = 0; s < c->nshards; s++)
        for (size_t i = 0; i < c->shards[s]->ntensors; i++) {
            hc_ck_entry *e = &c->entries[c->nentries++];
            e->t = &c->shards[s]->tensors[i];
            e->name = e->t->name;
            e->shard = s;
        }
    qsort(c->entries, c->nentries, sizeof *c->entries, hc__ck_cmp_entry);
    for (size_t i = 1; i < c->nentries; i++)
        if (strcmp(c->entries[i].name, c->entries[i - 1].name) == 0) {
            char esc[512];
            return hc__fail(err, HC_INVALID, "tensor '%s' is stored in two shards: '%s' and '%s'",
                           hc__escape(c->entries[i].name, esc, sizeof esc),
                           hc__basename(c->shards[c->entries[i - 1].shard]->path),
                           hc__basename(c->shards[c->entries[i].shard]->path));
        }
    return HC_OK;
}

const hc_ck_entry *hc__ckpt_find(const hc_ckpt *c, const char *name) {
    return hc__find_by_name(c->entries, c->nentries, sizeof *c->entries, name);
}

/* Opens the shards an index names and checks both directions of the mapping. */
hc_status hc__ck_load_index(hc_ckpt *c, hc_err *err) {
    char *path = hc__asprintf("%s/%s", c->root, INDEX_NAME);
    if (!path) return hc__fail(err, HC_NOMEM, "out of memory");
    cJSON *idx = NULL;
    hc_status st = hc__json_load(path, &idx, NULL, NULL, err);
    char **files = NULL;
    size_t nfiles = 0;
    unsigned char *listed = NULL; /* per entry: named in the index */
    if (st) goto out;
    c->index_name = hc__strdup(INDEX_NAME);
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(idx, "weight_map");
    if (!cJSON_IsObject(wm)) {
        st = hc__fail(err, HC_INVALID, "'%s': missing or invalid \"weight_map\" object", path);
        goto out;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(idx, "metadata");
    const cJSON *ts = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "total_size")
                                           : NULL;
    if (ts && !hc__json_u64(ts, &c->index_total_size))
        hc__ck_warn(c, "'%s': metadata.total_size is not an integer in [0, 2^53)", INDEX_NAME);
    size_t n = (size_t)cJSON_GetArraySize(wm);
    files = calloc(n ? n : 1, sizeof *files);
    if (!files) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, wm) {
        char esc[512], fesc[512];
        if (!cJSON_IsString(it) || !is_plain_file_name(it->valuestring)) {
            st = hc__fail(err, HC_INVALID, "'%s': tensor '%s' maps to '%s': a shard must be a plain "
                         "file name in the checkpoint folder", path,
                         hc__escape(it->string, esc, sizeof esc),
                         cJSON_IsString(it) ? hc__escape(it->valuestring, fesc, sizeof fesc)
                                            : "(not a string)");
            goto out;
        }
        files[nfiles++] = it->valuestring;
    }
    qsort(files, nfiles, sizeof *files, hc__cmp_name);
    for (size_t i = 0; i < nfiles; i++) {
        if (i && strcmp(files[i], files[i - 1]) == 0) continue;
        st = hc__ck_add_shard(c, files[i], err);
        if (st == HC_NOTFOUND) {
            char fesc[512];
            hc__err_clear(err);
            st = hc__fail(err, HC_INVALID, "'%s': shard '%s' named in the index does not exist",
                         path, hc__escape(files[i], fesc, sizeof fesc));
        }
        if (st) goto out;
    }
    st = hc__ck_build_entries(c, err);
    if (st) goto out;
    listed = calloc(c->nentries ? c->nentries : 1, 1);
    if (!listed) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    /* index -> shards: every indexed tensor is in the shard the index names */
    cJSON_ArrayForEach(it, wm) {
        const hc_ck_entry *e = hc__ckpt_find(c, it->string);
        if (e) listed[e - c->entries] = 1;
        const char *where = e ? hc__basename(c->shards[e->shard]->path) : NULL;
        if (!e || strcmp(where, it->valuestring) != 0) {
            char esc[512], fesc[512];
            st = hc__fail(err, HC_INVALID, "'%s': tensor '%s' is listed in shard '%s', which lacks "
                         "it%s%s%s", path, hc__escape(it->string, esc, sizeof esc),
                         hc__escape(it->valuestring, fesc, sizeof fesc),
                         e ? " (it is stored in '" : "", e ? where : "", e ? "')" : "");
            goto out;
        }
    }
    /* shards -> index: every stored tensor is listed, i.e. was found (and marked) above */
    uint64_t total = 0;
    for (size_t i = 0; i < c->nentries; i++) {
        const hc_ck_entry *e = &c->entries[i];
        total += e->t->end - e->t->begin;
        if (!listed[i]) {
            char esc[512];
            st = hc__fail(err, HC_INVALID, "'%s': shard '%s' holds tensor '%s', which the index "
                         "does not list", path, hc__basename(c->shards[e->shard]->path),
                         hc__escape(e->name, esc, sizeof esc));
            goto out;
        }
    }
    if (ts && c->index_total_size != total)
        hc__ck_warn(c, "'%s': metadata.total_size is %llu but the shards hold %llu tensor bytes",
                    INDEX_NAME, (unsigned long long)c->index_total_size,
                    (unsigned long long)total);
out:
    free(listed);
    free(files);
    cJSON_Delete(idx);
    free(path);
    return st;
}

static int cmp_name_shard(const void *key, const void *elem) {
    return strcmp(key, hc__basename((*(hc_st_file *const *)elem)->path));
}

/* Whether name is one of the shards, which hc__ck_load_index opens in name order (a binary
 * search: a folder of many files and an index of many shards must not compare every pair). */
bool hc__ck_is_shard(const hc_ckpt *c, const char *name) {
    return c->nshards && bsearch(name, c->shards, c->nshards, sizeof *c->shards, cmp_name_shard);
}
