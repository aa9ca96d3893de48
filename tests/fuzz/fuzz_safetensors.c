/* fuzz_safetensors.c: libFuzzer target for the safetensors header parser. The first 8 bytes
 * of the input choose the pretended file size; the rest is the header text. */
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    if (n < 8) return 0;
    uint64_t extra = 0;
    memcpy(&extra, data, 8);
    size_t len = n - 8;
    char *hdr = malloc(len + 1);
    memcpy(hdr, data + 8, len);
    hdr[len] = 0;
    hc_st_file f = {.path = "fuzz", .fd = -1, .header_len = len, .data_start = 8 + len,
                    .file_size = 8 + len + (extra % (1u << 20))};
    hc_err err = {0};
    hc_st_parse_header(&f, hdr, len, &err);
    for (size_t i = 0; i < f.ntensors; i++) free(f.tensors[i].name);
    free(f.tensors);
    for (size_t i = 0; i < f.nmeta; i++) free(f.meta_keys[i]), free(f.meta_values[i]);
    free(f.meta_keys);
    free(f.meta_values);
    free(hdr);
    return 0;
}
