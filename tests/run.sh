#!/bin/sh
# run.sh: runs every test (unit tests plain and under ASan+UBSan, CLI tests with both builds,
# the install check, the GPU test programs without a GPU, the fuzz targets' regression inputs and a short round of each)
# and ends with the plain line "N passed, N failed" summed over all of them.
B=${1:-build}
P=0
F=0
log=$(mktemp)
run() { # label, command...
    label=$1
    shift
    echo "== $label"
    "$@" 2>&1 | tee "$log"
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -z "$last" ]; then
        echo "!! $label did not report a result (crashed?)"
        F=$((F + 1))
        return
    fi
    P=$((P + ${last%% passed*}))
    f=${last#*passed, }
    F=$((F + ${f%% failed}))
}
run "unit tests" "$B/test_unit"
# (the plain run already built every kernel variant with NVRTC: the sanitizer run builds three)
HC_TEST_JIT_QUICK=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
    run "unit tests (ASan+UBSan)" "$B/san/test_unit"
run "cli tests" sh tests/cli.sh "$B/hconvert"
run "cli tests (ASan+UBSan)" sh tests/cli.sh "$B/san/hconvert"
run "install" sh tests/install/run.sh "$B"
# the GPU tests' programs build and, as if there were no GPU (make gpu-test runs them on one),
# the MoE test checks the CPU twin against its float64 reference
HC_NO_GPU=1 run "GPU tests (without the GPU)" "$B/gpu_test"
HC_NO_GPU=1 run "GPU MoE tests (without the GPU: the CPU twin)" "$B/gpu_moe_test"
# every fuzz target: its regression inputs, then a few seconds of fuzzing (tests/fuzz/README.md)
run "fuzz (regression inputs, 4 s per target)" sh tests/fuzz/run.sh "$B" 4 1
rm -f "$log"
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
