/* safetensors.c: strict safetensors header parser (FORMATS.md section 1). Every size is
 * computed with checked arithmetic; errors name the file, the tensor and the rule. */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonutil.h"

static int cmp_tensor_begin(const void *a, const void *b) {
    const hc_st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

static hc_status parse_metadata(hc_st_file *f, const cJSON *meta, hc_err *err) {
    if (!cJSON_IsObject(meta))
        return hc_fail(err, HC_INVALID, "'%s': __metadata__ is not an object", f->path);
    size_t n = (size_t)cJSON_GetArraySize(meta);
    f->meta_keys = calloc(n ? n : 1, sizeof(char *));
    f->meta_values = calloc(n ? n : 1, sizeof(char *));
    if (!f->meta_keys || !f->meta_values) return hc_fail(err, HC_NOMEM, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, meta) {
        char esc[256];
        if (!cJSON_IsString(it))
            return hc_fail(err, HC_INVALID,
                           "'%s': __metadata__ value of '%s' is not a string (only string -> "
                           "string is allowed)",
                           f->path, hc_escape(it->string, esc, sizeof esc));
        f->meta_keys[f->nmeta] = hc_strdup(it->string);
        f->meta_values[f->nmeta] = hc_strdup(it->valuestring);
        if (!f->meta_keys[f->nmeta] || !f->meta_values[f->nmeta])
            return hc_fail(err, HC_NOMEM, "out of memory");
        f->nmeta++;
    }
    return HC_OK;
}

static hc_status parse_entry(hc_st_file *f, const cJSON *e, hc_st_tensor *t, hc_err *err) {
    char esc[512];
    const char *nm = hc_escape(e->string, esc, sizeof esc);
    if (!cJSON_IsObject(e))
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': entry is not an object", f->path, nm);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!dt) return hc_fail(err, HC_INVALID, "'%s': tensor '%s': missing \"dtype\"", f->path, nm);
    if (!sh) return hc_fail(err, HC_INVALID, "'%s': tensor '%s': missing \"shape\"", f->path, nm);
    if (!of)
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': missing \"data_offsets\"", f->path, nm);
    if (!cJSON_IsString(dt))
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': dtype is not a string", f->path, nm);
    t->dtype = hc_dtype_from_name(dt->valuestring);
    if (t->dtype == HC_DTYPE_INVALID) {
        char desc[64];
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': unknown dtype '%s'", f->path, nm,
                       hc_escape(dt->valuestring, desc, sizeof desc));
    }
    if (!cJSON_IsArray(sh))
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': shape is not an array", f->path, nm);
    int nd = cJSON_GetArraySize(sh);
    if (nd > HC_MAX_DIMS)
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': shape has %d dimensions, at most %d "
                       "are supported", f->path, nm, nd, HC_MAX_DIMS);
    t->ndim = nd;
    uint64_t numel = 1;
    bool overflow = false;
    for (int d = 0; d < nd; d++) {
        const cJSON *v = cJSON_GetArrayItem(sh, d);
        if (!hc_json_u64(v, &t->shape[d]))
            return hc_fail(err, HC_INVALID, "'%s': tensor '%s': shape dimension %d is not an "
                           "integer in [0, 2^53)", f->path, nm, d);
        if (!hc_mul_u64(numel, t->shape[d], &numel)) overflow = true;
    }
    /* A zero dimension makes the count 0 even when other dimensions overflowed. */
    for (int d = 0; d < nd; d++)
        if (t->shape[d] == 0) overflow = false, numel = 0;
    if (overflow)
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': element count of the shape overflows "
                       "64 bits", f->path, nm);
    t->numel = numel;
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2 ||
        !hc_json_u64(cJSON_GetArrayItem(of, 0), &t->begin) ||
        !hc_json_u64(cJSON_GetArrayItem(of, 1), &t->end))
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': data_offsets must be two integers "
                       "[begin, end] in [0, 2^53)", f->path, nm);
    if (t->end < t->begin)
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': data_offsets end %llu is before "
                       "begin %llu", f->path, nm, (unsigned long long)t->end,
                       (unsigned long long)t->begin);
    uint64_t bits;
    if (!hc_mul_u64(numel, hc_dtype_bits(t->dtype), &bits))
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': size in bits of %llu elements of %s "
                       "overflows 64 bits", f->path, nm, (unsigned long long)numel,
                       hc_dtype_name(t->dtype));
    if (bits % 8)
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': %llu elements of %s is not a whole "
                       "number of bytes", f->path, nm, (unsigned long long)numel,
                       hc_dtype_name(t->dtype));
    if (t->end - t->begin != bits / 8)
        return hc_fail(err, HC_INVALID, "'%s': tensor '%s': %s shape needs %llu bytes but "
                       "data_offsets span %llu", f->path, nm, hc_dtype_name(t->dtype),
                       (unsigned long long)(bits / 8), (unsigned long long)(t->end - t->begin));
    t->name = hc_strdup(e->string);
    if (!t->name) return hc_fail(err, HC_NOMEM, "out of memory");
    return HC_OK;
}

