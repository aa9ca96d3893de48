/* inspect.c: reads only headers (safetensors headers by pread, the container's preamble and
 * JSON header) and prints a summary; tensor bytes are never touched. */
#include "inspect.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "hconvert.h"
#include "jsonutil.h"

static cJSON *shape_json(const uint64_t *s, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)s[i]));
    return a;
}

/* "812 B", "230.0 KB", "1.23 GB": decimal units, as disks and bandwidths are quoted. */
static const char *human(uint64_t b, char out[32]) {
    static const char *const unit[] = {"KB", "MB", "GB", "TB", "PB"};
    if (b < 1000) {
        snprintf(out, 32, "%llu B", (unsigned long long)b);
        return out;
    }
    double v = (double)b / 1000;
    int u = 0;
    while (v >= 1000 && u < 4) v /= 1000, u++;
    snprintf(out, 32, "%.*f %s", v < 10 ? 2 : 1, v, unit[u]);
    return out;
}

static void print_shape(FILE *out, const uint64_t *s, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)s[i]);
    fputc(']', out);
}

static void print_json(FILE *out, cJSON *root) {
    char *s = cJSON_Print(root);
    if (s) fprintf(out, "%s\n", s);
    free(s);
}

/* Counts per dtype, in dtype order. */
typedef struct {
    uint64_t count[HC_DTYPE_COUNT], bytes[HC_DTYPE_COUNT];
} dtype_hist;

static cJSON *hist_json(const dtype_hist *h) {
    cJSON *o = cJSON_CreateObject();
    for (int d = 1; d < HC_DTYPE_COUNT; d++)
        if (h->count[d]) cJSON_AddNumberToObject(o, hc_dtype_name((hc_dtype)d), (double)h->count[d]);
    return o;
}

static void hist_text(FILE *out, const dtype_hist *h) {
    fprintf(out, "dtypes:");
    for (int d = 1; d < HC_DTYPE_COUNT; d++)
        if (h->count[d])
            fprintf(out, " %s x%llu (%s)", hc_dtype_name((hc_dtype)d),
                    (unsigned long long)h->count[d], human(h->bytes[d], (char[32]){0}));
    fputc('\n', out);
}

