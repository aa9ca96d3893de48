/* jsonutil.c: checked access to cJSON values; duplicate-key detection (cJSON keeps every
 * duplicate member in its list, so a sorted scan finds them). */
#include "jsonutil.h"

#include <stdlib.h>

#include "base.h"

bool hc__json_u64(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    return hc__double_to_u64(v->valuedouble, out);
}

const char *hc__json_str(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *hc__json_duplicate_key(const cJSON *obj) {
    int n = cJSON_GetArraySize(obj);
    if (n < 2) return NULL;
    const char **names = malloc((size_t)n * sizeof *names);
    if (!names) return NULL;
    int k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) names[k++] = it->string ? it->string : "";
    const char *dup; /* NULL too when out of memory, as above */
    (void)hc__first_duplicate_name(names, (size_t)n, sizeof *names, &dup, NULL);
    free(names);
    return dup;
}
