/* npy.c: writes float32 .npy (format 1.0): magic, version, header dict padded so the data
 * starts at a multiple of 64 bytes, then the C-order data. */
#include "npy.h"

#include <stdio.h>
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
