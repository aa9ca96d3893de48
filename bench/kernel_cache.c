/* kernel_cache.c (a bench tool, no GPU needed): fills the kernel cache (HC_CACHE_DIR, or the
 * runtime's default folder) with every module the GPU tests and benchmarks load on sm_90a --
 * the reference GEMM, and for each layout the tests generate (tile_synth.h's synth_specs) its
 * dense kernels, its grouped MoE kernels and the routing -- through hc_gpu_precompile, the path
 * `hconvert convert --target sm90` precompiles with, so the keys are the runtime's own. Run here
 * (NVRTC needs no GPU) and carried to the lent GPU machine, it spares each fresh machine the
 * minutes its first test run spends compiling (bench/device_run.sh copies a carried .kcache
 * into the machine's cache folder). An entry helps only where the machine's NVRTC has the
 * same major.minor version as this one's (part of the key; a miss costs the compile, as
 * before).
 * usage: kernel_cache [ARCH]   (default sm_90a) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hconvert.h"
#include "hcrt.h"
#include "gpu_int.h"
#include "moe_synth.h"

int main(int argc, char **argv) {
    const char *arch = argc > 1 ? argv[1] : "sm_90a";
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-kernel-cache-%d.hconvert", (int)getpid());
    unsigned total = 0;
    int bad = 0;
    /* the reference module every hc_gpu opens with */
    void *cubin = NULL;
    size_t size = 0;
    hc_err err = {0};
    if (hc__gpu_ref_compile(arch, &cubin, &size, &err)) {
        fprintf(stderr, "kernel_cache: tile_gemm.cu: %s\n", err.msg);
        bad = 1;
    }
    free(cubin);
    for (size_t si = 0; si < SYNTH_SPECS; si++) {
        const mcfg cf = {2, 128, 64, G_SPLIT, false, false, false, NULL};
        hc_container *c = NULL;
        unsigned built = 0;
        if (write_block(path, &synth_specs[si], &cf, 5 + si, NULL, msg, sizeof msg) ||
            hc_container_open(path, 0, &c, msg, sizeof msg) ||
            hc_gpu_precompile(c, arch, &built, msg, sizeof msg)) {
            fprintf(stderr, "kernel_cache: %s: %s\n", synth_specs[si].label, msg);
            bad = 1;
        } else {
            printf("%s: %u modules\n", synth_specs[si].label, built);
            total += built;
        }
        hc_container_free(c);
        unlink(path);
    }
    printf("kernel_cache: %u modules for %s (and the reference GEMM)%s\n", total, arch,
           bad ? "; some failed" : "");
    return bad;
}
