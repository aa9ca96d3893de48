/* checkpoint.c: opens a checkpoint folder, single safetensors file or archive; cross-checks
 * the shard index against the shards; reads config.json and the quantization configs. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonutil.h"

#define INDEX_NAME "model.safetensors.index.json"
#define MAX_JSON_FILE (256ull << 20)

static void warn(hc_ckpt *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(hc_ckpt *c, const char *fmt, ...) {
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

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Walks a parsed JSON value: duplicate keys at any depth are an error; integers beyond 2^53
 * cannot be held exactly by a double and are reported as warnings. */
static hc_status check_json_tree(const cJSON *v, const char *path, hc_ckpt *c, hc_err *err) {
    if (cJSON_IsObject(v)) {
        const char *dup = hc_json_duplicate_key(v);
        if (dup) {
            char esc[256];
            return hc_fail(err, HC_INVALID, "'%s': duplicate key '%s'", path,
                           hc_escape(dup, esc, sizeof esc));
        }
    }
    if (cJSON_IsNumber(v) && c && fabs(v->valuedouble) >= HC_JSON_INT_LIMIT &&
        v->valuedouble == floor(v->valuedouble) && v->string) {
        char esc[256];
        warn(c, "'%s': integer '%s' is beyond 2^53 and may not be exact when read as a number "
             "(kept verbatim in the container)", path, hc_escape(v->string, esc, sizeof esc));
    }
    const cJSON *it;
    if (cJSON_IsObject(v) || cJSON_IsArray(v))
        cJSON_ArrayForEach(it, v) HC_TRY(check_json_tree(it, path, c, err));
    return HC_OK;
}

hc_status hc_json_parse(const char *data, size_t n, const char *name, cJSON **out, hc_err *err) {
    *out = NULL;
    if (!hc_utf8_valid(data, n)) return hc_fail(err, HC_INVALID, "'%s' is not valid UTF-8", name);
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(data, n, &end, 0);
    if (!j) {
        unsigned long long pos = end && end >= data ? (unsigned long long)(end - data) : 0;
        return hc_fail(err, HC_INVALID, "'%s' is not valid JSON (error near byte %llu)", name, pos);
    }
    for (const char *p = end; p < data + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(j);
            return hc_fail(err, HC_INVALID, "'%s' has data after the JSON value", name);
        }
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return hc_fail(err, HC_INVALID, "'%s' is not a JSON object", name);
    }
    hc_status st = check_json_tree(j, name, NULL, err);
    if (st) {
        cJSON_Delete(j);
        return st;
    }
    *out = j;
    return HC_OK;
}

hc_status hc_json_load(const char *path, cJSON **out, char **text, size_t *len, hc_err *err) {
    char *data = NULL;
    size_t n = 0;
    *out = NULL;
    HC_TRY(hc_read_file(path, MAX_JSON_FILE, &data, &n, err));
    hc_status st = hc_json_parse(data, n, path, out, err);
    if (!st && text) *text = data, *len = n;
    else free(data);
    return st;
}

hc_status hc_cfg_int(const cJSON *cfg, const char *file, const char *key, int64_t lo, int64_t hi,
                     int64_t *out, hc_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v) return hc_fail(err, HC_INVALID, "'%s': missing '%s'", file, key);
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || d != floor(d) || d < (double)lo || d > (double)hi ||
        fabs(d) >= HC_JSON_INT_LIMIT)
        return hc_fail(err, HC_INVALID, "'%s': '%s' must be an integer in [%lld, %lld]", file, key,
                       (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return HC_OK;
}

static bool is_plain_file_name(const char *s) {
    return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '\\');
}

static bool is_weight_file(const char *n) {
    static const char *const ext[] = {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf",
                                      ".h5", ".msgpack", ".onnx", ".hconvert", ".pkl"};
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (ends_with(n, ext[i])) return true;
    return strcmp(n, INDEX_NAME) == 0;
}

/* Files hconvert reads (rather than copies): one of them that is not a regular file makes
 * the checkpoint unreadable. */
static bool is_read_file(const char *n) {
    return ends_with(n, ".safetensors") || !strcmp(n, INDEX_NAME) || !strcmp(n, "config.json") ||
           !strcmp(n, "quantize_config.json") || !strcmp(n, "quant_config.json");
}

