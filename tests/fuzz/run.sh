#!/bin/sh
# run.sh: the fuzz stage. For every libFuzzer target of tests/fuzz/ (fuzz_<t>.c, built by
# `make fuzz-bins` into BUILD/fuzz): each committed regression input (regress/<t>/*) runs once
# under a timeout (those named accept_* must also be accepted: HC_FUZZ_ACCEPT, fuzz_util.h),
# then the target fuzzes for SECONDS from its committed corpus (corpus/<t>/,
# new inputs kept in BUILD/fuzz/corpus/<t>). Each input and each round is one check; ends with
# "N passed, N failed" like the other stages (tests/run.sh counts it).
#   sh tests/fuzz/run.sh [BUILD [SECONDS [SEED]]]  (`make test`: 4 s from seed 1, so a CI run
#   replays the same inputs; `make fuzz`: FUZZ_SECONDS from a random seed, 0)
# FUZZ_TIMEOUT (default 5): seconds one input may run before it counts as a hang.
B=${1:-build}
S=${2:-4}
SEED=${3:-0}
T=${FUZZ_TIMEOUT:-5}
cd "$(dirname "$0")/../.." || exit 1
O=$B/fuzz
P=0
F=0
pass() { P=$((P + 1)); echo "ok   $1"; }
fail() { F=$((F + 1)); echo "FAIL $1"; }
# the first line that says why a run failed: the sanitizer's or libFuzzer's verdict
why() {
    grep -m1 -E '^fuzz: |ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|ALARM|out-of-memory|deadly signal|Timeout|SUMMARY' "$1" |
        sed 's/^==[0-9]*==//' | cut -c1-200
}
# the first frame of the stack inside the project (function and file:line)
where() {
    grep -m1 -E '^ +#[0-9]+ .* in hc_|^ +#[0-9]+ .*/(formats|runtime|convert)/' "$1" | sed 's/^ *#[0-9]* 0x[0-9a-f]* in //' | cut -c1-200
}
log=$(mktemp)
mkdir -p "$O/tmp"
export TMPDIR="$PWD/$O/tmp" # the targets' private folders (and archive extraction) go here
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
for src in tests/fuzz/fuzz_*.c; do
    t=${src#tests/fuzz/fuzz_}
    t=${t%.c}
    bin=$O/fuzz_$t
    if [ ! -x "$bin" ]; then
        if [ -n "$HC_DEPS" ]; then
            echo "skip fuzz_$t: not built: clang with libFuzzer (clang, libclang-rt-14-dev) is not" \
                "installed and this HC_DEPS build does not run .ci/install-deps.sh"
        else
            fail "fuzz_$t: $bin is missing: build it with 'make fuzz-bins' (clang with libFuzzer: .ci/install-deps.sh installs clang and libclang-rt-14-dev)"
        fi
        continue
    fi
    mkdir -p "$O/corpus/$t" "$O/artifacts/$t"
    # regression inputs: each alone, so one failure does not hide the others
    for f in tests/fuzz/regress/"$t"/*; do
        [ -f "$f" ] || continue
        case ${f##*/} in accept_*) accept=1 ;; *) accept= ;; esac
        HC_FUZZ_ACCEPT=$accept timeout $((T * 3 + 10)) "$bin" -timeout="$T" -rss_limit_mb=2048 \
            -artifact_prefix="$O/artifacts/$t/" "$f" >"$log" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
            pass "$f"
        else
            fail "$f (exit $rc): $(why "$log")"
            w=$(where "$log")
            [ -n "$w" ] && echo "       at $w"
        fi
    done
    # a round of fuzzing from the committed corpus
    timeout $((S + T * 3 + 60)) "$bin" -max_total_time="$S" -seed="$SEED" -timeout="$T" -rss_limit_mb=2048 \
        -artifact_prefix="$O/artifacts/$t/" -print_final_stats=1 "$O/corpus/$t" \
        tests/fuzz/corpus/"$t" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ $rc -eq 0 ]; then
        pass "fuzz_$t: ${S}s, ${runs:-?} inputs"
    else
        art=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
        fail "fuzz_$t (exit $rc): $(why "$log")"
        w=$(where "$log")
        [ -n "$w" ] && echo "       at $w"
        echo "       input: ${art:-(none written)}; keep it as tests/fuzz/regress/$t/<name> (README.md)"
        sed -n '/ERROR: /,/SUMMARY/p' "$log" | head -n 40 | sed 's/^/       | /'
    fi
done
rm -f "$log"
rm -rf "$O/tmp"
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
