set -u
out=${OUT:-device-out}; b=build-dev
make HC_DEPS=.deps BUILD=$b -j16 $b/gpu_test $b/bench/gpu_bench > $out/build.log 2>&1 || { tail -20 $out/build.log; exit 1; }
timeout 200 $b/gpu_test > $out/gpu_test.log 2>&1; echo "gpu_test rc=$? $(tail -1 $out/gpu_test.log)"; grep -v '^ok' $out/gpu_test.log | head
HC_BENCH_KERNELS=1 timeout 200 $b/bench/gpu_bench > $out/sweep.log 2>&1; echo "sweep rc=$?"; cat $out/sweep.log