/* p lies below the folder dir (both canonical). */
static bool is_below(const char *dir, const char *p) {
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') return p[0] == '/' && p[1];
    return strncmp(p, dir, n) == 0 && p[n] == '/';
}

/* A link in the checkpoint folder must resolve below the folder: one that leaves it would
 * read, and convert would copy into OUT, a file from elsewhere. */
static hc_status check_link(const hc_ckpt *c, const char *path, hc_err *err) {
    char target[PATH_MAX], pesc[512], tesc[512], resc[512], fesc[512];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0) return hc_fail(err, HC_IO, "cannot read link '%s': %s", path, strerror(errno));
    target[n] = 0;
    char *real = realpath(path, NULL);
    hc_status st = HC_OK;
    if (!real)
        st = hc_fail(err, HC_INVALID, "link '%s' points to '%s', which cannot be resolved: %s",
                     hc_escape(path, pesc, sizeof pesc), hc_escape(target, tesc, sizeof tesc),
                     strerror(errno));
    else if (!is_below(c->root_real, real) && !(c->cache_blobs && is_below(c->cache_blobs, real)))
        st = hc_fail(err, HC_INVALID, "link '%s' points to '%s' ('%s'), outside the checkpoint "
                     "folder '%s'; links must stay inside it (copy the files in, e.g. cp -rL)",
                     hc_escape(path, pesc, sizeof pesc), hc_escape(target, tesc, sizeof tesc),
                     hc_escape(real, resc, sizeof resc),
                     hc_escape(c->root_real, fesc, sizeof fesc));
    free(real);
    return st;
}

/* What path leads to (links followed) must be a regular file, so that a FIFO or a device
 * never blocks an open; hc_open_regular names what it is instead, without blocking. */
static hc_status check_regular(const char *path, hc_err *err) {
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) return HC_OK;
    int fd;
    HC_TRY(hc_open_regular(path, &fd, NULL, err));
    close(fd); /* it became a regular file meanwhile */
    return HC_OK;
}

/* Checks root/name before it is read: a link must stay inside the checkpoint folder (when
 * there is one), the file must be regular. HC_NOTFOUND when nothing has that name. */
static hc_status check_member(const hc_ckpt *c, const char *name, hc_err *err) {
    char *path = hc_asprintf("%s/%s", c->root, name);
    if (!path) return hc_fail(err, HC_NOMEM, "out of memory");
    struct stat sb;
    hc_status st = HC_OK;
    if (lstat(path, &sb) != 0)
        st = hc_fail(err, errno == ENOENT ? HC_NOTFOUND : HC_IO, "cannot open '%s': %s", path,
                     strerror(errno));
    else if (S_ISLNK(sb.st_mode) && c->root_real)
        st = check_link(c, path, err);
    if (!st) st = check_regular(path, err);
    free(path);
    return st;
}

/* A file hconvert reads that is not usable is an error; a side file is left out with a
 * warning (copying a FIFO, or a link to nothing, has no meaning). */
static hc_status leave_out(hc_ckpt *c, const char *name, const hc_err *e, hc_err *err) {
    if (is_read_file(name)) return hc_fail(err, e->code, "%s", e->msg);
    warn(c, "%s: left out of the checkpoint (not read, not copied)", e->msg);
    return HC_OK;
}

/* Whether the entry path of the checkpoint folder is listed: folders (and links to folders)
 * are not; links must stay inside the folder; a dangling link or a file that is not regular
 * is an error when hconvert reads it and is otherwise left out with a warning. */
static hc_status list_entry(hc_ckpt *c, const char *name, const char *path, bool *listed,
                            hc_err *err) {
    struct stat sb;
    hc_err e = {0};
    *listed = false;
    if (lstat(path, &sb) != 0) return HC_OK; /* gone since readdir */
    if (S_ISLNK(sb.st_mode)) {
        bool dangling = stat(path, &sb) != 0;
        if (!dangling && S_ISDIR(sb.st_mode)) return HC_OK;
        if (dangling && check_link(c, path, &e)) return leave_out(c, name, &e, err);
        HC_TRY(check_link(c, path, err));
    }
    if (S_ISDIR(sb.st_mode)) return HC_OK;
    if (check_regular(path, &e)) return leave_out(c, name, &e, err);
    *listed = true;
    return HC_OK;
}

