/* gpu_cuda.h: the CUDA runtime as the GPU runtime's files call it -- a table of entry points
 * loaded with dlopen on first use (gpu_cuda.c), so that the library links no CUDA and runs its
 * CPU paths where there is none -- and CU(), the check every call goes through. */
#ifndef HC_GPU_CUDA_H
#define HC_GPU_CUDA_H

#include <cuda.h> /* types of cuTensorMapEncodeTiled only: the driver is loaded with dlopen */
#include <cuda_runtime_api.h>

#include "base.h"

typedef struct {
    int loaded, failed;
    cudaError_t (*count)(int *);
    cudaError_t (*attr)(int *, enum cudaDeviceAttr, int);
    cudaError_t (*set)(int);
    cudaError_t (*malloc_)(void **, size_t);
    cudaError_t (*free_)(void *);
    cudaError_t (*memcpy_)(void *, const void *, size_t, enum cudaMemcpyKind);
    cudaError_t (*lib_load)(cudaLibrary_t *, const void *, enum cudaJitOption *, void **,
                            unsigned, enum cudaLibraryOption *, void **, unsigned);
    cudaError_t (*lib_unload)(cudaLibrary_t);
    cudaError_t (*lib_kernel)(cudaKernel_t *, cudaLibrary_t, const char *);
    cudaError_t (*launch)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
    cudaError_t (*sync)(void);
    const char *(*errstr)(cudaError_t);
    cudaError_t (*ev_create)(cudaEvent_t *);
    cudaError_t (*ev_record)(cudaEvent_t, cudaStream_t);
    cudaError_t (*ev_sync)(cudaEvent_t);
    cudaError_t (*ev_elapsed)(float *, cudaEvent_t, cudaEvent_t);
    cudaError_t (*ev_destroy)(cudaEvent_t);
    cudaError_t (*memset_)(void *, int, size_t);
    cudaError_t (*func_attr)(const void *, enum cudaFuncAttribute, int);
    cudaError_t (*occupancy)(int *, const void *, int, size_t);
    cudaError_t (*launch_ex)(const cudaLaunchConfig_t *, const void *, void **); /* optional */
    /* from libcuda.so.1, optional: without it the warp-specialised kernels (TMA) are not used */
    CUresult (*tmap_encode)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                            const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                            const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                            CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
} hc_cuda_api;

/* Filled by hc__cuda_load; read-only once loaded. */
extern hc_cuda_api hc__cuda;

/* Loads the CUDA runtime once per process (thread-safe); HC_UNSUPPORTED when it cannot. */
hc_status hc__cuda_load(hc_err *err);

/* A CUDA call in a function with `hc_err err`, `hc_status st` and an `out:` label: on failure
 * the message names what was being done and CUDA's reason. */
#define CU(call, what)                                                                       \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            st = hc__fail(&err, HC_IO, "CUDA: %s: %s", what, hc__cuda.errstr(e_));             \
            goto out;                                                                        \
        }                                                                                    \
    } while (0)

#endif
