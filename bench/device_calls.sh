#!/bin/sh
# device_calls.sh: several bench/device_run.sh runs in one device call -- at most 8 files come
# back from the lent machine, so each run's logs go into one $OUT/NAME.tgz -- each run with its
# own steps, environment and end (seconds from this script's start; a run starts only while
# time is left). What sessions wrote by hand as scratch scripts each time.
# usage: sh bench/device_calls.sh 'NAME END STEPS... [VAR=VALUE...]' ...
#   e.g. sh bench/device_calls.sh 't 380 moetest' 'r 585 racemoe'
#        sh bench/device_calls.sh 'm 300 moe HC_BENCH_MOE_SHAPE=0 HC_BENCH_MOE_MMAX=4096 BASE=.base'
#        sh bench/device_calls.sh 'v 300 moe HC_BENCH_MOE_MMAX=64 VARIANT=HC_MOE_META_EARLY:1'
#   (VARIANT=NAME:VALUE[,NAME:VALUE]: device_run.sh's VARIANT="NAME VALUE", which has a space)
# (each run's DEADLINE is its END less the time already gone; the call's carry names .deps,
# .kcache and whatever BASE / .whl the runs need)
set -u
top=${OUT:-device-out}
mkdir -p "$top"
t0=$(date +%s)
for spec in "$@"; do
    set -- $spec
    name=$1 end=$2
    shift 2
    steps="" envs="" variant=""
    for w in "$@"; do
        case $w in
        VARIANT=*) variant=$(echo "${w#VARIANT=}" | tr ':' ' ') ;; # (NAME:VALUE -> "NAME VALUE")
        *=*) envs="$envs $w" ;;
        *) steps="$steps $w" ;;
        esac
    done
    left=$((end - ($(date +%s) - t0)))
    if [ "$left" -lt 20 ]; then
        echo "$name: not run ($left s left before its end)"
        continue
    fi
    mkdir -p "$top/$name"
    if [ -n "$variant" ]; then
        env $envs VARIANT="$variant" STEPS="${steps# }" DEADLINE=$left OUT="$top/$name" \
            sh bench/device_run.sh >"$top/$name/run.log" 2>&1
    else
        env $envs STEPS="${steps# }" DEADLINE=$left OUT="$top/$name" sh bench/device_run.sh \
            >"$top/$name/run.log" 2>&1
    fi
    echo "$name rc=$? at $(($(date +%s) - t0)) s: $(tail -3 "$top/$name/run.log" | tr '\n' ' ')"
    (cd "$top" && tar czf "$name.tgz" "$name" && rm -rf "$name")
done