/* Lists the files of the checkpoint folder (not hidden), sorted (see list_entry). */
static hc_status list_dir(hc_ckpt *c, char ***names, size_t *count, hc_err *err) {
    const char *dir = c->root;
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return hc_fail(err, HC_IO, "cannot open folder '%s': %s", dir, strerror(errno));
    hc_status st = HC_OK;
    struct dirent *de;
    char **v = NULL;
    size_t n = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *p = hc_asprintf("%s/%s", dir, de->d_name);
        bool listed = false;
        st = p ? list_entry(c, de->d_name, p, &listed, err)
               : hc_fail(err, HC_NOMEM, "out of memory");
        free(p);
        if (st) break;
        if (!listed) continue;
        char **nv = realloc(v, (n + 1) * sizeof *nv);
        char *dup = hc_strdup(de->d_name);
        if (!nv || !dup) {
            free(dup);
            if (nv) v = nv;
            st = hc_fail(err, HC_NOMEM, "out of memory");
            break;
        }
        v = nv;
        v[n++] = dup;
    }
    closedir(d);
    if (v) qsort(v, n, sizeof *v, cmp_str_ptr);
    *names = v;
    *count = n;
    return st;
}

static void free_names(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static hc_status add_shard(hc_ckpt *c, const char *file, hc_err *err) {
    HC_TRY(check_member(c, file, err));
    char *path = hc_asprintf("%s/%s", c->root, file);
    if (!path) return hc_fail(err, HC_NOMEM, "out of memory");
    hc_st_file *f = NULL;
    hc_status st = hc_st_open(path, &f, err);
    free(path);
    if (st) return st;
    uint64_t total; /* a running total: summing every shard again per shard is quadratic */
    if (!hc_add_u64(c->ntensors, f->ntensors, &total)) total = UINT64_MAX;
    if (total > c->max_tensors) { /* every later pass costs memory per tensor */
        char esc[512];
        hc_escape(f->path, esc, sizeof esc);
        hc_st_close(f);
        return hc_fail(err, HC_INVALID, "'%s': the checkpoint holds more than %llu tensors with "
                       "this shard (%llu); no model needs that many (docs/inputs.md)", esc,
                       (unsigned long long)c->max_tensors, (unsigned long long)total);
    }
    hc_st_file **v = realloc(c->shards, (c->nshards + 1) * sizeof *v);
    if (!v) {
        hc_st_close(f);
        return hc_fail(err, HC_NOMEM, "out of memory");
    }
    c->shards = v;
    v[c->nshards++] = f;
    c->ntensors = total;
    return HC_OK;
}

static int cmp_entry(const void *a, const void *b) {
    const hc_ck_entry *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    if (r) return r;
    return x->shard < y->shard ? -1 : x->shard > y->shard;
}

/* Collects every tensor of every shard, sorted by name; a name in two shards is an error. */
static hc_status build_entries(hc_ckpt *c, hc_err *err) {
    size_t n = 0;
    for (size_t s = 0; s < c->nshards; s++) n += c->shards[s]->ntensors;
    c->entries = calloc(n ? n : 1, sizeof *c->entries);
    if (!c->entries) return hc_fail(err, HC_NOMEM, "out of memory");
    for (size_t s = 0; s < c->nshards; s++)
        for (size_t i = 0; i < c->shards[s]->ntensors; i++) {
            hc_ck_entry *e = &c->entries[c->nentries++];
            e->t = &c->shards[s]->tensors[i];
            e->name = e->t->name;
            e->shard = s;
        }
    qsort(c->entries, c->nentries, sizeof *c->entries, cmp_entry);
    for (size_t i = 1; i < c->nentries; i++)
        if (strcmp(c->entries[i].name, c->entries[i - 1].name) == 0) {
            char esc[512];
            return hc_fail(err, HC_INVALID, "tensor '%s' is stored in two shards: '%s' and '%s'",
                           hc_escape(c->entries[i].name, esc, sizeof esc),
                           hc_basename(c->shards[c->entries[i - 1].shard]->path),
                           hc_basename(c->shards[c->entries[i].shard]->path));
        }
    return HC_OK;
}

const hc_ck_entry *hc_ckpt_find(const hc_ckpt *c, const char *name) {
    return hc_find_by_name(c->entries, c->nentries, sizeof *c->entries, name);
}

/* Opens the shards an index names and checks both directions of the mapping. */
static hc_status load_index(hc_ckpt *c, hc_err *err) {
    char *path = hc_asprintf("%s/%s", c->root, INDEX_NAME);
    if (!path) return hc_fail(err, HC_NOMEM, "out of memory");
    cJSON *idx = NULL;
    hc_status st = hc_json_load(path, &idx, NULL, NULL, err);
    char **files = NULL;
    size_t nfiles = 0;
    unsigned char *listed = NULL; /* per entry: named in the index */
    if (st) goto out;
    c->index_name = hc_strdup(INDEX_NAME);
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(idx, "weight_map");
    if (!cJSON_IsObject(wm)) {
        st = hc_fail(err, HC_INVALID, "'%s': missing or invalid \"weight_map\" object", path);
        goto out;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(idx, "metadata");
    const cJSON *ts = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "total_size")
                                           : NULL;
    if (ts && !hc_json_u64(ts, &c->index_total_size))
        warn(c, "'%s': metadata.total_size is not an integer in [0, 2^53)", INDEX_NAME);
    size_t n = (size_t)cJSON_GetArraySize(wm);
    files = calloc(n ? n : 1, sizeof *files);
    if (!files) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, wm) {
        char esc[512], fesc[512];
        if (!cJSON_IsString(it) || !is_plain_file_name(it->valuestring)) {
            st = hc_fail(err, HC_INVALID, "'%s': tensor '%s' maps to '%s': a shard must be a plain "
                         "file name in the checkpoint folder", path,
                         hc_escape(it->string, esc, sizeof esc),
                         cJSON_IsString(it) ? hc_escape(it->valuestring, fesc, sizeof fesc)
                                            : "(not a string)");
            goto out;
        }
        files[nfiles++] = it->valuestring;
    }
    qsort(files, nfiles, sizeof *files, cmp_str_ptr);
    for (size_t i = 0; i < nfiles; i++) {
        if (i && strcmp(files[i], files[i - 1]) == 0) continue;
        st = add_shard(c, files[i], err);
        if (st == HC_NOTFOUND) {
            char fesc[512];
            hc_err_clear(err);
            st = hc_fail(err, HC_INVALID, "'%s': shard '%s' named in the index does not exist",
                         path, hc_escape(files[i], fesc, sizeof fesc));
        }
        if (st) goto out;
    }
    st = build_entries(c, err);
    if (st) goto out;
    listed = calloc(c->nentries ? c->nentries : 1, 1);
    if (!listed) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    /* index -> shards: every indexed tensor is in the shard the index names */
    cJSON_ArrayForEach(it, wm) {
        const hc_ck_entry *e = hc_ckpt_find(c, it->string);
        if (e) listed[e - c->entries] = 1;
        const char *where = e ? hc_basename(c->shards[e->shard]->path) : NULL;
        if (!e || strcmp(where, it->valuestring) != 0) {
            char esc[512], fesc[512];
            st = hc_fail(err, HC_INVALID, "'%s': tensor '%s' is listed in shard '%s', which lacks "
                         "it%s%s%s", path, hc_escape(it->string, esc, sizeof esc),
                         hc_escape(it->valuestring, fesc, sizeof fesc),
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
            st = hc_fail(err, HC_INVALID, "'%s': shard '%s' holds tensor '%s', which the index "
                         "does not list", path, hc_basename(c->shards[e->shard]->path),
                         hc_escape(e->name, esc, sizeof esc));
            goto out;
        }
    }
    if (ts && c->index_total_size != total)
        warn(c, "'%s': metadata.total_size is %llu but the shards hold %llu tensor bytes",
             INDEX_NAME, (unsigned long long)c->index_total_size, (unsigned long long)total);
out:
    free(listed);
    free(files);
    cJSON_Delete(idx);
    free(path);
    return st;
}

/* Loads root/name when it exists (*out stays NULL when it does not). */
static hc_status load_json_member(hc_ckpt *c, const char *name, cJSON **out, char **text,
                                  size_t *len, hc_err *err) {
    hc_status st = check_member(c, name, err);
    if (st == HC_NOTFOUND) {
        hc_err_clear(err);
        return HC_OK;
    }
    if (st) return st;
    char *path = hc_asprintf("%s/%s", c->root, name);
    st = path ? hc_json_load(path, out, text, len, err) : hc_fail(err, HC_NOMEM, "out of memory");
    free(path);
    return st;
}

static hc_status load_configs(hc_ckpt *c, hc_err *err) {
    HC_TRY(load_json_member(c, "config.json", &c->config, &c->config_text, &c->config_len, err));
    if (c->config) HC_TRY(check_json_tree(c->config, "config.json", c, err));
    static const char *const qnames[] = {"quantize_config.json", "quant_config.json"};
    for (size_t i = 0; i < 2 && !c->quant_config; i++) {
        HC_TRY(load_json_member(c, qnames[i], &c->quant_config, NULL, NULL, err));
        if (c->quant_config && !(c->quant_config_name = hc_strdup(qnames[i])))
            return hc_fail(err, HC_NOMEM, "out of memory");
    }
    return HC_OK;
}

/* The canonical path of the checkpoint folder, that links are checked against; for a
 * snapshot of the Hugging Face cache (HUB/models--ORG--NAME/snapshots/REV, whose files link to
 * ../../blobs/HASH) also that repository's blobs folder. */
static hc_status set_root_real(hc_ckpt *c, hc_err *err) {
    free(c->root_real);
    free(c->cache_blobs);
    c->cache_blobs = NULL;
    c->root_real = realpath(c->root, NULL);
    if (!c->root_real)
        return hc_fail(err, HC_IO, "cannot resolve '%s': %s", c->root, strerror(errno));
    const char *rev = strrchr(c->root_real, '/');
    size_t up = rev ? (size_t)(rev - c->root_real) : 0; /* the folder holding REV */
    if (up >= 10 && !strncmp(c->root_real + up - 10, "/snapshots", 10)) {
        char *blobs = hc_asprintf("%.*s/blobs", (int)(up - 10), c->root_real);
        c->cache_blobs = blobs ? realpath(blobs, NULL) : NULL;
        free(blobs);
    }
    return HC_OK;
}

static int cmp_name_shard(const void *key, const void *elem) {
    return strcmp(key, hc_basename((*(hc_st_file *const *)elem)->path));
}

/* Whether name is one of the shards, which load_index opens in name order (a binary search:
 * a folder of many files and an index of many shards must not compare every pair). */
static bool is_shard(const hc_ckpt *c, const char *name) {
    return c->nshards && bsearch(name, c->shards, c->nshards, sizeof *c->shards, cmp_name_shard);
}

static hc_status open_folder(hc_ckpt *c, hc_err *err) {
    char **names = NULL;
    size_t n = 0;
    hc_status st = set_root_real(c, err);
    if (!st) st = list_dir(c, &names, &n, err);
    if (st) goto out;
    bool has_index = false, has_pickle = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], INDEX_NAME) == 0) has_index = true;
        if (ends_with(names[i], ".bin") || ends_with(names[i], ".pt") ||
            ends_with(names[i], ".pth"))
            has_pickle = true;
    }
    if (has_index) {
        st = load_index(c, err);
        if (st) goto out;
        for (size_t i = 0; i < n; i++)
            if (ends_with(names[i], ".safetensors") && !is_shard(c, names[i]))
                warn(c, "'%s' is not named in %s and is ignored", names[i], INDEX_NAME);
    } else {
        for (size_t i = 0; i < n; i++)
            if (ends_with(names[i], ".safetensors")) {
                st = add_shard(c, names[i], err);
                if (st) goto out;
            }
        if (c->nshards == 0) {
            st = hc_fail(err, HC_INVALID, "'%s': no .safetensors files%s", c->src,
                         has_pickle ? " (pickle .bin/.pt checkpoints are not read: convert them "
                                      "to safetensors first)" : "");
            goto out;
        }
        st = build_entries(c, err);
        if (st) goto out;
    }
    st = load_configs(c, err);
    if (st) goto out;
    for (size_t i = 0; i < n; i++) {
        if (is_weight_file(names[i])) continue;
        c->extra_files = realloc(c->extra_files, (c->nextra + 1) * sizeof(char *));
        hc_file_id *ids = realloc(c->extra_ids, (c->nextra + 1) * sizeof *ids);
        if (ids) c->extra_ids = ids;
        if (!c->extra_files || !ids) {
            st = hc_fail(err, HC_NOMEM, "out of memory");
            goto out;
        }
        char *path = hc_asprintf("%s/%s", c->root, names[i]);
        struct stat sb;
        if (!path || stat(path, &sb) != 0) {
            st = path ? hc_fail(err, HC_IO, "cannot stat '%s': %s", path, strerror(errno))
                      : hc_fail(err, HC_NOMEM, "out of memory");
            free(path);
            goto out;
        }
        free(path);
        ids[c->nextra] = (hc_file_id){(uint64_t)sb.st_dev, (uint64_t)sb.st_ino};
        c->extra_files[c->nextra++] = names[i];
        names[i] = NULL;
    }
