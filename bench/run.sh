#!/bin/sh
# run.sh: runs the benchmarks (not tests) with small defaults: sh bench/run.sh BUILD_DIR
# Sizes can be raised: CONTAINER_MB (default 1024), SHARDS (64), SHARD_MB (16), LAYERS (6,
# about 105 MB each); HC_BENCH_RUNS (default 3) sets the container runs, each printed as well
# as their median.
set -eu
build=${1:-build}
echo "machine: $(uname -m), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
"$build/hconvert" --version
tmp=${TMPDIR:-/tmp}
echo
HC_BENCH_VERBOSE=1 "$build/bench/container_bench" "${CONTAINER_MB:-1024}" "$tmp/hconvert-bench.$$"
echo
"$build/bench/inspect_bench" "${SHARDS:-64}" "${SHARD_MB:-16}" "$tmp/hconvert-inspect-bench.$$"
echo
"$build/bench/validate_bench" "${LAYERS:-6}" "$tmp/hconvert-validate-bench.$$"
echo
"$build/bench/convert_bench" "${LAYERS:-6}" "$tmp/hconvert-convert-bench.$$"
