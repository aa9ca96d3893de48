/* safetensors.c: one .safetensors file: its length field and header read with pread, the
 * header's tensor table checked (unique names, data contiguous and filling the file: FORMATS.md
 * section 1), the data mapped when asked. The header's JSON is read by safetensors_header.c.
 * Errors name the file, the tensor and the rule. */
#include "safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safetensors_int.h"

static int cmp_tensor_begin(const void *a, const void *b) {
    const hc_st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

static hc_status check_unique(hc_st_file *f, hc_err *err) {
    char esc[512];
    const char *dup;
    HC_TRY(hc__first_duplicate_name(f->tensors, f->ntensors, sizeof *f->tensors, &dup, err));
    if (dup)
        return hc__fail(err, HC_INVALID, "'%s': tensor '%s': duplicate name in header", f->path,
                       hc__escape(dup, esc, sizeof esc));
    HC_TRY(hc__first_duplicate_name(f->meta_keys, f->nmeta, sizeof *f->meta_keys, &dup, err));
    if (dup)
        return hc__fail(err, HC_INVALID, "'%s': __metadata__ key '%s' appears twice", f->path,
                       hc__escape(dup, esc, sizeof esc));
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

hc_status hc__st_parse_header(hc_st_file *f, const char *json, uint64_t len, hc_err *err) {
    hc_status st;
    if (!hc__utf8_valid(json, len))
        return hc__fail(err, HC_INVALID, "'%s': header is not valid UTF-8", f->path);
    if (len == 0 || json[0] != '{')
        return hc__fail(err, HC_INVALID, "'%s': header is not a JSON object (must start with '{')",
                       f->path);
    if (has_escaped_nul(json, len))
        return hc__fail(err, HC_INVALID, "'%s': header JSON contains an escaped NUL character",
                       f->path);
    st = hc__st_read_json(f, json, len, err);
    if (!st) st = check_unique(f, err);
    if (st) return st;
    qsort(f->tensors, f->ntensors, sizeof(hc_st_tensor), cmp_tensor_begin);
    /* Contiguity: first begin 0, each begin == previous end, last end == data size. */
    uint64_t expect = 0;
    const char *prev = NULL;
    for (size_t i = 0; i < f->ntensors; i++) {
        hc_st_tensor *t = &f->tensors[i];
        char esc[512], pesc[512];
        if (t->begin > expect) {
            st = hc__fail(err, HC_INVALID, "'%s': tensor '%s': data begins at %llu, leaving a hole "
                         "after %s%s%s (which ends at %llu)", f->path,
                         hc__escape(t->name, esc, sizeof esc), (unsigned long long)t->begin,
                         prev ? "'" : "", prev ? hc__escape(prev, pesc, sizeof pesc) : "the header",
                         prev ? "'" : "", (unsigned long long)expect);
            return st;
        }
        if (t->begin < expect) {
            st = hc__fail(err, HC_INVALID, "'%s': tensor '%s': data [%llu, %llu) overlaps tensor "
                         "'%s' (which ends at %llu)", f->path, hc__escape(t->name, esc, sizeof esc),
                         (unsigned long long)t->begin, (unsigned long long)t->end,
                         hc__escape(prev, pesc, sizeof pesc), (unsigned long long)expect);
            return st;
        }
        expect = t->end;
        prev = t->name;
    }
    uint64_t data_size = f->file_size - f->data_start;
    if (expect > data_size) {
        char esc[512];
        st = hc__fail(err, HC_INVALID, "'%s': tensor '%s': data ends at byte %llu of the data "
                     "section, past the end of the file (%llu data bytes; truncated file?)",
                     f->path, hc__escape(prev, esc, sizeof esc), (unsigned long long)expect,
                     (unsigned long long)data_size);
        return st;
    }
    if (expect < data_size) {
        st = hc__fail(err, HC_INVALID, "'%s': file size %llu does not match the header: the last "
                     "tensor ends at %llu, %llu bytes of trailing data", f->path,
                     (unsigned long long)f->file_size,
                     (unsigned long long)(f->data_start + expect),
                     (unsigned long long)(data_size - expect));
        return st;
    }
    return HC_OK;
}

hc_status hc__st_open(const char *path, hc_st_file **out, hc_err *err) {
    hc_status st = HC_OK;
    char *hdr = NULL;
    *out = NULL;
    hc_st_file *f = calloc(1, sizeof *f);
    if (!f) return hc__fail(err, HC_NOMEM, "out of memory");
    f->fd = -1;
    f->path = hc__strdup(path);
    if (!f->path) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    st = hc__open_regular(path, &f->fd, &f->file_size, err); /* a FIFO never blocks the open */
    if (st) goto out;
    if (f->file_size < 8) {
        st = hc__fail(err, HC_INVALID, "'%s': file too small to be safetensors (%llu bytes, the "
                     "header length alone takes 8)", path, (unsigned long long)f->file_size);
        goto out;
    }
    unsigned char lenb[8];
    st = hc__pread_full(f->fd, lenb, 8, 0, path, err);
    if (st) goto out;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | lenb[i];
    if (n > HC_ST_MAX_HEADER || n > f->file_size - 8) {
        st = hc__fail(err, HC_INVALID, "'%s': header length %llu is invalid (file has %llu bytes "
                     "after the length field; limit %llu)", path, (unsigned long long)n,
                     (unsigned long long)(f->file_size - 8), HC_ST_MAX_HEADER);
        goto out;
    }
    f->header_len = n;
    f->data_start = 8 + n;
    hdr = malloc(n + 1);
    if (!hdr) {
        st = hc__fail(err, HC_NOMEM, "out of memory for a %llu-byte header", (unsigned long long)n);
        goto out;
    }
    st = hc__pread_full(f->fd, hdr, n, 8, path, err);
    if (st) goto out;
    hdr[n] = 0;
    st = hc__st_parse_header(f, hdr, n, err);
out:
    free(hdr);
    if (st) hc__st_close(f);
    else *out = f;
    return st;
}

hc_status hc__st_map(hc_st_file *f, hc_err *err) {
    if (f->map || f->file_size == 0) return HC_OK;
    void *m = mmap(NULL, f->file_size, PROT_READ, MAP_SHARED, f->fd, 0);
    if (m == MAP_FAILED)
        return hc__fail(err, HC_IO, "cannot map '%s': %s", f->path, strerror(errno));
    f->map = m;
    return HC_OK;
}

const void *hc__st_data(const hc_st_file *f, const hc_st_tensor *t) {
    return f->map ? f->map + f->data_start + t->begin : NULL;
}

void hc__st_close(hc_st_file *f) {
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
