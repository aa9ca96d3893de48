/* scales.c: the scale-sanity rule, once. A scale that is NaN, infinite, zero or negative makes
 * every weight of its group meaningless, so validate reports it (by class, naming the experts)
 * and convert refuses it; both classify through hc__scale_census_of, so they cannot disagree
 * about which scales are bad. The NVFP4 decoder holds its global divisor to the same rule
 * through hc__scale_class_of. */
#include <math.h>

#include "quant.h"

const char *const hc__scale_class_names[HC_SCALE_CLASSES] = {"NaN", "inf", "zero", "negative"};

int hc__scale_class_of(double s) {
    return isnan(s) ? HC_SCALE_NAN : isinf(s) ? HC_SCALE_INF : s == 0 ? HC_SCALE_ZERO
           : s < 0 ? HC_SCALE_NEGATIVE : -1;
}

void hc__scale_census_of(const hc_qtensor *q, uint64_t first, uint64_t n, double *sane,
                         hc_scale_census *c) {
    *c = (hc_scale_census){.n = n};
    const double *s = q->scales + first;
    for (uint64_t i = 0; i < n; i++) {
        int r = hc__scale_class_of(s[i]);
        if (r >= 0) c->count[r]++;
        else if (sane) sane[c->nsane++] = s[i];
        else c->nsane++;
    }
    for (int r = 0; r < HC_SCALE_CLASSES; r++) c->bad += c->count[r];
}
