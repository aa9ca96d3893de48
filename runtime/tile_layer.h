/* tile_layer.h: a container's tiled layer as the executors run it (runtime/tile_layer.c). */
#ifndef HC_TILE_LAYER_H
#define HC_TILE_LAYER_H

#include "layout.h"

/* The tiled layer NAME of a container, as both executors run it: its tensor (stored raw),
 * its parsed layout_params, and for act-order its permutation NAME.perm (a raw I32 [K] whose
 * every entry is a column index < K; NULL without act-order). HC_NOTFOUND when NAME is not
 * a tiled tensor of the container. */
hc_status hc__tile_layer(const hc_container *c, const char *name, const hc_tensor_info **t,
                        hc_tile_params *p, const int32_t **perm, hc_err *err);

/* HC_INVALID, naming the layer, its shape and the call's, unless a call with K = k, N = n on
 * expert `expert` fits the layer p. */
hc_status hc__tile_layer_call(const char *name, const hc_tile_params *p, uint64_t k, uint64_t n,
                              uint32_t expert, hc_err *err);

#endif
