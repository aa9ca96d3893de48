/* checkpoint_json.c: the JSON files of a checkpoint (config.json, the quantization configs,
 * the shard index), read strictly: bounded size, valid UTF-8, one object, no duplicate key at
 * any level; integers a double cannot hold exactly are warned about. */
#include <math.h>
#include <stdlib.h>

#include "checkpoint_int.h"
#include "jsonutil.h"

#define MAX_JSON_FILE (256ull << 20)

/* Walks a parsed JSON value: duplicate keys at any depth are an error; integers beyond 2^53
 * cannot be held exactly by a double and are reported as warnings. */
static hc_status check_json_tree(const cJSON *v, const char *path, hc_ckpt *c, hc_err *err) {
    if (cJSON_IsObject(v)) {
        const char *dup = hc__json_duplicate_key(v);
        if (dup) {
            char esc[256];
            return hc__fail(err, HC_INVALID, "'%s': duplicate key '%s'", path,
                           hc__escape(dup, esc, sizeof esc));
        }
    }
    if (cJSON_IsNumber(v) && c && fabs(v->valuedouble) >= HC_JSON_INT_LIMIT &&
        v->valuedouble == floor(v->valuedouble) && v->string) {
        char esc[256];
        hc__ck_warn(c, "'%s': integer '%s' is beyond 2^53 and may not be exact when read as a "
                    "number (kept verbatim in the container)", path,
                    hc__escape(v->string, esc, sizeof esc));
    }
    const cJSON *it;
    if (cJSON_IsObject(v) || cJSON_IsArray(v))
        cJSON_ArrayForEach(it, v) HC_TRY(check_json_tree(it, path, c, err));
    return HC_OK;
}

hc_status hc__json_parse(const char *data, size_t n, const char *name, cJSON **out, hc_err *err) {
    *out = NULL;
    if (!hc__utf8_valid(data, n)) return hc__fail(err, HC_INVALID, "'%s' is not valid UTF-8", name);
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(data, n, &end, 0);
    if (!j) {
        unsigned long long pos = end && end >= data ? (unsigned long long)(end - data) : 0;
        return hc__fail(err, HC_INVALID, "'%s' is not valid JSON (error near byte %llu)", name, pos);
    }
    for (const char *p = end; p < data + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(j);
            return hc__fail(err, HC_INVALID, "'%s' has data after the JSON value", name);
        }
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return hc__fail(err, HC_INVALID, "'%s' is not a JSON object", name);
    }
    hc_status st = check_json_tree(j, name, NULL, err);
    if (st) {
        cJSON_Delete(j);
        return st;
    }
    *out = j;
    return HC_OK;
}

hc_status hc__json_load(const char *path, cJSON **out, char **text, size_t *len, hc_err *err) {
    char *data = NULL;
    size_t n = 0;
    *out = NULL;
    HC_TRY(hc__read_file(path, MAX_JSON_FILE, &data, &n, err));
    hc_status st = hc__json_parse(data, n, path, out, err);
    if (!st && text) *text = data, *len = n;
    else free(data);
    return st;
}

hc_status hc__cfg_int(const cJSON *cfg, const char *file, const char *key, int64_t lo, int64_t hi,
                     int64_t *out, hc_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v) return hc__fail(err, HC_INVALID, "'%s': missing '%s'", file, key);
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || d != floor(d) || d < (double)lo || d > (double)hi ||
        fabs(d) >= HC_JSON_INT_LIMIT)
        return hc__fail(err, HC_INVALID, "'%s': '%s' must be an integer in [%lld, %lld]", file, key,
                       (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return HC_OK;
}

/* Loads root/name when it exists (*out stays NULL when it does not). */
static hc_status load_json_member(hc_ckpt *c, const char *name, cJSON **out, char **text,
                                  size_t *len, hc_err *err) {
    hc_status st = hc__ck_check_member(c, name, err);
    if (st == HC_NOTFOUND) {
        hc__err_clear(err);
        return HC_OK;
    }
    if (st) return st;
    char *path = hc__asprintf("%s/%s", c->root, name);
    st = path ? hc__json_load(path, out, text, len, err) : hc__fail(err, HC_NOMEM, "out of memory");
    free(path);
    return st;
}

/* config.json, then quantize_config.json or else quant_config.json, where they exist. */
hc_status hc__ck_load_configs(hc_ckpt *c, hc_err *err) {
    HC_TRY(load_json_member(c, "config.json", &c->config, &c->config_text, &c->config_len, err));
    if (c->config) HC_TRY(check_json_tree(c->config, "config.json", c, err));
    static const char *const qnames[] = {"quantize_config.json", "quant_config.json"};
    for (size_t i = 0; i < 2 && !c->quant_config; i++) {
        HC_TRY(load_json_member(c, qnames[i], &c->quant_config, NULL, NULL, err));
        if (c->quant_config && !(c->quant_config_name = hc__strdup(qnames[i])))
            return hc__fail(err, HC_NOMEM, "out of memory");
    }
    return HC_OK;
}
