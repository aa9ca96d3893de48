/* npy.c: .npy files. The writer: float32, format 1.0 (magic, version, header dict padded so
 * the data starts at a multiple of 64 bytes, then the C-order data). The reader: a parser of
 * the header dict (npy.h says what it accepts) and 2-D arrays of float32 or integers. */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"

hc_status hc__npy_write_f32(const char *path, const uint64_t *shape, int ndim, const float *data,
                           hc_err *err) {
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    uint64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%llu,%s", (unsigned long long)shape[d],
                      d + 1 < ndim ? " " : "");
        if (!hc__mul_u64(numel, shape[d], &numel))
            return hc__fail(err, HC_INVALID, "'%s': element count overflows", path);
    }
    if (ndim > 1) n--; /* "(3, 4)" not "(3, 4,)"; a 1-D shape keeps its comma */
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    unsigned char hdr[600];
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    uint16_t hl = (uint16_t)(n + pad + 1);
    hdr[8] = (unsigned char)hl;
    hdr[9] = (unsigned char)(hl >> 8);
    memcpy(hdr + 10, dict, (size_t)n);
    memset(hdr + 10 + n, ' ', pad);
    hdr[10 + n + pad] = '\n';
    hc_atomic_file af;
    HC_TRY(hc__atomic_open(&af, path, err));
    uint64_t bytes;
    if (!hc__mul_u64(numel, 4, &bytes)) {
        hc__atomic_abort(&af);
        return hc__fail(err, HC_INVALID, "'%s': size overflows", path);
    }
    hc_status st = hc__pwrite_full(af.fd, hdr, 10 + (size_t)n + pad + 1, 0, path, err);
    if (!st) st = hc__pwrite_full(af.fd, data, (size_t)bytes, 10 + (uint64_t)n + pad + 1, path, err);
    if (!st) return hc__atomic_commit(&af, err);
    hc__atomic_abort(&af);
    return st;
}

/* ---- reader: the header dict is parsed as the Python literal numpy writes, token by token,
 * so that a key inside a string, a repeated key or a 3-D shape is never taken for a 2-D
 * header, and every number is bounded before it sizes anything ---- */

typedef struct {
    const char *path;
    const char *start, *p, *end; /* the dict text */
    hc_err *err;
} npy_lit;

static hc_status lit_bad(npy_lit *L, const char *what) {
    return hc__fail(L->err, HC_INVALID, "'%s': .npy header: %s (at byte %zu of the dict)", L->path,
                   what, (size_t)(L->p - L->start));
}

static void lit_ws(npy_lit *L) {
    while (L->p < L->end && (*L->p == ' ' || *L->p == '\t' || *L->p == '\n' || *L->p == '\r'))
        L->p++;
}