static hc_status inspect_checkpoint(const char *path, bool json, bool tensors,
                                    const hc_ckpt_opts *ckpt, FILE *out, hc_err *err) {
    hc_ckpt *c = NULL;
    HC_TRY(hc__ckpt_open_opts(path, ckpt, &c, err));
    dtype_hist h = {0};
    uint64_t total = 0;
    for (size_t i = 0; i < c->nentries; i++) {
        const hc_st_tensor *t = c->entries[i].t;
        h.count[t->dtype]++;
        h.bytes[t->dtype] += t->end - t->begin;
        total += t->end - t->begin;
    }
    const char *kind = c->is_archive ? "archive" : c->is_single_file ? "file" : "folder";
    const char *arch = NULL, *quant = NULL;
    if (c->config) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(c->config, "architectures");
        if (cJSON_IsArray(a) && cJSON_IsString(cJSON_GetArrayItem(a, 0)))
            arch = cJSON_GetArrayItem(a, 0)->valuestring;
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(c->config, "quantization_config");
        if (q) quant = hc__json_str(q, "quant_method");
    }
    if (!quant && c->quant_config) quant = hc__json_str(c->quant_config, "quant_method");
    if (json) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "kind", "checkpoint");
        cJSON_AddStringToObject(r, "path", path);
        cJSON_AddStringToObject(r, "source", kind);
        if (c->index_name) cJSON_AddStringToObject(r, "index", c->index_name);
        else cJSON_AddNullToObject(r, "index");
        cJSON *sh = cJSON_AddArrayToObject(r, "shards");
        for (size_t s = 0; s < c->nshards; s++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "file", hc__basename(c->shards[s]->path));
            cJSON_AddNumberToObject(o, "tensors", (double)c->shards[s]->ntensors);
            cJSON_AddNumberToObject(o, "file_size", (double)c->shards[s]->file_size);
            cJSON_AddItemToArray(sh, o);
        }
        cJSON_AddNumberToObject(r, "tensor_count", (double)c->nentries);
        cJSON_AddNumberToObject(r, "tensor_bytes", (double)total);
        cJSON_AddItemToObject(r, "dtypes", hist_json(&h));
        if (arch) cJSON_AddStringToObject(r, "architecture", arch);
        else cJSON_AddNullToObject(r, "architecture");
        if (quant) cJSON_AddStringToObject(r, "quant_method", quant);
        else cJSON_AddNullToObject(r, "quant_method");
        cJSON *files = cJSON_AddArrayToObject(r, "other_files");
        for (size_t i = 0; i < c->nextra; i++)
            cJSON_AddItemToArray(files, cJSON_CreateString(c->extra_files[i]));
        cJSON *w = cJSON_AddArrayToObject(r, "warnings");
        for (size_t i = 0; i < c->nwarnings; i++)
            cJSON_AddItemToArray(w, cJSON_CreateString(c->warnings[i]));
        if (tensors) {
            cJSON *a = cJSON_AddArrayToObject(r, "tensors");
            for (size_t i = 0; i < c->nentries; i++) {
                const hc_ck_entry *e = &c->entries[i];
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", e->name);
                cJSON_AddStringToObject(o, "dtype", hc_dtype_name(e->t->dtype));
                cJSON_AddItemToObject(o, "shape", shape_json(e->t->shape, e->t->ndim));
                cJSON_AddNumberToObject(o, "bytes", (double)(e->t->end - e->t->begin));
                cJSON_AddStringToObject(o, "shard", hc__basename(c->shards[e->shard]->path));
                cJSON_AddItemToArray(a, o);
            }
        }
        print_json(out, r);
        cJSON_Delete(r);
    } else {
        char esc[1024];
        fprintf(out, "checkpoint: %s (%s)\n", hc__escape(path, esc, sizeof esc), kind);
        fprintf(out, "shards: %zu%s%s\n", c->nshards, c->index_name ? ", index " : "",
                c->index_name ? c->index_name : "");
        fprintf(out, "tensors: %zu, %s\n", c->nentries, human(total, (char[32]){0}));
        hist_text(out, &h);
        fprintf(out, "architecture: %s\n", arch ? hc__escape(arch, esc, sizeof esc) : "(unknown)");
        fprintf(out, "quantization: %s\n", quant ? hc__escape(quant, esc, sizeof esc) : "none");
        fprintf(out, "other files: %zu\n", c->nextra);
        for (size_t i = 0; i < c->nwarnings; i++)
            fprintf(out, "warning: %s\n", hc__escape(c->warnings[i], esc, sizeof esc));
        if (tensors)
            for (size_t i = 0; i < c->nentries; i++) {
                const hc_ck_entry *e = &c->entries[i];
                fprintf(out, "  %s  %s ", hc__escape(e->name, esc, sizeof esc),
                        hc_dtype_name(e->t->dtype));
                print_shape(out, e->t->shape, e->t->ndim);
                fprintf(out, "  %llu B  %s\n", (unsigned long long)(e->t->end - e->t->begin),
                        hc__basename(c->shards[e->shard]->path));
            }
    }
    hc__ckpt_close(c);
    return HC_OK;
}

