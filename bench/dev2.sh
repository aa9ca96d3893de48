set -u
out=${OUT:-device-out}; b=build-dev
make HC_DEPS=.deps BUILD=$b -j16 $b/gpu_moe_test > $out/build.log 2>&1 &&
make HC_DEPS=.deps BUILD=$b-diag CFLAGS='-O2 -DHC_BENCH_DIAG=1' -j16 $b-diag/bench/moe_bench >> $out/build.log 2>&1 || { tail -20 $out/build.log; exit 1; }
echo "built at ${SECONDS}s"
timeout 200 $b/gpu_moe_test > $out/gpu_moe_test.log 2>&1; echo "gpu_moe_test rc=$? $(tail -1 $out/gpu_moe_test.log) at ${SECONDS}s"; grep -v '^ok' $out/gpu_moe_test.log | head -20
grep -c skinny $out/gpu_moe_test.log
HC_BENCH_MOE_SHAPE=0 timeout 130 $b-diag/bench/moe_bench > $out/moe0.log 2>&1; echo "moe0 rc=$? at ${SECONDS}s"; cat $out/moe0.log
for tool in memcheck racecheck; do
  [ $SECONDS -lt 360 ] || break
  HC_GPU_TEST_QUICK=1 timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 $b/gpu_moe_test > $out/$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'SUMMARY' $out/$tool.log | tail -1) at ${SECONDS}s"
done
for sh in 1 2; do
  [ $SECONDS -lt 430 ] || break
  HC_BENCH_MOE_SHAPE=$sh timeout $((520 - SECONDS)) $b-diag/bench/moe_bench > $out/moe$sh.log 2>&1; echo "moe$sh rc=$? at ${SECONDS}s"; grep -v '^    stages' $out/moe$sh.log
done