/* Skips whitespace, then takes ch if it is next. */
static bool lit_take(npy_lit *L, char ch) {
    lit_ws(L);
    if (L->p < L->end && *L->p == ch) {
        L->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes (numpy writes none), copied into out (cap bytes). */
static hc_status lit_str(npy_lit *L, char *out, size_t cap) {
    lit_ws(L);
    if (L->p >= L->end || (*L->p != '\'' && *L->p != '"')) return lit_bad(L, "expected a string");
    char q = *L->p++;
    size_t n = 0;
    for (; L->p < L->end && *L->p != q; L->p++) {
        if (*L->p == '\\' || *L->p == '\n' || *L->p == 0)
            return lit_bad(L, "escapes, newlines and NUL bytes are not allowed in strings");
        if (n + 1 >= cap) return lit_bad(L, "string too long");
        out[n++] = *L->p;
    }
    if (L->p >= L->end) return lit_bad(L, "unterminated string");
    L->p++;
    out[n] = 0;
    return HC_OK;
}

/* A non-negative decimal integer at most HC_NPY_MAX_DIM (a Python 2 'L' suffix allowed). */
static hc_status lit_dim(npy_lit *L, uint64_t *v) {
    lit_ws(L);
    if (L->p < L->end && *L->p == '-') return lit_bad(L, "negative dimension");
    if (L->p >= L->end || *L->p < '0' || *L->p > '9') return lit_bad(L, "expected an integer");
    if (*L->p == '0' && L->p + 1 < L->end && L->p[1] >= '0' && L->p[1] <= '9')
        return lit_bad(L, "leading zero in an integer");
    uint64_t x = 0;
    for (; L->p < L->end && *L->p >= '0' && *L->p <= '9'; L->p++) {
        x = x * 10 + (uint64_t)(*L->p - '0');
        if (x > HC_NPY_MAX_DIM) return lit_bad(L, "dimension above 2^31 - 1");
    }
    if (L->p < L->end && (*L->p == 'L' || *L->p == 'l')) L->p++;
    *v = x;
    return HC_OK;
}

static hc_status lit_bool(npy_lit *L, bool *v) {
    lit_ws(L);
    size_t left = (size_t)(L->end - L->p);
    if (left >= 4 && !memcmp(L->p, "True", 4)) *v = true, L->p += 4;
    else if (left >= 5 && !memcmp(L->p, "False", 5)) *v = false, L->p += 5;
    else return lit_bad(L, "'fortran_order' must be True or False");
    return HC_OK;
}

/* A tuple of dimensions: "()", "(3,)", "(3, 4)", "(3, 4,)"; "(3)" is an int, not a tuple. */
static hc_status lit_shape(npy_lit *L, hc_npy_header *h) {
    if (!lit_take(L, '(')) return lit_bad(L, "'shape' must be a tuple");
    h->ndim = 0;
    h->numel = 1;
    if (lit_take(L, ')')) return HC_OK;
    for (;;) {
        if (h->ndim == HC_NPY_MAX_NDIM) return lit_bad(L, "more than 32 dimensions");
        uint64_t d = 0;
        HC_TRY(lit_dim(L, &d));
        h->shape[h->ndim++] = d;
        if (!hc__mul_u64(h->numel, d, &h->numel)) return lit_bad(L, "element count overflows");
        bool comma = lit_take(L, ',');
        if (lit_take(L, ')')) {
            if (h->ndim == 1 && !comma) return lit_bad(L, "'shape' must be a tuple");
            return HC_OK;
        }
        if (!comma) return lit_bad(L, "expected ',' or ')' in 'shape'");
    }
}

static hc_status lit_dict(npy_lit *L, hc_npy_header *h) {
    enum { DESCR = 1, FORTRAN = 2, SHAPE = 4 };
    unsigned seen = 0;
    if (!lit_take(L, '{')) return lit_bad(L, "not a dict");
    while (!lit_take(L, '}')) {
        char key[32];
        HC_TRY(lit_str(L, key, sizeof key));
        unsigned k = !strcmp(key, "descr") ? DESCR : !strcmp(key, "fortran_order") ? FORTRAN
                   : !strcmp(key, "shape") ? SHAPE : 0;
        char esc[64];
        if (!k) return hc__fail(L->err, HC_INVALID, "'%s': .npy header: unknown key '%s'", L->path,
                               hc__escape(key, esc, sizeof esc));
        if (seen & k) return hc__fail(L->err, HC_INVALID, "'%s': .npy header: key '%s' appears "
                                     "twice", L->path, key);
        seen |= k;
        if (!lit_take(L, ':')) return lit_bad(L, "expected ':'");
        if (k == DESCR) HC_TRY(lit_str(L, h->descr, sizeof h->descr));
        else if (k == FORTRAN) HC_TRY(lit_bool(L, &h->fortran_order));
        else HC_TRY(lit_shape(L, h));
        if (!lit_take(L, ',')) {
            if (!lit_take(L, '}')) return lit_bad(L, "expected ',' or '}'");
            break;
        }
    }
    lit_ws(L);
    if (L->p != L->end) return lit_bad(L, "bytes after the dict");
    if (seen != (DESCR | FORTRAN | SHAPE))
        return hc__fail(L->err, HC_INVALID, "'%s': .npy header: missing '%s'", L->path,
                       !(seen & DESCR) ? "descr" : !(seen & FORTRAN) ? "fortran_order" : "shape");
    return HC_OK;
}

hc_status hc__npy_parse_header(const char *path, const unsigned char *buf, size_t n,
                              hc_npy_header *h, hc_err *err) {
    memset(h, 0, sizeof *h);
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6))
        return hc__fail(err, HC_INVALID, "'%s' is not a .npy file", path);
    unsigned major = buf[6], minor = buf[7];
    size_t hl, off;
    if (minor != 0 || major < 1 || major > 3)
        return hc__fail(err, HC_INVALID, "'%s': .npy version %u.%u is not supported (1.0, 2.0 and "
                       "3.0 are)", path, major, minor);
    if (major == 1) {
        hl = (size_t)buf[8] | (size_t)buf[9] << 8;
        off = 10;
    } else if (n >= 12) {
        hl = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        off = 12;
    } else {
        return hc__fail(err, HC_INVALID, "'%s': header runs past the end of the file", path);
    }
    if (hl > HC_NPY_MAX_HEADER)
        return hc__fail(err, HC_INVALID, "'%s': .npy header of %zu bytes, more than the %u "
                       "allowed", path, hl, HC_NPY_MAX_HEADER);
    if (hl > n - off)
        return hc__fail(err, HC_INVALID, "'%s': header runs past the end of the file", path);
    h->major = major;
    h->data_offset = off + hl;
    npy_lit L = {path, (const char *)buf + off, (const char *)buf + off,
                 (const char *)buf + off + hl, err};
    return lit_dict(&L, h);
}

