set -u
out=${OUT:-device-out}; b=build-dev
make HC_DEPS=.deps BUILD=$b -j16 $b/gpu_test $b/gpu_moe_test $b/bench/gpu_bench > $out/build.log 2>&1 || { tail -20 $out/build.log; exit 1; }
for tool in memcheck racecheck; do
  HC_GPU_TEST_QUICK=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $b/gpu_test > $out/$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'SUMMARY' $out/$tool.log | tail -1) $(grep -c skinny $out/$tool.log) skinny lines"
done
mkdir -p $out/a
OUT=$out/a HC_BENCH_M=64 sh bench/ncu_profile.sh hc_skinny_gemm64 3
