/* outdir.h: the folders convert writes -- OUT with its container, or OUT/rank<r> per rank --
 * as later commands find them: verifying every container of an output and precompiling the
 * kernels they need. The CLI prints what these return; they print nothing. Internal to
 * convert/. */
#ifndef HC_OUTDIR_H
#define HC_OUTDIR_H

#include <stdbool.h>
#include <stdint.h>

#include "base.h"

/* One container's verification. */
typedef struct {
    const char *file; /* the container file (NULL when the path holds none) */
    const char *path; /* the path asked for */
    hc_status st;
    bool checked;     /* st is the hash check's (nbad problems), not the open's */
    uint64_t nbad;
    size_t tensors;
    uint64_t bytes;
    char msg[HC_ERRMSG_MAX]; /* why st is not HC_OK ("" when the runtime said nothing) */
} hc_outdir_verified;

/* Verifies every container at path: a container file, a folder holding one, or a
 * tensor-parallel output whose rank<r> folders (from rank0 up to the first missing one) are
 * each verified so. Each result goes to report, in order, as it is known. */
void hc__outdir_verify(const char *path, void (*report)(void *ctx, const hc_outdir_verified *v),
                       void *ctx);

/* What precompiling an output built. */
typedef struct {
    unsigned built;  /* kernel modules built or found in the cache, every rank together */
    bool unstored;   /* built, but not all kept: the next run builds them again */
    char why[700];   /* ... because of this */
    char msg[HC_ERRMSG_MAX]; /* the failure */
} hc_outdir_precompiled;

/* Builds the kernel modules for arch ("sm_90a", "sm_80") that the containers convert wrote
 * under out (OUT/rank<r> for each of tp ranks when tp > 1) need, into the kernel cache.
 * HC_UNSUPPORTED (no NVRTC) or another failure stops at the first container, msg saying why. */
hc_status hc__outdir_precompile(const char *out, unsigned tp, const char *arch,
                                hc_outdir_precompiled *r);

#endif
