#!/bin/sh
# device_run.sh: everything the lent GPU machine is asked in one call, logs under $OUT (or
# ./device-out): build against the carried .deps (run .ci/carry-deps.sh here first and name
# .deps in the call's carry), the GPU tests, compute-sanitizer memcheck and racecheck on the
# quick test set and the full benchmark (the stream rate and cuBLASLt beside our figures).
# The measurement-only steps -- scaling (the M = 1 time over N with the copy pipeline alone
# beside it) and timeline (M = 1 launches per block and per SM) -- run from a bench build with
# -DHC_BENCH_DIAG=1 (docs/gpu.md). Sanitizer logs go to one file (at most 8 files come back).
# STEPS picks a subset (default: test sanitize bench moe):
#   STEPS="test sanitize bench moe kernels scaling timeline" sh bench/device_run.sh
# checks: test and sanitize in less wall time (the two test programs side by side, then the two
# sanitizers: correctness only, so sharing the GPU and the cores changes no result);
# quickchecks: the two test programs side by side only (a short call).
# racepair / mempair: racecheck / memcheck on both quick sets side by side (one tool a call: a
# pair of runs finishes where four did not); racemoe: racecheck on gpu_moe_test's quick set
# alone (side by side with gpu_test it did not finish in 195 s on an H100, session 45).
# gputest / moetest: gpu_test / gpu_moe_test alone to its end (~270 / ~430 s on an H100; side
# by side they run at under half speed, so a call that must finish both takes one each).
# gpuquick / moequick: gpu_test's / gpu_moe_test's quick set alone, no sanitizer (a new
# kernel's first run; gpu_moe_test's forces every grouped kernel on the first layout).
# A carried .kcache (bench/kernel_cache's entries; carry it beside .deps) fills the machine's
# kernel cache first, so that a fresh machine's tests load the modules instead of compiling
# them (gpu_moe_test whole: ~350 s cold on an H100, ~60 s warm).
# client: tests/gpu/real_client.py alone (transformers' Qwen3-MoE and gpt-oss blocks against
# hc_gpu_moe; the `test` step runs it too).
# humming: bench/humming_moe.py (Humming's MoE GEMM, the issue's peer; carry .whl).
# hdense: bench/humming_dense.py (Humming's dense GEMM on the issue's four dense layers, M = 1-8192;
# carry .whl): with `bench` in the same call ours and cuBLASLt print beside it on the same GPU.
# pdlrace: racecheck on the back-to-back chains, the skinny kernels' PDL on and off.
# race64q: racecheck on skinny64q alone: its ring of 4 stages, cut to 2, every lane arriving (NOTES).
# race128k: racecheck and memcheck on ws128k alone (the chains, where it is also the pick at M = 100).
# fixup: the skinny kernels at M = 16, 32, 64 with and without the stream-K fix-up (bench build).
# DEADLINE (seconds from the start, default 580) cuts every step's time limit to what is left.
# (moe: bench/moe_bench.c from the bench build, so that the gate_up GEMM is timed alone too --
# with HC_BENCH_MOE_SWEEP=1 in the call's environment, the grouped kernels forced in turn at
# M = 256, 1024 and 4096;
# kernels: every kernel that serves M forced in turn at M = 1-128 on the four bench layers)
# There are no environment knobs any more: a kernel variant is an edit of kernels/config.h,
# measured with this script (VARIANT="NAME VALUE" below does the edit in a copy). BASE=.base
# (a second source tree, made here by
# `sh bench/base_tree.sh REV` and named in the call's carry beside .deps): the kernels, bench,
# moe and timeline steps run that tree's build too, right after ours in the same call (files
# *.base.log), so a branch and its base are measured side by side on one GPU and one clock.
# Each step has its own time limit so that one hang cannot eat the call. Several runs of this
# script in one device call, each with its own steps and end: bench/device_calls.sh.
set -u
out=${OUT:-device-out}
mkdir -p "$out"
steps=${STEPS:-"test sanitize bench moe"}
b=build-dev
end=$(($(date +%s) + ${DEADLINE:-580}))
# a step's time limit: want seconds, or what is left before the deadline
lim() {
    l=$((end - $(date +%s)))
    [ "$l" -lt "$1" ] && echo "$((l > 1 ? l : 1))" || echo "$1"
}
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
# (at most 8 files come back from the device: the GPU's state goes into build.log)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,utilization.gpu --format=csv \
    >"$out/build.log" 2>&1
