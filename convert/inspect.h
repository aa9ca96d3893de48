/* inspect.h: `hconvert inspect`: describes a checkpoint (folder, file, archive) or a
 * container, as text with escaped names or as JSON (schemas/inspect.schema.json). */
#ifndef HC_INSPECT_H
#define HC_INSPECT_H

#include <stdbool.h>
#include <stdio.h>

#include "base.h"
#include "checkpoint.h"

/* ckpt: the extraction limits of an archive (NULL: the defaults) */
hc_status hc__inspect(const char *path, bool json, bool tensors, const hc_ckpt_opts *ckpt,
                     FILE *out, hc_err *err);

#endif
