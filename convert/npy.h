/* npy.h: NumPy .npy files: the writer (format 1.0, little-endian float32, written atomically)
 * and a strict reader of the header dict and of 2-D float32 / integer arrays. */
#ifndef HC_NPY_H
#define HC_NPY_H

#include "base.h"

hc_status hc__npy_write_f32(const char *path, const uint64_t *shape, int ndim, const float *data,
                           hc_err *err);

/* What the reader accepts (anything else is refused, naming the file and the rule): magic
 * "\x93NUMPY", version 1.0, 2.0 or 3.0, a header of at most HC_NPY_MAX_HEADER bytes holding a
 * Python dict literal with exactly the keys 'descr' (a quoted string), 'fortran_order' (True or
 * False) and 'shape' (a tuple of at most HC_NPY_MAX_NDIM decimal integers, each at most
 * HC_NPY_MAX_DIM), each once; quotes ' or " without escapes; whitespace and one trailing comma
 * where Python allows them; nothing but whitespace after the closing brace. */
#define HC_NPY_MAX_HEADER 65536u
#define HC_NPY_MAX_NDIM 32
#define HC_NPY_MAX_DIM 2147483647ull /* 2^31 - 1 */

typedef struct {
    unsigned major;       /* format version: 1, 2 or 3 (minor 0) */
    char descr[16];       /* the dtype string, e.g. "<f4" */
    bool fortran_order;
    int ndim;
    uint64_t shape[HC_NPY_MAX_NDIM];
    uint64_t numel;       /* product of shape (1 for shape ()) */
    size_t data_offset;   /* where the array data begins in the file */
} hc_npy_header;

/* Parses the preamble and header dict of the n bytes of a .npy file at buf (path names it in
 * messages). Does not look at the data. */
hc_status hc__npy_parse_header(const char *path, const unsigned char *buf, size_t n,
                              hc_npy_header *h, hc_err *err);

/* Reads a 2-D .npy of float32 ('<f4') or integers ('<i4', '<i8', returned as int32) into a
 * new C-order buffer (*data, caller frees). Fortran-ordered arrays are transposed. The data
 * must be exactly shape[0] * shape[1] elements. */
typedef enum { HC_NPY_F32, HC_NPY_I32 } hc_npy_kind;
hc_status hc__npy_read_2d(const char *path, hc_npy_kind kind, uint64_t shape[2], void **data,
                         hc_err *err);

#endif
