/* npy.h: NumPy .npy files (format 1.0, little-endian float32), written atomically. */
#ifndef HC_NPY_H
#define HC_NPY_H

#include "base.h"

hc_status hc_npy_write_f32(const char *path, const uint64_t *shape, int ndim, const float *data,
                           hc_err *err);

#endif
