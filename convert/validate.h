/* validate.h: `hconvert validate`: decodes every module once, streaming, and reports every
 * problem at once (shapes, packing, scales, zero points, g_idx, MoE completeness), plus what
 * kernels and tensor-parallel sizes can run the checkpoint. */
#ifndef HC_VALIDATE_H
#define HC_VALIDATE_H

#include <stdbool.h>
#include <stdio.h>

#include "base.h"
#include "checkpoint.h"

typedef struct {
    bool json;
    unsigned tp[8]; /* tensor-parallel sizes to plan; empty: 1, 2, 4, 8 */
    int ntp;
    int threads;
    bool progress;
    hc_ckpt_opts ckpt; /* extraction limits of an archive SRC */
} hc_validate_opts;

/* Prints the report to out; *errors receives the number of error-level findings. Returns a
 * failure only when the checkpoint cannot be read at all (I/O, unreadable safetensors). */
hc_status hc__validate(const char *src, const hc_validate_opts *o, FILE *out, size_t *errors,
                      hc_err *err);

#endif
