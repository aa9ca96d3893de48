/* npy.h: NumPy .npy files (format 1.0, little-endian float32), written atomically. */
#ifndef HC_NPY_H
#define HC_NPY_H

#include "base.h"

hc_status hc_npy_write_f32(const char *path, const uint64_t *shape, int ndim, const float *data,
                           hc_err *err);

/* Reads a 2-D .npy of float32 ('<f4') or integers ('<i4', '<i8', returned as int32) into a
 * new C-order buffer (*data, caller frees). Fortran-ordered arrays are transposed. */
typedef enum { HC_NPY_F32, HC_NPY_I32 } hc_npy_kind;
hc_status hc_npy_read_2d(const char *path, hc_npy_kind kind, uint64_t shape[2], void **data,
                         hc_err *err);

#endif
