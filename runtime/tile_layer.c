/* tile_layer.c: a container's tiled layer as both executors (CPU and GPU) run it: the tensor,
 * its parsed layout_params and its act-order permutation, checked once here. It lives in the
 * runtime, not in contract/, because it reads a container (the contract only says what the
 * bytes mean). */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "tile_layer.h"

hc_status hc__tile_layer(const hc_container *c, const char *name, const hc_tensor_info **t,
                        hc_tile_params *p, const int32_t **perm, hc_err *err) {
    *t = hc_container_find(c, name);
    *perm = NULL;
    if (!*t || !(*t)->layout_params)
        return hc__fail(err, HC_NOTFOUND, "'%s' is not a tiled tensor of the container", name);
    cJSON *j = cJSON_Parse((*t)->layout_params);
    hc_status st = hc__tile_params_parse(j, (*t)->layout, p, name, err);
    cJSON_Delete(j);
    if (st) return st;
    if ((*t)->encoding != HC_ENC_RAW)
        return hc__fail(err, HC_INVALID, "tensor '%s': tiled tensors are stored raw", name);
    if (!p->perm) return HC_OK;
    char pn[1100];
    snprintf(pn, sizeof pn, "%s.perm", name);
    const hc_tensor_info *pt = hc_container_find(c, pn);
    if (!pt || pt->dtype != HC_DT_I32 || pt->encoding != HC_ENC_RAW || pt->ndim != 1 ||
        pt->shape[0] != p->K)
        return hc__fail(err, HC_INVALID, "tensor '%s': act-order permutation '%s' missing or not "
                       "a raw I32 [%llu]", name, pn, (unsigned long long)p->K);
    const int32_t *pm = hc_container_stored(c, pt);
    for (uint64_t i = 0; i < p->K; i++)
        if (pm[i] < 0 || (uint64_t)pm[i] >= p->K)
            return hc__fail(err, HC_INVALID, "tensor '%s': entry %llu out of range", pn,
                           (unsigned long long)i);
    *perm = pm;
    return HC_OK;
}

hc_status hc__tile_layer_call(const char *name, const hc_tile_params *p, uint64_t k, uint64_t n,
                              uint32_t expert, hc_err *err) {
    if (k == p->K && n == p->N && expert < p->E) return HC_OK;
    return hc__fail(err, HC_INVALID, "'%s' is [%llu, %llu] x %llu experts; called with K=%llu "
                    "N=%llu expert %u", name, (unsigned long long)p->N, (unsigned long long)p->K,
                    (unsigned long long)p->E, (unsigned long long)k, (unsigned long long)n, expert);
}
