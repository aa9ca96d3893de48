/* jsonutil.h: checked access to cJSON values (numbers are doubles: integers must be exact and
 * below 2^53) and JSON text checks shared by the readers. */
#ifndef HC_JSONUTIL_H
#define HC_JSONUTIL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

/* True when v is a number holding an integer in [0, 2^53). */
bool hc__json_u64(const cJSON *v, uint64_t *out);
/* Object member that must be a string / number; NULL when absent or of another type. */
const char *hc__json_str(const cJSON *obj, const char *key);
/* Names a duplicated member of obj (the first in sorted order), or NULL when all differ. */
const char *hc__json_duplicate_key(const cJSON *obj);

#endif