out:
    free_names(names, n);
    return st;
}

/* After extraction the checkpoint is the first folder that holds files, descending through
 * folders that hold exactly one folder and nothing else. Hidden names (macOS tar's "._x"
 * files; folders list no hidden file either) and zip's __MACOSX folder do not count. */
static hc_status find_archive_root(hc_ckpt *c, hc_err *err) {
    for (int depth = 0; depth < 8; depth++) {
        DIR *d = opendir(c->root);
        if (!d) return hc_fail(err, HC_IO, "cannot open '%s': %s", c->root, strerror(errno));
        struct dirent *de;
        int files = 0, dirs = 0;
        char sub[256] = "";
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.' || !strcmp(de->d_name, "__MACOSX")) continue;
            struct stat sb;
            if (de->d_type == DT_DIR ||
                (de->d_type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &sb,
                                                     AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISDIR(sb.st_mode))) {
                dirs++;
                snprintf(sub, sizeof sub, "%s", de->d_name);
            } else files++;
        }
        closedir(d);
        if (files > 0 || dirs != 1) return HC_OK;
        char *next = hc_asprintf("%s/%s", c->root, sub);
        if (!next) return hc_fail(err, HC_NOMEM, "out of memory");
        free(c->root);
        c->root = next;
    }
    return HC_OK;
}

