// bf16.cuh: the bf16 arithmetic of the decoders and epilogues, each one PTX instruction
// (bf16x2 FMA, float32 -> bf16 rounding, f16 -> float32, a three-input logic op), so that the
// instruction count of a decode is what the code shows.
#ifndef HC_K_CODEC_BF16_CUH
#define HC_K_CODEC_BF16_CUH

#include "layout_core.h"

typedef unsigned short hc_u16; /* a bf16 (or f16) number's bits */

__device__ __forceinline__ unsigned bf2_fma(unsigned a, unsigned b, unsigned c) {
    unsigned d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
/* (lo, hi) rounded to the nearest bf16 pair, lo in the low half */
__device__ __forceinline__ unsigned bf2_pack(float lo, float hi) {
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}
__device__ __forceinline__ hc_u16 bf16_of(float f) {
    hc_u16 h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float f32_of_f16(hc_u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
/* h in both halves: one mov that ptxas folds into the instruction using it (an HMUL2 or HFMA2
 * operand's .H0_H0), where h * 0x10001 cost an IMAD a use (v101) */
__device__ __forceinline__ unsigned bf2_splat(hc_u16 h) {
    unsigned d;
    asm("mov.b32 %0, {%1, %1};" : "=r"(d) : "h"(h));
    return d;
}
/* (a & b) | c in one LOP3 (the compiler otherwise spends two on two immediates) */
__device__ __forceinline__ unsigned lop_and_or(unsigned a, unsigned b, unsigned c) {
    unsigned d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

#endif
