/* gpu_cuda.c: the CUDA runtime loaded at run time (dlopen), so that the program starts and runs
 * its CPU paths where there is no driver; the table is gpu_cuda.h's. */
#include "gpu_cuda.h"

#include <dlfcn.h>
#include <pthread.h>

hc_cuda_api hc__cuda;
static pthread_mutex_t cuda_mu = PTHREAD_MUTEX_INITIALIZER;

hc_status hc__cuda_load(hc_err *err) {
    hc_cuda_api *cu = &hc__cuda;
    pthread_mutex_lock(&cuda_mu);
    if (!cu->loaded && !cu->failed) {
        static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                            "/usr/local/cuda/lib64/libcudart.so"};
        void *h = hc__dlopen_first(names, sizeof names / sizeof names[0]);
        if (h) {
            *(void **)&cu->count = dlsym(h, "cudaGetDeviceCount");
            *(void **)&cu->attr = dlsym(h, "cudaDeviceGetAttribute");
            *(void **)&cu->set = dlsym(h, "cudaSetDevice");
            *(void **)&cu->malloc_ = dlsym(h, "cudaMalloc");
            *(void **)&cu->free_ = dlsym(h, "cudaFree");
            *(void **)&cu->memcpy_ = dlsym(h, "cudaMemcpy");
            *(void **)&cu->lib_load = dlsym(h, "cudaLibraryLoadData");
            *(void **)&cu->lib_unload = dlsym(h, "cudaLibraryUnload");
            *(void **)&cu->lib_kernel = dlsym(h, "cudaLibraryGetKernel");
            *(void **)&cu->launch = dlsym(h, "cudaLaunchKernel");
            *(void **)&cu->sync = dlsym(h, "cudaDeviceSynchronize");
            *(void **)&cu->errstr = dlsym(h, "cudaGetErrorString");
            *(void **)&cu->ev_create = dlsym(h, "cudaEventCreate");
            *(void **)&cu->ev_record = dlsym(h, "cudaEventRecord");
            *(void **)&cu->ev_sync = dlsym(h, "cudaEventSynchronize");
            *(void **)&cu->ev_elapsed = dlsym(h, "cudaEventElapsedTime");
            *(void **)&cu->ev_destroy = dlsym(h, "cudaEventDestroy");
            *(void **)&cu->memset_ = dlsym(h, "cudaMemset");
            *(void **)&cu->func_attr = dlsym(h, "cudaFuncSetAttribute");
            *(void **)&cu->occupancy = dlsym(h, "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
            *(void **)&cu->launch_ex = dlsym(h, "cudaLaunchKernelExC");
        }
        void *drv = h ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
        if (drv) *(void **)&cu->tmap_encode = dlsym(drv, "cuTensorMapEncodeTiled");
        cu->loaded = h && cu->count && cu->attr && cu->set && cu->malloc_ && cu->free_ &&
                     cu->memcpy_ && cu->lib_load && cu->lib_unload && cu->lib_kernel &&
                     cu->launch && cu->sync && cu->errstr && cu->ev_create && cu->ev_record &&
                     cu->ev_sync && cu->ev_elapsed && cu->ev_destroy && cu->memset_ &&
                     cu->func_attr && cu->occupancy;
        cu->failed = !cu->loaded;
    }
    pthread_mutex_unlock(&cuda_mu);
    return cu->loaded ? HC_OK
                      : hc__fail(err, HC_UNSUPPORTED, "the CUDA runtime (libcudart.so) cannot be loaded");
}