/* cJSON turns "\u0000" into a C string end, which would silently shorten a name. */
static bool has_escaped_nul(const char *s, uint64_t n) {
    for (uint64_t i = 0; i + 6 <= n; i++) {
        if (memcmp(s + i, "\\u0000", 6) != 0) continue;
        uint64_t bs = 0;
        while (bs < i && s[i - 1 - bs] == '\\') bs++;
        if (bs % 2 == 0) return true;
    }
    return false;
}

hc_status hc_st_parse_header(hc_st_file *f, const char *json, uint64_t len, hc_err *err) {
    hc_status st = HC_OK;
    cJSON *root = NULL;
    if (!hc_utf8_valid(json, len))
        return hc_fail(err, HC_INVALID, "'%s': header is not valid UTF-8", f->path);
    if (len == 0 || json[0] != '{')
        return hc_fail(err, HC_INVALID, "'%s': header is not a JSON object (must start with '{')",
                       f->path);
    if (has_escaped_nul(json, len))
        return hc_fail(err, HC_INVALID, "'%s': header JSON contains an escaped NUL character",
                       f->path);
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(json, (size_t)len, &end, 0);
    if (!root) {
        unsigned long long pos = end && end >= json ? (unsigned long long)(end - json) : 0;
        st = hc_fail(err, HC_INVALID, "'%s': header is not valid JSON (error near byte %llu of "
                     "the header)", f->path, pos);
        goto out;
    }
    for (const char *p = end; p < json + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            st = hc_fail(err, HC_INVALID, "'%s': header has bytes after the JSON object",
                         f->path);
            goto out;
        }
    if (!cJSON_IsObject(root)) {
        st = hc_fail(err, HC_INVALID, "'%s': header is not a JSON object", f->path);
        goto out;
    }
    size_t n = (size_t)cJSON_GetArraySize(root);
    f->tensors = calloc(n ? n : 1, sizeof(hc_st_tensor));
    if (!f->tensors) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    const char *dup = hc_json_duplicate_key(root);
    if (dup) {
        char esc[512];
        st = hc_fail(err, HC_INVALID, "'%s': tensor '%s': duplicate name in header", f->path,
                     hc_escape(dup, esc, sizeof esc));
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        if (strcmp(it->string, "__metadata__") == 0) {
            st = parse_metadata(f, it, err);
            if (st) goto out;
            continue;
        }
        if (it->string[0] == 0) {
            st = hc_fail(err, HC_INVALID, "'%s': a tensor has an empty name", f->path);
            goto out;
        }
        st = parse_entry(f, it, &f->tensors[f->ntensors], err);
        if (st) goto out;
        f->ntensors++;
    }
    qsort(f->tensors, f->ntensors, sizeof(hc_st_tensor), cmp_tensor_begin);
    /* Contiguity: first begin 0, each begin == previous end, last end == data size. */
    uint64_t expect = 0;
    const char *prev = NULL;
    for (size_t i = 0; i < f->ntensors; i++) {
        hc_st_tensor *t = &f->tensors[i];
        char esc[512], pesc[512];
        if (t->begin > expect) {
            st = hc_fail(err, HC_INVALID, "'%s': tensor '%s': data begins at %llu, leaving a hole "
                         "after %s%s%s (which ends at %llu)", f->path,
                         hc_escape(t->name, esc, sizeof esc), (unsigned long long)t->begin,
                         prev ? "'" : "", prev ? hc_escape(prev, pesc, sizeof pesc) : "the header",
                         prev ? "'" : "", (unsigned long long)expect);
            goto out;
        }
        if (t->begin < expect) {
            st = hc_fail(err, HC_INVALID, "'%s': tensor '%s': data [%llu, %llu) overlaps tensor "
                         "'%s' (which ends at %llu)", f->path, hc_escape(t->name, esc, sizeof esc),
                         (unsigned long long)t->begin, (unsigned long long)t->end,
                         hc_escape(prev, pesc, sizeof pesc), (unsigned long long)expect);
            goto out;
        }
        expect = t->end;
        prev = t->name;
    }
    uint64_t data_size = f->file_size - f->data_start;
    if (expect > data_size) {
        char esc[512];
        st = hc_fail(err, HC_INVALID, "'%s': tensor '%s': data ends at byte %llu of the data "
                     "section, past the end of the file (%llu data bytes; truncated file?)",
                     f->path, hc_escape(prev, esc, sizeof esc), (unsigned long long)expect,
                     (unsigned long long)data_size);
        goto out;
    }
    if (expect < data_size) {
        st = hc_fail(err, HC_INVALID, "'%s': file size %llu does not match the header: the last "
                     "tensor ends at %llu, %llu bytes of trailing data", f->path,
                     (unsigned long long)f->file_size,
                     (unsigned long long)(f->data_start + expect),
                     (unsigned long long)(data_size - expect));
        goto out;
    }
out:
    cJSON_Delete(root);
    return st;
}