static hc_status inspect_container(const char *file, bool json, bool tensors, FILE *out,
                                   hc_err *err) {
    hc_container *c = NULL;
    char msg[HC_ERRMSG_MAX];
    hc_status st = hc_container_open(file, 0, &c, msg, sizeof msg);
    if (st) return hc__fail(err, st, "%s", msg);
    size_t n = hc_container_tensor_count(c);
    dtype_hist h = {0};
    uint64_t total = 0, stored = 0;
    for (size_t i = 0; i < n; i++) {
        const hc_tensor_info *t = hc_container_tensor(c, i);
        h.count[t->dtype]++;
        h.bytes[t->dtype] += t->raw_length;
        total += t->raw_length;
        stored += t->length;
    }
    unsigned maj, min;
    hc_container_version(c, &maj, &min);
    cJSON *hdr = cJSON_Parse(hc_container_header_json(c, NULL));
    cJSON *model = hdr ? cJSON_DetachItemFromObjectCaseSensitive(hdr, "model") : NULL;
    if (json) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "kind", "container");
        cJSON_AddStringToObject(r, "path", file);
        char ver[32];
        snprintf(ver, sizeof ver, "%u.%u", maj, min);
        cJSON_AddStringToObject(r, "version", ver);
        cJSON_AddNumberToObject(r, "file_size", (double)hc_container_file_size(c));
        cJSON_AddNumberToObject(r, "tensor_count", (double)n);
        cJSON_AddNumberToObject(r, "tensor_bytes", (double)total);
        cJSON_AddNumberToObject(r, "stored_bytes", (double)stored);
        cJSON_AddItemToObject(r, "dtypes", hist_json(&h));
        cJSON_AddItemToObject(r, "model", model ? model : cJSON_CreateObject());
        model = NULL;
        if (tensors) {
            cJSON *a = cJSON_AddArrayToObject(r, "tensors");
            for (size_t i = 0; i < n; i++) {
                const hc_tensor_info *t = hc_container_tensor(c, i);
                cJSON *o = cJSON_CreateObject();
                char hex[17];
                hc__hex64(t->hash, hex);
                cJSON_AddStringToObject(o, "name", t->name);
                cJSON_AddStringToObject(o, "dtype", hc_dtype_name(t->dtype));
                cJSON_AddItemToObject(o, "shape", shape_json(t->shape, t->ndim));
                cJSON_AddItemToObject(o, "padded_shape", shape_json(t->padded_shape, t->ndim));
                cJSON_AddStringToObject(o, "layout", t->layout);
                cJSON_AddNumberToObject(o, "layout_version", t->layout_version);
                cJSON_AddNumberToObject(o, "offset", (double)t->offset);
                cJSON_AddNumberToObject(o, "length", (double)t->length);
                cJSON_AddStringToObject(o, "encoding", t->encoding == HC_ENC_ZSTD ? "zstd" : "raw");
                cJSON_AddNumberToObject(o, "raw_length", (double)t->raw_length);
                cJSON_AddStringToObject(o, "hash", hex);
                if (t->layout_params)
                    cJSON_AddItemToObject(o, "layout_params", cJSON_Parse(t->layout_params));
                cJSON_AddItemToArray(a, o);
            }
        }
        print_json(out, r);
        cJSON_Delete(r);
    } else {
        char esc[1024];
        fprintf(out, "container: %s (format %u.%u, %llu bytes)\n", hc__escape(file, esc, sizeof esc),
                maj, min, (unsigned long long)hc_container_file_size(c));
        const char *keys[] = {"converter", "source_format", "target"};
        for (size_t k = 0; k < 3; k++) {
            const char *v = model ? hc__json_str(model, keys[k]) : NULL;
            fprintf(out, "%s: %s\n", keys[k], v ? hc__escape(v, esc, sizeof esc) : "?");
        }
        fprintf(out, "tensors: %zu, %s (%s stored)\n", n, human(total, (char[32]){0}),
                human(stored, (char[32]){0}));
        hist_text(out, &h);
        if (tensors)
            for (size_t i = 0; i < n; i++) {
                const hc_tensor_info *t = hc_container_tensor(c, i);
                fprintf(out, "  %s  %s ", hc__escape(t->name, esc, sizeof esc),
                        hc_dtype_name(t->dtype));
                print_shape(out, t->shape, t->ndim);
                fprintf(out, "  %s v%u  %s  %llu B\n", hc__escape(t->layout, esc, sizeof esc),
                        t->layout_version, t->encoding == HC_ENC_ZSTD ? "zstd" : "raw",
                        (unsigned long long)t->length);
            }
    }
    cJSON_Delete(model);
    cJSON_Delete(hdr);
    hc_container_free(c);
    return HC_OK;
}

hc_status hc__inspect(const char *path, bool json, bool tensors, const hc_ckpt_opts *ckpt,
                     FILE *out, hc_err *err) {
    char *ct = hc_container_locate(path);
    hc_status st = ct ? inspect_container(ct, json, tensors, out, err)
                      : inspect_checkpoint(path, json, tensors, ckpt, out, err);
    free(ct);
    return st;
}
