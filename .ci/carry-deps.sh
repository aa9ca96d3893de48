#!/bin/sh
# carry-deps.sh: builds .deps/ (ignored) for the lent GPU machine, which cannot install packages:
# the headers and libraries it lacks, taken from this machine's Debian packages (installed by
# install-deps.sh). There: make HC_DEPS=.deps gpu-test, with .deps named in the device call's
# carry. See bench/NOTES.md for what that machine has.
set -eu
cd "$(dirname "$0")/.."
./.ci/install-deps.sh
lib=/usr/lib/x86_64-linux-gnu
rm -rf .deps
mkdir -p .deps/include/cjson .deps/lib
cp /usr/include/zstd.h /usr/include/zstd_errors.h /usr/include/xxhash.h /usr/include/xxh3.h \
   /usr/include/archive.h /usr/include/archive_entry.h .deps/include/
cp /usr/include/cjson/cJSON.h .deps/include/cjson/
# the bench's cuBLASLt peer: the device has the library but may lack its headers
for h in cublasLt.h cublas_api.h cuda.h; do
    [ -f /usr/local/cuda/include/$h ] && cp /usr/local/cuda/include/$h .deps/include/
done
cp "$lib/libzstd.a" "$lib/libxxhash.a" .deps/lib/
for l in libcjson.so.1 libarchive.so.13; do
    cp -L "$lib/$l" .deps/lib/
    cp -L "$lib/$l" ".deps/lib/${l%.so.*}.so" # the name -l looks for
done
grep -qx '/.deps/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.deps/' >> .git/info/exclude; }
du -sh .deps