hc_status hc_st_open(const char *path, hc_st_file **out, hc_err *err) {
    hc_status st = HC_OK;
    char *hdr = NULL;
    *out = NULL;
    hc_st_file *f = calloc(1, sizeof *f);
    if (!f) return hc_fail(err, HC_NOMEM, "out of memory");
    f->fd = -1;
    f->path = hc_strdup(path);
    if (!f->path) {
        st = hc_fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        st = hc_fail(err, HC_IO, "cannot open '%s': %s", path, strerror(errno));
        goto out;
    }
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) {
        st = hc_fail(err, HC_IO, "cannot stat '%s': %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = hc_fail(err, HC_INVALID, "'%s' is not a regular file", path);
        goto out;
    }
    f->file_size = (uint64_t)sb.st_size;
    if (f->file_size < 8) {
        st = hc_fail(err, HC_INVALID, "'%s': file too small to be safetensors (%llu bytes, the "
                     "header length alone takes 8)", path, (unsigned long long)f->file_size);
        goto out;
    }
    unsigned char lenb[8];
    st = hc_pread_full(f->fd, lenb, 8, 0, path, err);
    if (st) goto out;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | lenb[i];
    if (n > HC_ST_MAX_HEADER || n > f->file_size - 8) {
        st = hc_fail(err, HC_INVALID, "'%s': header length %llu is invalid (file has %llu bytes "
                     "after the length field; limit %llu)", path, (unsigned long long)n,
                     (unsigned long long)(f->file_size - 8), HC_ST_MAX_HEADER);
        goto out;
    }
    f->header_len = n;
    f->data_start = 8 + n;
    hdr = malloc(n + 1);
    if (!hdr) {
        st = hc_fail(err, HC_NOMEM, "out of memory for a %llu-byte header", (unsigned long long)n);
        goto out;
    }
    st = hc_pread_full(f->fd, hdr, n, 8, path, err);
    if (st) goto out;
    hdr[n] = 0;
    st = hc_st_parse_header(f, hdr, n, err);
out:
    free(hdr);
    if (st) hc_st_close(f);
    else *out = f;
    return st;
}

hc_status hc_st_map(hc_st_file *f, hc_err *err) {
    if (f->map || f->file_size == 0) return HC_OK;
    void *m = mmap(NULL, f->file_size, PROT_READ, MAP_SHARED, f->fd, 0);
    if (m == MAP_FAILED)
        return hc_fail(err, HC_IO, "cannot map '%s': %s", f->path, strerror(errno));
    f->map = m;
    return HC_OK;
}

const void *hc_st_data(const hc_st_file *f, const hc_st_tensor *t) {
    return f->map ? f->map + f->data_start + t->begin : NULL;
}

void hc_st_close(hc_st_file *f) {
    if (!f) return;
    if (f->map) munmap((void *)f->map, f->file_size);
    if (f->fd >= 0) close(f->fd);
    for (size_t i = 0; i < f->ntensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    for (size_t i = 0; i < f->nmeta; i++) free(f->meta_keys[i]), free(f->meta_values[i]);
    free(f->meta_keys);
    free(f->meta_values);
    free(f->path);
    free(f);
}
