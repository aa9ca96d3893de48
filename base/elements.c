/* elements.c: decoders of the element types hconvert reads (E2M1, E4M3, E5M2, E8M0, F16,
 * BF16 and the plain types), shared by the format decoders and the runtime. */
#include "elements.h"

#include <math.h>
#include <string.h>

double hc__fp4_e2m1(unsigned code) {
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    double v = mag[code & 7];
    return (code & 8) ? -v : v;
}

double hc__fp8_e4m3(unsigned b) {
    unsigned e = (b >> 3) & 15, m = b & 7;
    double s = (b & 0x80) ? -1.0 : 1.0;
    if (e == 15 && m == 7) return NAN;
    if (e == 0) return s * ldexp((double)m, -9); /* subnormal: m/8 * 2^-6 */
    return s * ldexp(1.0 + (double)m / 8.0, (int)e - 7);
}

double hc__fp8_e5m2(unsigned b) {
    unsigned e = (b >> 2) & 31, m = b & 3;
    double s = (b & 0x80) ? -1.0 : 1.0;
    if (e == 31) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, -16);
    return s * ldexp(1.0 + (double)m / 4.0, (int)e - 15);
}

double hc__e8m0(unsigned b) {
    b &= 0xFF;
    if (b == 0xFF) return NAN;
    uint32_t bits = b ? b << 23 : 0x00400000u; /* 2^(b-127); b = 0 is the float subnormal 2^-127 */
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* IEEE half to float by bits (every half is exact in float): no libm call per value. */
static double half_to_double(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023, bits;
    float f;
    if (e == 0) { /* zero or subnormal: m x 2^-24, exact in float */
        f = (float)m * 5.9604644775390625e-8f;
        return sign ? -(double)f : (double)f;
    }
    bits = e == 31 ? sign | 0x7F800000u | m << 13 : sign | (e + 112) << 23 | m << 13;
    memcpy(&f, &bits, 4);
    return f;
}

bool hc__read_scalar(const void *data, hc_dtype dt, uint64_t i, double *out) {
    const unsigned char *p = data;
    switch (dt) {
    case HC_DT_F32: {
        float f;
        memcpy(&f, p + 4 * i, 4);
        *out = f;
        return true;
    }
    case HC_DT_F64: memcpy(out, p + 8 * i, 8); return true;
    case HC_DT_F16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        *out = half_to_double(h);
        return true;
    }
    case HC_DT_BF16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        *out = f;
        return true;
    }
    case HC_DT_F8_E4M3: *out = hc__fp8_e4m3(p[i]); return true;
    case HC_DT_F8_E5M2: *out = hc__fp8_e5m2(p[i]); return true;
    case HC_DT_F8_E8M0: *out = hc__e8m0(p[i]); return true;
    case HC_DT_U8:
    case HC_DT_BOOL: *out = p[i]; return true;
    case HC_DT_I8: *out = (int8_t)p[i]; return true;
    case HC_DT_I16: {
        int16_t v;
        memcpy(&v, p + 2 * i, 2);
        *out = v;
        return true;
    }
    case HC_DT_U16: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        *out = v;
        return true;
    }
    case HC_DT_I32: {
        int32_t v;
        memcpy(&v, p + 4 * i, 4);
        *out = v;
        return true;
    }
    case HC_DT_U32: {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        *out = v;
        return true;
    }
    case HC_DT_I64: {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        *out = (double)v;
        return true;
    }
    case HC_DT_U64: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        *out = (double)v;
        return true;
    }
    default: return false;
    }
}

