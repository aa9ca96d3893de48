// mma_sync.cuh: the tensor-core instructions of the small-M kernels and of hc_mma_gemm (sm_80
// and later): mma.sync m16n8k16 (bf16 in, float32 accumulators; weights are the A operand,
// tokens N) and ldmatrix, which loads its B fragments from shared memory.
#ifndef HC_K_MMA_SYNC_CUH
#define HC_K_MMA_SYNC_CUH

/* c[0..3] += A (a[0..3]: 16 rows x k16) x B (b0, b1: k16 x 8 tokens) */
__device__ __forceinline__ void mma_bf16(float *c, const unsigned *a, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* d = a b + c (c other registers: a sum that starts from c without copying it) */
__device__ __forceinline__ void mma_bf16_from(float *d, const unsigned *a, unsigned b0, unsigned b1,
                                              const float *c) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
}
/* four 8 x 8 b16 matrices from shared memory: lanes 8i..8i+7 give the row addresses of matrix
 * i, which lands in r_i */
__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned &r0, unsigned &r1,
                                            unsigned &r2, unsigned &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

#endif
