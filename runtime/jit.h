/* jit.h: NVRTC, loaded at run time (dlopen), compiling the kernels/ sources built into the
 * library, with an on-disk cache of cubins keyed by source, options, NVRTC version and
 * architecture. Needs no GPU: CI compiles every kernel variant through it. */
#ifndef HC_JIT_H
#define HC_JIT_H

#include <stddef.h>

#include "base.h"

/* The kernel sources built into the library (generated from kernels/ by the Makefile). */
typedef struct {
    const char *name; /* file name, as #include sees it */
    const char *text;
} hc_kernel_source;
extern const hc_kernel_source hc__kernel_sources[]; /* ends with {NULL, NULL} */

/* Compiles source `main` (with every built-in file available as a header) for arch
 * ("sm_90a") with extra options; returns a malloc'd cubin. Uses and fills the cache unless
 * hc__jit_set_cache(false) turned it off; HC_CACHE_DIR overrides the cache folder. An entry whose header,
 * length or hash does not check (docs/gpu.md) is rebuilt and rewritten; a cache that cannot be
 * written costs only the compile (hc_gpu_cache_unstored (hcrt.h) tells). HC_UNSUPPORTED when NVRTC
 * cannot be loaded. */
hc_status hc__jit_compile(const char *main, const char *arch, const char *const *opts, int nopts,
                         void **cubin, size_t *size, hc_err *err);

/* What the cache did for one compile. */
typedef enum {
    HC_JIT_CACHE_OFF = 0, /* not used (hc__jit_set_cache(false)) */
    HC_JIT_CACHE_HIT,     /* a valid entry was loaded */
    HC_JIT_CACHE_STORED,  /* compiled and stored */
    HC_JIT_CACHE_UNSTORED /* compiled; the entry could not be written: why says so */
} hc_jit_cache_state;
typedef struct {
    hc_jit_cache_state state;
    bool rebuilt;  /* an entry was there but failed its check (bad says how) */
    char bad[256];
    char why[640]; /* names the cache folder and the failing step */
} hc_jit_cache_note;
/* hc__jit_compile, also saying what the cache did. */
hc_status hc__jit_compile_note(const char *main, const char *arch, const char *const *opts,
                              int nopts, void **cubin, size_t *size, hc_jit_cache_note *note,
                              hc_err *err);
/* The same, never from the cache, also returning NVRTC's log (malloc'd; with
 * "--ptxas-options=-v" among opts it holds ptxas's registers, spills and performance notes). */
hc_status hc__jit_compile_log(const char *main, const char *arch, const char *const *opts,
                             int nopts, void **cubin, size_t *size, char **log, hc_err *err);
/* Whether the compiles of this process (all threads) use the cache: on by default; tests turn
 * it off to build every variant cold. */
void hc__jit_set_cache(bool on);
/* NVRTC's version, or HC_UNSUPPORTED when it cannot be loaded. */
hc_status hc__jit_version(int *major, int *minor, hc_err *err);

#endif
