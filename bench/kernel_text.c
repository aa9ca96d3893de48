/* kernel_text.c: compiles one kernel module with the NVRTC of a libhcrt build, never from the
 * cache, and writes its cubin to a file: bench/kernel_text.sh runs it against two builds (two
 * revisions of kernels/) and compares the machine code of every kernel of every module.
 * usage: kernel_text OUT.cubin ARCH SOURCE [NVRTC OPTION...] (SOURCE: "tile_mma.cu") */
#include <stdio.h>
#include <stdlib.h>

#include "jit.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s OUT.cubin ARCH SOURCE [NVRTC OPTION...]\n", argv[0]);
        return 2;
    }
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    hc_err err = {0};
    const char *const *opts = (const char *const *)argv + 4;
    if (KT_COMPILE_LOG(argv[3], argv[2], opts, argc - 4, &cubin, &size, &log, &err)) {
        fprintf(stderr, "%s for %s: %s\n", argv[3], argv[2], err.msg);
        free(log);
        return 1;
    }
    FILE *fp = fopen(argv[1], "wb");
    int bad = !fp || fwrite(cubin, 1, size, fp) != size;
    if (fp && fclose(fp)) bad = 1;
    if (bad) fprintf(stderr, "%s: cannot write the cubin\n", argv[1]);
    free(cubin), free(log);
    return bad;
}
