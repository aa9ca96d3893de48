#!/bin/sh
# device_run.sh: everything the lent GPU machine is asked in one call, logs under $OUT (or
# ./device-out): build against the carried .deps (run .ci/carry-deps.sh here first and name
# .deps in the call's carry), the GPU tests (default kernels, then the knobs given in
# HC_TEST_KNOBS, e.g. "HC_GPU_PDL=1"), compute-sanitizer memcheck and racecheck on the quick
# test set (sanknobs: memcheck again with the knobs), the knob sweep and the full benchmark
# (benchknobs: again with the knobs). Sanitizer logs go to one file (at most 8 files come
# back). STEPS picks a subset (default: all but scaling, the M = 1 time over N with the copy
# pipeline alone beside it, and timeline, M = 1 launches per block and per SM):
#   STEPS="test knobs sanitize sanknobs scaling timeline sweep bench benchknobs" sh bench/device_run.sh
# Each step has its own time limit so that one hang cannot eat the call.
set -u
out=${OUT:-device-out}
mkdir -p "$out"
steps=${STEPS:-"test knobs sanitize sanknobs sweep bench benchknobs"}
b=build-dev
# (at most 8 files come back from the device: the GPU's state goes into build.log)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,utilization.gpu --format=csv \
    >"$out/build.log" 2>&1
if ! make HC_DEPS=.deps BUILD=$b -j16 $b/gpu_test $b/bench/gpu_bench >>"$out/build.log" 2>&1; then
    tail -30 "$out/build.log"
    exit 1
fi
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
if has test; then
    timeout 240 $b/gpu_test >"$out/gpu_test.log" 2>&1
    echo "gpu_test rc=$?: $(tail -1 "$out/gpu_test.log")"
    grep -v '^ok' "$out/gpu_test.log" | head -15
fi
if has knobs && [ -n "${HC_TEST_KNOBS:-}" ]; then
    env $HC_TEST_KNOBS timeout 240 $b/gpu_test >"$out/gpu_test_knobs.log" 2>&1
    echo "gpu_test with $HC_TEST_KNOBS rc=$?: $(tail -1 "$out/gpu_test_knobs.log")"
    grep -v '^ok' "$out/gpu_test_knobs.log" | head -15
fi
if has sanitize; then
    for tool in memcheck racecheck; do
        HC_GPU_TEST_QUICK=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 \
            $b/gpu_test >"$out/$tool.log" 2>&1
        echo "$tool rc=$?: $(grep -E 'SUMMARY' "$out/$tool.log" | tail -1)"
        cat "$out/$tool.log" >>"$out/sanitize.log" && rm -f "$out/$tool.log"
    done
fi
if has sanknobs && [ -n "${HC_TEST_KNOBS:-}" ]; then # memcheck once more, with the knobs
    env $HC_TEST_KNOBS HC_GPU_TEST_QUICK=1 timeout 150 compute-sanitizer --tool memcheck \
        --error-exitcode 9 $b/gpu_test >"$out/memcheck_knobs.log" 2>&1
    echo "memcheck with $HC_TEST_KNOBS rc=$?: $(grep -E 'SUMMARY' "$out/memcheck_knobs.log" | tail -1)"
    cat "$out/memcheck_knobs.log" >>"$out/sanitize.log" && rm -f "$out/memcheck_knobs.log"
fi
if has scaling; then
    HC_BENCH_SCALING=1 timeout 200 $b/bench/gpu_bench >"$out/scaling.log" 2>&1
    echo "scaling rc=$?"
    cat "$out/scaling.log"
fi
if has timeline; then
    HC_BENCH_TIMELINE=1 timeout 120 $b/bench/gpu_bench >"$out/timeline.log" 2>&1
    echo "timeline rc=$?"
    cat "$out/timeline.log"
fi
if has sweep; then
    HC_BENCH_SWEEP=1 timeout 300 $b/bench/gpu_bench >"$out/sweep.log" 2>&1
    echo "sweep rc=$?"
    cat "$out/sweep.log"
fi
if has bench; then
    timeout 240 $b/bench/gpu_bench >"$out/bench.log" 2>&1
    echo "bench rc=$?"
    grep -v '^    (ours' "$out/bench.log" | grep -E 'stream|M=1:| 1 \|| 16 \|| 4096 \|'
fi
if has benchknobs && [ -n "${HC_TEST_KNOBS:-}" ]; then # the full benchmark with the knobs
    env $HC_TEST_KNOBS timeout 240 $b/bench/gpu_bench >"$out/bench_knobs.log" 2>&1
    echo "bench with $HC_TEST_KNOBS rc=$?"
    grep -v '^    (ours' "$out/bench_knobs.log" | grep -E 'stream|M=1:| 1 \|| 16 \|| 64 \|| 256 \|| 4096 \|'
fi
