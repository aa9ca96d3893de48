/* safetensors_int.h: the one-pass JSON reader of a safetensors header (safetensors_header.c),
 * as hc__st_parse_header (safetensors.c) calls it. Internal to formats/safetensors*.c. */
#ifndef HC_SAFETENSORS_INT_H
#define HC_SAFETENSORS_INT_H

#include "safetensors.h"

/* Reads the header's JSON object json[0..len) into f's tensors and __metadata__: each entry's
 * fields once each and its sizes agreeing with each other; nothing may follow the object.
 * Duplicate names and the data layout are the caller's checks. */
hc_status hc__st_read_json(hc_st_file *f, const char *json, uint64_t len, hc_err *err);

#endif
