/* shard.h: tensor-parallel cuts of a canonical quantized tensor: column-parallel layers split
 * their rows (N), row-parallel layers their columns (K). A K cut that falls inside a scale
 * group is re-expressed losslessly with a smaller group (the parent scale repeated). */
#ifndef HC_SHARD_H
#define HC_SHARD_H

#include "quant.h"

/* The [begin, end) range rank takes of a dimension of size d split tp ways: equal pieces of
 * ceil(d / tp), the last ones shorter (or empty). */
void hc__shard_range(uint64_t d, unsigned tp, unsigned rank, uint64_t *begin, uint64_t *end);

/* The scale group along K of rank's part of q for a layer of role 'c' or 'r': the source
 * group; for a column cut inside a group gcd(group, cut offset); for an act-order column cut
 * the gcd of the column counts each source group keeps in the part. 0: out of memory. */
uint64_t hc__shard_group_k(const hc_qtensor *q, char role, unsigned rank, unsigned tp);

/* out = rank's part of q for a layer of role 'c' (rows) or 'r' (columns); q's codes may be
 * absent (planning). Fails, with why, when the cut cannot be made losslessly. */
bool hc__qtensor_shard(const hc_qtensor *q, char role, unsigned rank, unsigned tp, hc_qtensor *out,
                      char *why, size_t why_len);

#endif