# a carried kernel cache (.kcache: bench/kernel_cache, run on the CPU machine with
# HC_CACHE_DIR=.kcache) into the folder the runtime reads (runtime/jit.c cache_dir), as this
# user's own: a fresh machine's first test run then loads its modules instead of compiling them
if [ -d .kcache ]; then
    kc=${HC_CACHE_DIR:-}
    [ -z "$kc" ] && [ -n "${XDG_CACHE_HOME:-}" ] && kc=$XDG_CACHE_HOME/hconvert
    [ -z "$kc" ] && [ -n "${HOME:-}" ] && kc=$HOME/.cache/hconvert
    [ -z "$kc" ] && kc=/tmp/hconvert-cache-$(id -u)
    if mkdir -p "$kc" && chmod 700 "$kc" && cp .kcache/* "$kc"/ && chmod 600 "$kc"/*; then
        # (the entries hit only under the NVRTC major.minor that built them: say this one's,
        # found as runtime/jit.c finds it)
        nvv=$(python3 -c 'import ctypes
for n in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"):
    try: l = ctypes.CDLL(n)
    except OSError: continue
    a, b = ctypes.c_int(), ctypes.c_int(); l.nvrtcVersion(ctypes.byref(a), ctypes.byref(b))
    print("%d.%d" % (a.value, b.value)); break' 2>/dev/null)
        echo "kernel cache: $(ls .kcache | wc -l) carried entries in $kc (NVRTC here: ${nvv:-?})" \
            >>"$out/build.log"
    else
        echo "kernel cache: the carried entries could not be put in '$kc'" >>"$out/build.log"
    fi
fi
# humming / hdense: the peer's MoE GEMM / dense GEMM measured beside ours (bench/humming_moe.py,
# bench/humming_dense.py: Humming from PyPI, its wheels carried in .whl -- humming_moe.py's header
# says which and how to download them; they need no build of ours, so they run first and a call of
# these steps alone builds nothing)
if has humming || has hdense; then
    if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >"$out/humming.log" 2>&1; then
        if has humming; then
            PYTHONPATH=/tmp/site timeout "$(lim 200)" python3 bench/humming_moe.py >>"$out/humming.log" 2>&1
            echo "humming rc=$?"
        fi
        if has hdense; then
            PYTHONPATH=/tmp/site timeout "$(lim 260)" python3 bench/humming_dense.py >>"$out/humming.log" 2>&1
            echo "hdense rc=$?"
        fi
    else
        echo "humming: the wheels in .whl did not install (carry .whl)"
    fi
    cat "$out/humming.log"
    rest=$(echo " $steps " | sed 's/ humming / /; s/ hdense / /' | tr -d ' ')
    [ -z "$rest" ] && exit 0
fi
if ! make HC_DEPS=.deps BUILD=$b -j16 $b/gpu_test $b/gpu_moe_test $b/hconvert $b/bench/gpu_bench >>"$out/build.log" 2>&1; then
    tail -30 "$out/build.log"
    exit 1
fi
if has scaling || has timeline || has moe || has fixup; then
    if ! make HC_DEPS=.deps BUILD=$b-diag CFLAGS='-O2 -DHC_BENCH_DIAG=1' -j16 \
        $b-diag/bench/gpu_bench $b-diag/bench/moe_bench >>"$out/build.log" 2>&1; then
        tail -30 "$out/build.log"
        exit 1
    fi
fi
# a copy of this tree (sources only) at $1
tree_copy() {
    rm -rf "$1" && mkdir -p "$1" &&
        tar --exclude='./build*' --exclude=./.base --exclude=./.deps --exclude=./.git -cf - . |
        (cd "$1" && tar -xf -)
}
# a copy of this tree at $1 with kernels/config.h's #define $2 set to $3, its gpu_test built
# (the racecheck steps' second trees)
config_copy() {
    tree_copy "$1" && sed -i "s|^#define $2 .*|#define $2 $3|" "$1/kernels/config.h" &&
        make -C "$1" HC_DEPS="$(pwd)/.deps" BUILD=$b -j16 $b/gpu_test >>"$out/build.log" 2>&1
}
# VARIANT="NAME VALUE": the base is a copy of this tree with kernels/config.h's #define NAME
# set to VALUE (a variant that waits on main behind a default-off constant, docs/DESIGN.md):
# the kernels, bench, moe and timeline steps then run it beside this tree ("base" in the logs);
# "NAME VALUE, NAME2 VALUE2" sets several
if [ -n "${VARIANT:-}" ] && [ -z "${BASE:-}" ]; then
    tree_copy /tmp/hc-variant || exit 1
    echo "$VARIANT" | tr ',' '\n' | while read -r vname vvalue; do
        [ -n "$vname" ] || continue
        if ! grep -q "^#define $vname " /tmp/hc-variant/kernels/config.h ||
            ! sed -i "s|^#define $vname .*|#define $vname $vvalue|" /tmp/hc-variant/kernels/config.h; then
            echo "VARIANT: no '#define $vname' in kernels/config.h to set"
            exit 1
        fi
        echo "variant: $(grep "^#define $vname " /tmp/hc-variant/kernels/config.h) (the base below)"
    done || exit 1
    BASE=/tmp/hc-variant
fi
base=${BASE:-}
if [ -n "$base" ]; then
    # the base tree's bench builds, against the same carried dependencies
    # (each only where a step runs from it: kernels and bench the plain one, moe and timeline
    # the bench one)
    deps=$(pwd)/.deps
    plain=0 diag=0
    if has kernels || has bench; then plain=1; fi
    if has moe || has timeline; then diag=1; fi
    if ! (cd "$base" &&
        { [ $plain = 0 ] || make HC_DEPS="$deps" BUILD=$b -j16 $b/bench/gpu_bench; } &&
        { [ $diag = 0 ] || make HC_DEPS="$deps" BUILD=$b-diag CFLAGS='-O2 -DHC_BENCH_DIAG=1' \
            -j16 $b-diag/bench/gpu_bench $b-diag/bench/moe_bench; }) >>"$out/build.log" 2>&1; then
        echo "the base tree $base does not build"
        tail -30 "$out/build.log"
        exit 1
    fi
fi
# runs bench command "$@" in the base tree too (its log: $1.base.log), after ours
base_too() {
    [ -n "$base" ] || return 0
    log=$1
    shift
    (cd "$base" && "$@") >"$out/$log.base.log" 2>&1
    echo "base ($base) $log rc=$?"
    cat "$out/$log.base.log"
}
if has checks || has quickchecks; then
    # the two test programs side by side (each fills the kernel cache), then the two sanitizers
    # side by side on the quick sets (from the warm cache). gpu_moe_test is the long one: ~255 s
    # alone on an H100 (session 25), more beside gpu_test -- 330 s cut it short once; give this
    # step a call of its own, or a DEADLINE that leaves it 7 minutes
    timeout "$(lim 420)" $b/gpu_test >"$out/gpu_test.log" 2>&1 &
    p1=$!
    timeout "$(lim 420)" $b/gpu_moe_test >"$out/gpu_moe_test.log" 2>&1 &
    p2=$!
    wait $p1
    echo "gpu_test rc=$?: $(tail -1 "$out/gpu_test.log")"
    grep -v '^ok' "$out/gpu_test.log" | head -15
    wait $p2
    echo "gpu_moe_test rc=$?: $(tail -1 "$out/gpu_moe_test.log")"
    grep -v '^ok' "$out/gpu_moe_test.log" | head -25
fi
for step in gpuquick moequick; do
    has $step || continue
    prog=gpu_test
    [ $step = moequick ] && prog=gpu_moe_test
    t0=$(date +%s)
    HC_GPU_TEST_QUICK=1 timeout "$(lim 200)" $b/$prog >"$out/$prog.quick.log" 2>&1
    echo "$prog quick rc=$? in $(($(date +%s) - t0)) s: $(tail -1 "$out/$prog.quick.log")"
    grep -v '^ok' "$out/$prog.quick.log" | head -15
done
for step in gputest moetest; do
    has $step || continue
    prog=gpu_test
    [ $step = moetest ] && prog=gpu_moe_test
    t0=$(date +%s)
    timeout "$(lim 560)" $b/$prog >"$out/$prog.log" 2>&1
    echo "$prog rc=$? in $(($(date +%s) - t0)) s: $(tail -1 "$out/$prog.log")"
    grep -v '^ok' "$out/$prog.log" | head -15
done
if has client; then
    timeout "$(lim 200)" python3 tests/gpu/real_client.py $b >"$out/real_client.log" 2>&1
    echo "real_client rc=$?: $(tail -1 "$out/real_client.log")"
    grep -v '^ok' "$out/real_client.log" | head -10
fi
if has checks; then
    for tool in memcheck racecheck; do
        (
            HC_GPU_TEST_QUICK=1 timeout "$(lim 200)" compute-sanitizer --tool $tool --error-exitcode 9 \
                $b/gpu_test >"$out/$tool.log" 2>&1
            echo "$tool rc=$?: $(grep -E 'SUMMARY' "$out/$tool.log" | tail -1)" >"$out/$tool.rc"
            HC_GPU_TEST_QUICK=1 timeout "$(lim 200)" compute-sanitizer --tool $tool --error-exitcode 9 \
                $b/gpu_moe_test >"$out/$tool.moe.log" 2>&1
            echo "$tool (MoE) rc=$?: $(grep -E 'SUMMARY' "$out/$tool.moe.log" | tail -1)" >>"$out/$tool.rc"
        ) &
    done
    wait
    for tool in memcheck racecheck; do
        cat "$out/$tool.rc"
        cat "$out/$tool.log" "$out/$tool.moe.log" >>"$out/sanitize.log"
        rm -f "$out/$tool.rc" "$out/$tool.log" "$out/$tool.moe.log"
    done
fi
if has test; then
    timeout 320 $b/gpu_test >"$out/gpu_test.log" 2>&1
    echo "gpu_test rc=$?: $(tail -1 "$out/gpu_test.log")"
    grep -v '^ok' "$out/gpu_test.log" | head -15
    timeout 420 $b/gpu_moe_test >"$out/gpu_moe_test.log" 2>&1
    echo "gpu_moe_test rc=$?: $(tail -1 "$out/gpu_moe_test.log")"
    grep -v '^ok' "$out/gpu_moe_test.log" | head -25
    timeout 200 python3 tests/gpu/real_client.py $b >"$out/real_client.log" 2>&1
    echo "real_client rc=$?: $(tail -1 "$out/real_client.log")"
    grep -v '^ok' "$out/real_client.log" | head -10
fi
if has sanitize; then
    for tool in memcheck racecheck; do
        HC_GPU_TEST_QUICK=1 timeout "$(lim 150)" compute-sanitizer --tool $tool --error-exitcode 9 \
            $b/gpu_test >"$out/$tool.log" 2>&1
        echo "$tool rc=$?: $(grep -E 'SUMMARY' "$out/$tool.log" | tail -1)"
        HC_GPU_TEST_QUICK=1 timeout "$(lim 240)" compute-sanitizer --tool $tool --error-exitcode 9 \
            $b/gpu_moe_test >>"$out/$tool.log" 2>&1
        echo "$tool (MoE) rc=$?: $(grep -E 'SUMMARY' "$out/$tool.log" | tail -1)"
        cat "$out/$tool.log" >>"$out/sanitize.log" && rm -f "$out/$tool.log"
    done
fi
for pair in racepair:racecheck:gpu_test,gpu_moe_test mempair:memcheck:gpu_test,gpu_moe_test \
    racemoe:racecheck:gpu_moe_test; do
    has ${pair%%:*} || continue
    tool=${pair#*:}
    progs=$(echo "${tool#*:}" | tr ',' ' ')
    tool=${tool%%:*}
    for prog in $progs; do
        HC_GPU_TEST_QUICK=1 timeout "$(lim 400)" compute-sanitizer --tool $tool --error-exitcode 9 \
            $b/$prog >"$out/$tool.$prog.log" 2>&1 &
    done
    wait
    for prog in $progs; do
        echo "$tool $prog: $(grep -E 'SUMMARY' "$out/$tool.$prog.log" | tail -1)" \
            "$(grep -E 'passed, .* failed' "$out/$tool.$prog.log" | tail -1)"
        cat "$out/$tool.$prog.log" >>"$out/sanitize.log" && rm -f "$out/$tool.$prog.log"
    done
done
if has pdlrace; then
    # racecheck on the back-to-back chains (gpu_test HC_GPU_TEST_CHAIN_ONLY), skinny kernels
    # only, with their programmatic dependent launch on (this tree) and off (a copy with
    # HC_SKINNY_PDL 0): whether racecheck's hazards there follow PDL (bench/NOTES.md session 23)
    np=/tmp/hc-pdl-off
    config_copy "$np" HC_SKINNY_PDL 0 || echo "pdlrace: the PDL-off copy does not build (build.log)"
    : >"$out/pdlrace.log"
    for t in . "$np"; do
        pdl=$(grep -h '^#define HC_SKINNY_PDL' "$t/kernels/config.h")
        echo "== $pdl" >>"$out/pdlrace.log"
        (cd "$t" && HC_GPU_TEST_CHAIN_ONLY=1 timeout "$(lim 200)" compute-sanitizer --tool racecheck \
            --kernel-name kns=skinny $b/gpu_test) >>"$out/pdlrace.log" 2>&1
        echo "pdlrace ($pdl) rc=$?: $(grep -E 'RACECHECK SUMMARY' "$out/pdlrace.log" | tail -1)" \
            "$(tail -1 "$out/pdlrace.log")"
    done
fi
if has race64q; then
    # racecheck on skinny64q alone (gpu_test's chains), in this tree (a ring of 4 stages at 64
    # tokens) and in a copy whose skinny rings are cut to 2 (HC_SKINNY_STAGES_MAX 2): whether
    # the hazards it reports at every read of every lap (bench/NOTES.md session 30) follow the
    # ring's depth (a tool limit) or not, and whether the bits stay right with 2 stages
    # -- and a copy where every lane of a consumer warp arrives on the empty barrier
    # (HC_EMPTY_LANES 32): no hazard there means the tool, not the ring (session 31)
    rc2=/tmp/hc-ring2 rc3=/tmp/hc-lanes32
    config_copy "$rc2" HC_SKINNY_STAGES_MAX 2 || echo "race64q: the 2-stage copy does not build (build.log)"
    config_copy "$rc3" HC_EMPTY_LANES 32 || echo "race64q: the all-lanes copy does not build (build.log)"
    : >"$out/race64q.log"
    for t in . "$rc2" "$rc3"; do
        echo "== $(grep -h '^#define HC_SKINNY_STAGES_MAX\|^#define HC_EMPTY_LANES' "$t/kernels/config.h" | tr '\n' ' ')" >>"$out/race64q.log"
        (cd "$t" && HC_GPU_TEST_CHAIN_ONLY=1 timeout "$(lim 150)" compute-sanitizer --tool racecheck \
            --print-limit 400 --kernel-name kns=skinny_gemm64q $b/gpu_test) >>"$out/race64q.log" 2>&1
        echo "race64q ($t) rc=$?: $(grep -E 'RACECHECK SUMMARY' "$out/race64q.log" | tail -1)" \
            "$(grep -E 'passed, .* failed' "$out/race64q.log" | tail -1)"
    done
    grep -E '^==|hazards\]' "$out/race64q.log" | sort | uniq -c | head -20
fi
if has race128k; then
    # racecheck and memcheck on ws128k alone (gpu_test's chains: 2048 x 2048 at M = 32, 64 and
    # 100, forced and -- at 100 -- the chooser's pick, six launches back to back, int4 and mxfp4)
    : >"$out/race128k.log"
    for tool in racecheck memcheck; do
        HC_GPU_TEST_CHAIN_ONLY=1 timeout "$(lim 120)" compute-sanitizer --tool $tool --print-limit 50 \
            --kernel-name kns=gemm128k $b/gpu_test >>"$out/race128k.log" 2>&1
        echo "race128k $tool rc=$?: $(grep -E 'SUMMARY' "$out/race128k.log" | tail -1)" \
            "$(grep -E 'passed, .* failed' "$out/race128k.log" | tail -1)"
    done
fi
if has bench; then
    timeout "$(lim 240)" $b/bench/gpu_bench >"$out/bench.log" 2>&1
    echo "bench rc=$?"
    grep -v '^    (ours' "$out/bench.log" | grep -E 'stream|M=1:| 1 \|| 16 \|| 4096 \|'
    base_too bench timeout "$(lim 240)" $b/bench/gpu_bench
fi
if has kernels; then
    HC_BENCH_KERNELS=1 timeout "$(lim 240)" $b/bench/gpu_bench >"$out/kernels.log" 2>&1
    echo "kernels rc=$?"
    cat "$out/kernels.log"
    base_too kernels env HC_BENCH_KERNELS=1 timeout "$(lim 240)" $b/bench/gpu_bench
fi
if has moe; then
    timeout "$(lim 420)" $b-diag/bench/moe_bench >"$out/moe_bench.log" 2>&1
    echo "moe_bench rc=$?"
    cat "$out/moe_bench.log"
    base_too moe_bench timeout "$(lim 420)" $b-diag/bench/moe_bench
fi
if has fixup; then
    HC_BENCH_FIXUP=1 timeout "$(lim 240)" $b-diag/bench/gpu_bench >"$out/fixup.log" 2>&1
    echo "fixup rc=$?"
    cat "$out/fixup.log"
fi
if has scaling; then
    HC_BENCH_SCALING=1 timeout 200 $b-diag/bench/gpu_bench >"$out/scaling.log" 2>&1
    echo "scaling rc=$?"
    cat "$out/scaling.log"
fi
if has timeline; then
    HC_BENCH_TIMELINE=1 timeout "$(lim 240)" $b-diag/bench/gpu_bench >"$out/timeline.log" 2>&1
    echo "timeline rc=$?"
    cat "$out/timeline.log"
    base_too timeline env HC_BENCH_TIMELINE=1 timeout "$(lim 240)" $b-diag/bench/gpu_bench
fi