/* A container written by convert, read back as a checkpoint: its tensors become entries
 * (source layouts in the source's own encoding; tiled modules are decoded by the model's
 * HC_FMT_TILES decoder), its header's config.json the config. */
static hc_status open_container(hc_ckpt *c, const char *file, hc_err *err) {
    char msg[HC_ERRMSG_MAX];
    hc_status st = hc_container_open(file, 0, &c->container, msg, sizeof msg);
    if (st) return hc_fail(err, st, "%s", msg);
    c->is_container = 1;
    size_t n = hc_container_tensor_count(c->container);
    c->ct_tensors = calloc(n ? n : 1, sizeof *c->ct_tensors);
    c->entries = calloc(n ? n : 1, sizeof *c->entries);
    c->owned = calloc(n ? n : 1, sizeof *c->owned);
    if (!c->ct_tensors || !c->entries || !c->owned) return hc_fail(err, HC_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const hc_tensor_info *ti = hc_container_tensor(c->container, i);
        hc_st_tensor *t = &c->ct_tensors[i];
        t->name = hc_strdup(ti->name);
        if (!t->name) return hc_fail(err, HC_NOMEM, "out of memory");
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
    qsort(c->entries, c->nentries, sizeof *c->entries, cmp_entry);
    for (size_t i = 1; i < c->nentries; i++)
        if (!strcmp(c->entries[i].name, c->entries[i - 1].name))
            return hc_fail(err, HC_INVALID, "container '%s': tensor '%s' appears twice", file,
                           c->entries[i].name);
    /* the folder's configs (convert copies config.json and the legacy quantization configs
     * beside the container), then the header's verbatim config.json over the folder's */
    st = set_root_real(c, err);
    if (!st) st = load_configs(c, err);
    size_t hl = 0;
    cJSON *hdr = st ? NULL : cJSON_ParseWithLength(hc_container_header_json(c->container, &hl), hl);
    const char *cfg = hdr ? hc_json_str(cJSON_GetObjectItemCaseSensitive(hdr, "model"),
                                        "config_json") : NULL;
    if (cfg) {
        cJSON_Delete(c->config);
        free(c->config_text);
        c->config = NULL;
        c->config_len = strlen(cfg);
        c->config_text = hc_strdup(cfg);
        st = c->config_text ? hc_json_parse(cfg, c->config_len, "config.json (in the container)",
                                            &c->config, err)
                            : hc_fail(err, HC_NOMEM, "out of memory");
    }
    cJSON_Delete(hdr);
    return st;
}

hc_status hc_ckpt_open(const char *src, hc_ckpt **out, hc_err *err) {
    return hc_ckpt_open_opts(src, NULL, out, err);
}

hc_status hc_ckpt_open_opts(const char *src, const hc_ckpt_opts *o, hc_ckpt **out, hc_err *err) {
    *out = NULL;
    hc_ckpt *c = calloc(1, sizeof *c);
    if (!c) return hc_fail(err, HC_NOMEM, "out of memory");
    hc_status st = HC_OK;
    c->src = hc_strdup(src);
    c->max_tensors = o && o->max_tensors ? o->max_tensors : HC_CKPT_MAX_TENSORS;
    struct stat sb;
    if (!c->src) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    if (stat(src, &sb) != 0) {
        st = hc_fail(err, HC_IO, "cannot open '%s': %s", src, strerror(errno));
        goto out;
    }
    char *ct = hc_container_locate(src);
    if (ct) {
        const char *slash = strrchr(ct, '/');
        c->root = slash ? strndup(ct, (size_t)(slash - ct)) : hc_strdup(".");
        st = c->root ? open_container(c, ct, err) : hc_fail(err, HC_NOMEM, "out of memory");
        free(ct);
    } else if (S_ISDIR(sb.st_mode)) {
        c->root = hc_strdup(src);
        st = c->root ? open_folder(c, err) : hc_fail(err, HC_NOMEM, "out of memory");
    } else if (!S_ISREG(sb.st_mode)) {
        st = hc_fail(err, HC_INVALID, "'%s' is neither a folder nor a regular file", src);
    } else if (ends_with(src, ".safetensors")) {
        c->is_single_file = 1;
        const char *slash = strrchr(src, '/');
        c->root = slash ? strndup(src, (size_t)(slash - src)) : hc_strdup(".");
        st = add_shard(c, hc_basename(src), err);
        if (!st) st = build_entries(c, err);
    } else {
        c->is_archive = 1;
        const char *tmp = getenv("TMPDIR");
        c->tmpdir = hc_asprintf("%s/hconvert-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!c->tmpdir || !mkdtemp(c->tmpdir)) {
            st = hc_fail(err, HC_IO, "cannot create a temporary folder: %s", strerror(errno));
            free(c->tmpdir);
            c->tmpdir = NULL;
            goto out;
        }
        c->root = hc_strdup(c->tmpdir);
        st = hc_archive_extract(src, c->tmpdir, o, err);
        if (!st) st = find_archive_root(c, err);
        if (!st) st = open_folder(c, err);
    }
out:
    if (st) {
        hc_err_prefix(err, "checkpoint '%s'", src);
        hc_ckpt_close(c);
    } else {
        *out = c;
    }
    return st;
}

hc_status hc_ckpt_map(hc_ckpt *c, hc_err *err) {
    for (size_t s = 0; s < c->nshards; s++) HC_TRY(hc_st_map(c->shards[s], err));
    return HC_OK;
}

const void *hc_ckpt_data(const hc_ckpt *c, const hc_ck_entry *e) {
    return e->data ? e->data : hc_st_data(c->shards[e->shard], e->t);
}

void hc_ckpt_release(const hc_ckpt *c, const hc_ck_entry *e) {
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

void hc_ckpt_close(hc_ckpt *c) {
    if (!c) return;
    for (size_t s = 0; s < c->nshards; s++) hc_st_close(c->shards[s]);
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
    if (c->tmpdir) hc_remove_tree(c->tmpdir);
    free(c->tmpdir);
    free(c->root);
    free(c->root_real);
    free(c->cache_blobs);
    free(c->src);
    free(c);
}
