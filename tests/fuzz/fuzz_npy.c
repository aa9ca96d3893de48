/* fuzz_npy.c: libFuzzer target for the .npy reader (convert/npy.c), which reads the inputs
 * and expected outputs of `hconvert run` and the tests: the input is a whole .npy file, read
 * once as float32 and once as integers. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "npy.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    const char *dir = fz_tmpdir();
    char path[8192];
    snprintf(path, sizeof path, "%s/in.npy", dir);
    if (!fz_write(dir, "in.npy", data, n)) return 0;
    static const hc_npy_kind kinds[] = {HC_NPY_F32, HC_NPY_I32};
    bool any = false;
    hc_err err = {0};
    for (int k = 0; k < 2; k++) {
        uint64_t shape[2];
        void *v = NULL;
        hc_err e = {0};
        if (hc__npy_read_2d(path, kinds[k], shape, &v, &e) == HC_OK) any = true, free(v);
        else if (!err.code) err = e;
    }
    fz_expect(any, err.msg); /* one of the two kinds fits an accepted file */
    return 0;
}
