#!/bin/sh
# run.sh: builds the libFuzzer targets with clang and runs each for $1 seconds (default 60),
# seeded with the fixtures. Not part of `make test`: run it as `make fuzz`.
set -e
S=${1:-60}
O=build/fuzz
mkdir -p $O/corpus_st $O/corpus_ct
LIBSRC="runtime/base.c runtime/jsonutil.c runtime/container.c formats/safetensors.c"
CF="-g -O1 -std=c11 -D_GNU_SOURCE -Iinclude -Iruntime -Iformats -fsanitize=fuzzer,address,undefined"
clang $CF tests/fuzz/fuzz_safetensors.c $LIBSRC -o $O/fuzz_safetensors -lcjson -lxxhash -lzstd -lm
clang $CF -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION tests/fuzz/fuzz_container.c $LIBSRC -o $O/fuzz_container -lcjson -lxxhash -lzstd -lm
# seeds: safetensors headers (with an 8-byte size prefix) and small containers
for f in tests/fixtures/st/*.safetensors tests/fixtures/corrupt/*.safetensors; do
    python3 - "$f" "$O/corpus_st/$(basename "$f")" <<'PY' || true
import struct, sys
d = open(sys.argv[1], "rb").read()
if len(d) >= 8:
    n = struct.unpack_from("<Q", d)[0]
    if n <= len(d) - 8:
        open(sys.argv[2], "wb").write(struct.pack("<Q", len(d) - 8 - n) + d[8:8 + n])
PY
done
build/hconvert convert tests/fixtures/st/escape_name.safetensors $O/ct1 >/dev/null
cp $O/ct1/model.hconvert $O/corpus_ct/escape.hconvert
$O/fuzz_safetensors -max_total_time=$S -max_len=4096 $O/corpus_st 2>&1 | tail -3
$O/fuzz_container -max_total_time=$S -max_len=65536 $O/corpus_ct 2>&1 | tail -3
