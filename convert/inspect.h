/* inspect.h: `hconvert inspect`: describes a checkpoint (folder, file, archive) or a
 * container, as text with escaped names or as JSON (schemas/inspect.schema.json). */
#ifndef HC_INSPECT_H
#define HC_INSPECT_H

#include <stdbool.h>
#include <stdio.h>

#include "base.h"

/* Resolves PATH to a container file when it is one or a folder holding model.hconvert;
 * returns a new string or NULL. */
char *hc_find_container(const char *path);
hc_status hc_inspect(const char *path, bool json, bool tensors, FILE *out, hc_err *err);

#endif
