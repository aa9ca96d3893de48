/* fuzz_archive.c: libFuzzer target for checkpoint archives (formats/archive.c: libarchive's
 * tar, zip and their gzip/zstd/xz/bzip2/lz4 filters; entry names, types and links), opened as
 * a checkpoint the way `hconvert` opens one: extracted into $TMPDIR, the checkpoint folder
 * found inside, its shards and configs read, then the model pass. The input is the archive. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    const char *dir = fz_tmpdir();
    char path[8192];
    snprintf(path, sizeof path, "%s/in.archive", dir);
    hc_err err = {0};
    if (fz_write(dir, "in.archive", data, n)) fz_expect(fz_checkpoint_pass(path, &err), err.msg);
    return 0;
}
