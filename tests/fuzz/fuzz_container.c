/* fuzz_container.c: libFuzzer target for the container reader: the input is a whole file
 * (held in a memfd), opened, verified, and every tensor decoded. Built with
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION so open skips hash checks and reaches the parser. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hcrt.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    int fd = memfd_create("fuzz", 0);
    if (fd < 0) return 0;
    if (write(fd, data, n) != (ssize_t)n) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    hc_container *c = NULL;
    char msg[1024];
    if (hc_container_open(path, 0, &c, msg, sizeof msg) == HC_OK) {
        hc_container_verify(c, NULL);
        for (size_t i = 0; i < hc_container_tensor_count(c); i++) {
            const void *d;
            void *owned;
            if (hc_container_tensor_data(c, hc_container_tensor(c, i), &d, &owned) == HC_OK)
                free(owned);
        }
        hc_container_free(c);
    }
    close(fd);
    return 0;
}
