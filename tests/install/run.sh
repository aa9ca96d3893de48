#!/bin/sh
# run.sh: installs hconvert into a temporary prefix and builds a runtime consumer against it
# with pkg-config, statically and dynamically; ends with "N passed, N failed".
B=${1:-build}
p=0
f=0
pre=$(mktemp -d)
check() { # label, command...
    l=$1
    shift
    if "$@" >"$pre/log" 2>&1; then p=$((p + 1)); echo "ok   install/$l"
    else f=$((f + 1)); echo "FAIL install/$l"; head -20 "$pre/log"; fi
}
# the shared libraries export the public API and nothing else
check exports_hcrt sh tests/install/exports.sh "$B/libhcrt.so" include/hcrt.h
check exports_hconvert sh tests/install/exports.sh "$B/libhconvert.so" include/hcrt.h include/hconvert.h
check internal_prefix sh tests/install/prefix.sh "$B/libhcrt.a" "$B/libhconvert.a" -- include/hcrt.h include/hconvert.h
check make_install make -s install BUILD="$B" PREFIX="$pre/usr"
export PKG_CONFIG_PATH="$pre/usr/lib/pkgconfig"
check pkgconfig_hcrt pkg-config --exists hcrt hconvert
check build_shared sh -c "cc tests/install/consumer.c -o $pre/consumer \$(pkg-config --cflags --libs hcrt)"
check build_static sh -c "cc tests/install/consumer.c -o $pre/consumer_static \$(pkg-config --cflags hcrt) $pre/usr/lib/libhcrt.a \$(pkg-config --libs-only-other --static hcrt) -lzstd -lcjson -lxxhash -lm"
check convert_installed "$pre/usr/bin/hconvert" convert tests/fixtures/ckpt/single "$pre/out"
check run_shared sh -c "LD_LIBRARY_PATH=$pre/usr/lib $pre/consumer $pre/out/model.hconvert | grep -qx '21 tensors'"
check run_static sh -c "$pre/consumer_static $pre/out/model.hconvert | grep -qx '21 tensors'"
rm -rf "$pre"
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
