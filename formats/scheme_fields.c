/* scheme_fields.c: the fields of a quantization config as its resolvers read them: integer
 * values, and the JSON type each field must have, a finding naming the field when it has
 * another. */
#include <math.h>
#include <stdio.h>

#include "scheme_int.h"

int64_t hc__cfg_num(const cJSON *v, int64_t dflt) {
    if (!v || cJSON_IsNull(v)) return dflt;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= -1e9 && d <= 1e9) || d != floor(d)) return HC_BAD_NUM;
    return (int64_t)d;
}

static unsigned json_bit(const cJSON *v) {
    return cJSON_IsNull(v) ? T_NULL : cJSON_IsBool(v) ? T_BOOL : cJSON_IsNumber(v) ? T_NUM
           : cJSON_IsString(v) ? T_STR : cJSON_IsArray(v) ? T_ARR : cJSON_IsObject(v) ? T_OBJ : 0;
}

static const char *json_type(const cJSON *v) {
    switch (json_bit(v)) {
    case T_NULL: return "null";
    case T_BOOL: return "a boolean";
    case T_NUM: return "a number";
    case T_STR: return "a string";
    case T_ARR: return "an array";
    case T_OBJ: return "an object";
    }
    return "not a JSON value";
}

bool hc__cfg_typed(hc_findings *f, const char *cfgname, const char *path, const cJSON *v,
                   unsigned ok, const char *want) {
    if (!v || (json_bit(v) & ok)) return true;
    hc__findings_add(f, HC_SEV_ERROR, cfgname, "config type", 0, NULL, 0,
                    "%s: '%s' is %s; it must be %s", cfgname, path, json_type(v), want);
    return false;
}

bool hc__cfg_field_typed(hc_findings *f, const char *cfgname, const char *prefix,
                         const cJSON *obj, const char *key, unsigned ok, const char *want) {
    char path[256];
    snprintf(path, sizeof path, "%s%s", prefix, key);
    return hc__cfg_typed(f, cfgname, path, cJSON_GetObjectItemCaseSensitive(obj, key), ok, want);
}

bool hc__cfg_strings_typed(hc_findings *f, const char *cfgname, const char *path, const cJSON *v,
                           unsigned ok) {
    if (!hc__cfg_typed(f, cfgname, path, v, ok | T_ARR, "a list of strings")) return false;
    const cJSON *t, *list = cJSON_IsArray(v) ? v : NULL;
    int i = 0;
    cJSON_ArrayForEach(t, list) {
        char p[300];
        snprintf(p, sizeof p, "%s[%d]", path, i++);
        if (!hc__cfg_typed(f, cfgname, p, t, T_STR, "a string")) return false;
    }
    return true;
}
