#!/bin/sh
# install-deps.sh: installs the Debian packages hconvert builds and tests with, when missing.
# The one place dependencies are installed; the Makefile calls it before any build.
# python3-jsonschema is for the tests only (they check --json output against schemas/).
# clang and libclang-rt-14-dev are for the fuzz targets (tests/fuzz/): libFuzzer's runtime,
# libclang_rt.fuzzer-x86_64.a, is in libclang-rt-14-dev, which clang only recommends.
set -eu
pkgs="libzstd-dev libcjson-dev libarchive-dev libxxhash-dev pkg-config zstd python3-jsonschema"
pkgs="$pkgs clang libclang-rt-14-dev"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq >&2 || true
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
