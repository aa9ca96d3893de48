/* safetensors.h: strict reader of one .safetensors file. The header is read with pread
 * (tensor bytes untouched) and parsed in one pass without a JSON tree, so its memory is the
 * header plus about 140 bytes a tensor (each entry takes at least 51 header bytes: at most a
 * few times the header); the data is mapped only when asked. */
#ifndef HC_SAFETENSORS_H
#define HC_SAFETENSORS_H

#include <stdint.h>

#include "base.h"

#define HC_ST_MAX_HEADER 100000000ull /* the reference reader's bound */
#define HC_ST_MAX_METADATA 65536u     /* __metadata__ pairs; more are refused */

typedef struct {
    char *name;
    hc_dtype dtype;
    int ndim;
    uint64_t shape[HC_MAX_DIMS];
    uint64_t numel;
    uint64_t begin, end; /* relative to the data start */
} hc_st_tensor;

typedef struct {
    char *path;
    int fd;
    uint64_t file_size;
    uint64_t header_len;
    uint64_t data_start; /* 8 + header_len */
    hc_st_tensor *tensors; /* sorted by begin */
    size_t ntensors;
    char **meta_keys, **meta_values; /* __metadata__ */
    size_t nmeta;
    const unsigned char *map; /* whole file when mapped, else NULL */
} hc_st_file;

/* Reads and validates the header of path: every rule of FORMATS.md section 1, and: each
 * entry's dtype, shape and data_offsets appear once (other fields are skipped, nested at most
 * 64 deep), __metadata__ keys are unique and at most HC_ST_MAX_METADATA. A path that is not a
 * regular file (a FIFO, a device) is refused without blocking. */
hc_status hc__st_open(const char *path, hc_st_file **out, hc_err *err);
/* Maps the file read-only; tensor bytes are then at map + data_start + begin. */
hc_status hc__st_map(hc_st_file *f, hc_err *err);
const void *hc__st_data(const hc_st_file *f, const hc_st_tensor *t);
void hc__st_close(hc_st_file *f);

/* Validates a header held in memory (used by hc__st_open and the fuzz/unit tests).
 * file_size is the size of the whole file. */
hc_status hc__st_parse_header(hc_st_file *f, const char *json, uint64_t len, hc_err *err);

#endif
