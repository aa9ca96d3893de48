/* npy.c: writes float32 .npy (format 1.0): magic, version, header dict padded so the data
 * starts at a multiple of 64 bytes, then the C-order data. */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"

hc_status hc_npy_write_f32(const char *path, const uint64_t *shape, int ndim, const float *data,
                           hc_err *err) {
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    uint64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%llu,%s", (unsigned long long)shape[d],
                      d + 1 < ndim ? " " : "");
        if (!hc_mul_u64(numel, shape[d], &numel))
            return hc_fail(err, HC_INVALID, "'%s': element count overflows", path);
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
    HC_TRY(hc_atomic_open(&af, path, err));
    uint64_t bytes;
    if (!hc_mul_u64(numel, 4, &bytes)) {
        hc_atomic_abort(&af);
        return hc_fail(err, HC_INVALID, "'%s': size overflows", path);
    }
    hc_status st = hc_pwrite_full(af.fd, hdr, 10 + (size_t)n + pad + 1, 0, path, err);
    if (!st) st = hc_pwrite_full(af.fd, data, (size_t)bytes, 10 + (uint64_t)n + pad + 1, path, err);
    if (!st) return hc_atomic_commit(&af, err);
    hc_atomic_abort(&af);
    return st;
}

/* The value after key in a .npy header dict, or NULL. */
static const char *dict_value(const char *hdr, const char *key) {
    const char *p = strstr(hdr, key);
    if (!p) return NULL;
    p += strlen(key);
    while (*p == ' ' || *p == ':') p++;
    return p;
}

hc_status hc_npy_read_2d(const char *path, hc_npy_kind kind, uint64_t shape[2], void **data,
                         hc_err *err) {
    char *buf = NULL;
    size_t n = 0;
    *data = NULL;
    HC_TRY(hc_read_file(path, 1ull << 34, &buf, &n, err));
    hc_status st = HC_OK;
    char *hdr = NULL;
#define BAD(...)                                          \
    do {                                                  \
        st = hc_fail(err, HC_INVALID, __VA_ARGS__);       \
        goto out;                                         \
    } while (0)
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6)) BAD("'%s' is not a .npy file", path);
    unsigned major = (unsigned char)buf[6];
    size_t hl, off;
    if (major == 1) hl = (unsigned char)buf[8] | (size_t)(unsigned char)buf[9] << 8, off = 10;
    else if ((major == 2 || major == 3) && n >= 12)
        hl = (unsigned char)buf[8] | (size_t)(unsigned char)buf[9] << 8 |
             (size_t)(unsigned char)buf[10] << 16 | (size_t)(unsigned char)buf[11] << 24, off = 12;
    else BAD("'%s': .npy version %u is not supported", path, major);
    if (hl > n - off) BAD("'%s': header runs past the end of the file", path);
    hdr = malloc(hl + 1);
    if (!hdr) BAD("out of memory");
    memcpy(hdr, buf + off, hl);
    hdr[hl] = 0;
    const char *descr = dict_value(hdr, "'descr'");
    unsigned isz = 0;
    bool is_float = false;
    if (descr && !strncmp(descr, "'<f4'", 5)) isz = 4, is_float = true;
    else if (descr && !strncmp(descr, "'<i4'", 5)) isz = 4;
    else if (descr && !strncmp(descr, "'<i8'", 5)) isz = 8;
    if (!isz || is_float != (kind == HC_NPY_F32))
        BAD("'%s': dtype must be %s", path, kind == HC_NPY_F32 ? "float32 ('<f4')" : "int32 or int64");
    const char *fo = dict_value(hdr, "'fortran_order'");
    bool fortran = fo && !strncmp(fo, "True", 4);
    const char *sh = dict_value(hdr, "'shape'");
    unsigned long long d0, d1;
    char close;
    if (!sh || sscanf(sh, "(%llu, %llu%c", &d0, &d1, &close) != 3 || (close != ')' && close != ','))
        BAD("'%s': expected a 2-D array", path);
    uint64_t cnt, bytes;
    if (!hc_mul_u64(d0, d1, &cnt) || !hc_mul_u64(cnt, isz, &bytes) || bytes != n - off - hl)
        BAD("'%s': shape (%llu, %llu) does not match the %zu data bytes", path, d0, d1, n - off - hl);
    const unsigned char *src = (const unsigned char *)buf + off + hl;
    void *out = malloc((cnt ? cnt : 1) * 4);
    if (!out) BAD("out of memory for '%s'", path);
    for (uint64_t i = 0; i < d0; i++)
        for (uint64_t j = 0; j < d1; j++) {
            uint64_t s = fortran ? j * d0 + i : i * d1 + j;
            if (isz == 4) {
                memcpy((char *)out + (i * d1 + j) * 4, src + s * 4, 4);
            } else {
                int64_t v;
                memcpy(&v, src + s * 8, 8);
                if (v < INT32_MIN || v > INT32_MAX) {
                    free(out);
                    BAD("'%s': value %lld does not fit int32", path, (long long)v);
                }
                int32_t w = (int32_t)v;
                memcpy((char *)out + (i * d1 + j) * 4, &w, 4);
            }
        }
    shape[0] = d0, shape[1] = d1;
    *data = out;
out:
    free(hdr);
    free(buf);
    return st;
#undef BAD
}
