/* fuzz_safetensors.c: libFuzzer target for the safetensors reader (formats/safetensors.c):
 * the header length field, the header JSON and every rule on dtypes, shapes and offsets, then
 * the mapped data. Input: 8 bytes (little-endian) choosing the size of the data after the
 * header, modulo 1 MiB; then the header text. The file is written with its data as a hole. */
#include <string.h>

#include "fuzz_util.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    if (n < 8) return 0;
    uint64_t extra = 0;
    for (int i = 7; i >= 0; i--) extra = extra << 8 | data[i];
    size_t len = n - 8;
    const char *dir = fz_tmpdir();
    char path[8192];
    snprintf(path, sizeof path, "%s/in.safetensors", dir);
    unsigned char *file = malloc(n);
    if (!file) return 0;
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(file + 8, data + 8, len);
    bool ok = fz_write(dir, "in.safetensors", file, n) &&
              truncate(path, (off_t)(n + extra % (1u << 20))) == 0;
    free(file);
    hc_st_file *f = NULL;
    hc_err err = {0};
    if (!ok || hc__st_open(path, &f, &err) != HC_OK) {
        fz_expect(false, err.msg);
        return 0;
    }
    if (hc__st_map(f, &err) == HC_OK) {
        volatile unsigned char sink = 0;
        for (size_t i = 0; i < f->ntensors; i++) {
            const unsigned char *d = hc__st_data(f, &f->tensors[i]);
            uint64_t bytes = f->tensors[i].end - f->tensors[i].begin;
            if (bytes) sink ^= d[0] ^ d[bytes - 1];
        }
        (void)sink;
    }
    hc__st_close(f);
    return 0;
}
