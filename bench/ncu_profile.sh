#!/bin/sh
# ncu_profile.sh KERNEL [SKIP]: profiles one launch of KERNEL in the quick benchmark on the lent
# GPU (after the build of bench/device_run.sh) and leaves under $OUT: KERNEL.details.txt (speed
# of light, occupancy, launch, warp states, scheduler) and KERNEL.src.csv (per-SASS-instruction
# stall samples; sum them by reason or list the top instructions to see what the warps wait for:
# bench/ncu_summary.py, run here on the returned file). ncu locks the SM clock (about 1.35 GHz on
# the H200), so read its durations as relative. HC_BENCH_M=64 profiles at that M only,
# HC_BENCH_FORCE=ws64 with that kernel forced (bench/gpu_bench.c). PROG=moe for a grouped MoE
# kernel from the bench build's moe_bench (HC_BENCH_MOE_SHAPE=0: the Qwen3-like block only;
# HC_BENCH_MOE_M=16: that M only -- gate_up's launch is the first of a call; with
# HC_BENCH_MOE_SWEEP=1 the forced kernels of the sweep launch too). PROG=humming for the peer's
# kernel (KERNEL a regex such as regex:humming) in bench/humming_moe.py at HC_BENCH_MOE_M (default
# 256; carry .whl): the two kernels' profiles side by side from one call.
set -u
out=${OUT:-device-out}
k=${1:?kernel name}
tag=$(echo "$k" | tr -c 'A-Za-z0-9_\n-' _)
prog=build-dev/bench/gpu_bench
[ "${PROG:-}" = moe ] && prog=build-dev-diag/bench/moe_bench
if [ "${PROG:-}" = humming ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >/dev/null 2>&1 || { echo "ncu: carry .whl"; exit 1; }
    export PYTHONPATH=/tmp/site HUMMING_MOE_MS=${HC_BENCH_MOE_M:-256}
    prog="python3 bench/humming_moe.py"
fi
# shellcheck disable=SC2086
HC_BENCH_QUICK=1 timeout 240 ncu -o "$out/rep" --kernel-name "$k" --launch-skip "${2:-3}" \
    --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section SourceCounters --import-source no $prog >"$out/ncu.log" 2>&1
echo "ncu $k rc=$?"
[ -f "$out/rep.ncu-rep" ] || { echo "ncu: no report (kernel $k not launched?)"; tail -5 "$out/ncu.log"; exit 1; }
ncu -i "$out/rep.ncu-rep" --page source --csv --print-source sass >"$out/$tag.src.csv" 2>&1
ncu -i "$out/rep.ncu-rep" --page details >"$out/$tag.details.txt" 2>&1
grep -E "SM Frequency|Duration|Compute \(SM\)|Memory Throughput|Eligible Warps|Warp Cycles Per Issued|Registers Per|Achieved Occupancy|Grid Size|Block Size|Shared Memory Config|Dynamic Shared" "$out/$tag.details.txt"
rm -f "$out/rep.ncu-rep"
