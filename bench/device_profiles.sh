#!/bin/sh
# device_profiles.sh: several ncu profiles in one device call (after bench/device_run.sh has
# built build-dev and build-dev-diag), each reduced on the device to two files under
# $OUT/p-KERNEL-M/ (details.txt: speed of light, warp states, scheduler; sum.txt: the stall
# reasons and instruction mix of bench/ncu_summary.py), so that three profiles and the run's
# own logs stay within the 8 files a call brings back.
# usage: sh bench/device_profiles.sh "moe hc_moe_gemv_t8 0 16" "dense hc_mma_gemv_t16 3 16 t16" ...
#   each argument: moe|dense|humming KERNEL SKIP M [FORCE] -- moe: the Qwen3-like block of moe_bench at
#   that M only (the first launch of a call is gate_up's); dense: gpu_bench's quick set at M,
#   FORCE (a kernel name) forced; humming: the peer's kernel (KERNEL a regex such as regex:humming)
#   in bench/humming_moe.py at M (carry .whl), so ours and Humming's profile in one call.
set -u
out=${OUT:-device-out}
for spec in "$@"; do
    set -- $spec
    d="$out/p-$(echo "$2" | tr -c 'A-Za-z0-9_\n-' _)-$4"
    mkdir -p "$d"
    if [ "$1" = humming ]; then
        PROG=humming HC_BENCH_MOE_M=$4 OUT="$d" sh bench/ncu_profile.sh "$2" "$3" >"$d/sum.txt" 2>&1
    elif [ "$1" = moe ]; then
        PROG=moe HC_BENCH_MOE_SHAPE=0 HC_BENCH_MOE_M=$4 OUT="$d" sh bench/ncu_profile.sh "$2" "$3" \
            >"$d/sum.txt" 2>&1
    else
        HC_BENCH_M=$4 HC_BENCH_FORCE=${5:-} OUT="$d" sh bench/ncu_profile.sh "$2" "$3" \
            >"$d/sum.txt" 2>&1
    fi
    for f in "$d"/*.src.csv; do
        [ -f "$f" ] && python3 bench/ncu_summary.py "$f" >>"$d/sum.txt" 2>&1
    done
    echo "== $spec"
    cat "$d/sum.txt"
    rm -f "$d"/*.src.csv "$d/ncu.log"
done