/* The 2-D array at src (isz-byte elements, either order) into out as C-order 4-byte elements;
 * int64 narrows to int32, refusing a value that does not fit. */
static hc_status convert_2d(const char *path, const hc_npy_header *h, unsigned isz,
                            const unsigned char *src, void *out, hc_err *err) {
    uint64_t d0 = h->shape[0], d1 = h->shape[1];
    for (uint64_t i = 0; i < d0; i++)
        for (uint64_t j = 0; j < d1; j++) {
            uint64_t s = h->fortran_order ? j * d0 + i : i * d1 + j;
            char *dst = (char *)out + (i * d1 + j) * 4;
            if (isz == 4) {
                memcpy(dst, src + s * 4, 4);
                continue;
            }
            int64_t v;
            memcpy(&v, src + s * 8, 8);
            if (v < INT32_MIN || v > INT32_MAX)
                return hc__fail(err, HC_INVALID, "'%s': value %lld at [%llu, %llu] does not fit "
                               "int32", path, (long long)v, (unsigned long long)i,
                               (unsigned long long)j);
            int32_t w = (int32_t)v;
            memcpy(dst, &w, 4);
        }
    return HC_OK;
}

hc_status hc__npy_read_2d(const char *path, hc_npy_kind kind, uint64_t shape[2], void **data,
                         hc_err *err) {
    char *buf = NULL;
    size_t n = 0;
    void *out = NULL;
    hc_npy_header h;
    *data = NULL;
    HC_TRY(hc__read_file(path, 1ull << 34, &buf, &n, err));
    hc_status st = hc__npy_parse_header(path, (const unsigned char *)buf, n, &h, err);
    if (st) goto out;
    unsigned isz = 0;
    bool is_float = false;
    if (!strcmp(h.descr, "<f4")) isz = 4, is_float = true;
    else if (!strcmp(h.descr, "<i4")) isz = 4;
    else if (!strcmp(h.descr, "<i8")) isz = 8;
    if (!isz || is_float != (kind == HC_NPY_F32)) {
        char esc[64];
        st = hc__fail(err, HC_INVALID, "'%s': dtype '%s': must be %s", path,
                     hc__escape(h.descr, esc, sizeof esc),
                     kind == HC_NPY_F32 ? "float32 ('<f4')" : "int32 or int64 ('<i4', '<i8')");
        goto out;
    }
    if (h.ndim != 2) {
        st = hc__fail(err, HC_INVALID, "'%s': expected a 2-D array, the shape has %d dimensions",
                     path, h.ndim);
        goto out;
    }
    uint64_t bytes;
    if (!hc__mul_u64(h.numel, isz, &bytes) || bytes != n - h.data_offset) {
        st = hc__fail(err, HC_INVALID, "'%s': shape (%llu, %llu) does not match the %zu data bytes",
                     path, (unsigned long long)h.shape[0], (unsigned long long)h.shape[1],
                     n - h.data_offset);
        goto out;
    }
    out = malloc(h.numel ? h.numel * 4 : 1); /* numel * isz fits: it is the data size */
    if (!out) {
        st = hc__fail(err, HC_NOMEM, "out of memory for '%s'", path);
        goto out;
    }
    /* an empty array has nothing to convert: a (2^31 - 1, 0) shape must not loop on rows */
    if (h.numel) st = convert_2d(path, &h, isz, (const unsigned char *)buf + h.data_offset, out, err);
    if (st) goto out;
    shape[0] = h.shape[0], shape[1] = h.shape[1];
    *data = out;
    out = NULL;
out:
    free(out);
    free(buf);
    return st;
}
