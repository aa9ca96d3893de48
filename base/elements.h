/* elements.h: element decoders (E2M1, E4M3, E5M2, E8M0, F16, BF16, plain types) shared by
 * the format decoders, the layouts and the CPU executor. */
#ifndef HC_ELEMENTS_H
#define HC_ELEMENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "hcrt.h"


double hc__fp4_e2m1(unsigned code);
double hc__fp8_e4m3(unsigned byte); /* NaN for S.1111.111 */
double hc__fp8_e5m2(unsigned byte);
double hc__e8m0(unsigned byte);     /* NaN for 0xFF */
/* Reads element i of a tensor of dtype dt as float64 (plain floats, ints, fp8). */
bool hc__read_scalar(const void *data, hc_dtype dt, uint64_t i, double *out);

#endif
