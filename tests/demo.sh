#!/bin/sh
# demo.sh: the main job on the bundled example checkpoint (tests/fixtures/ckpt/demo, written by
# the real safetensors library): inspect it, convert it, inspect and verify the container.
set -e
HC=${1:-build/hconvert}
SRC=tests/fixtures/ckpt/demo
OUT=${DEMO_OUT:-build/demo-out}
step() { printf '\n$ %s\n' "$*"; "$@"; }
echo "hconvert demo: a 2-shard F16 checkpoint -> one verified container in $OUT"
step "$HC" inspect "$SRC"
rm -rf "$OUT"
step "$HC" convert "$SRC" "$OUT"
step "$HC" inspect "$OUT"
step "$HC" verify "$OUT"
printf '\n$ ls %s\n' "$OUT"
ls "$OUT"
echo
echo "demo done: the container in $OUT holds every tensor of $SRC (layout 'source', hashed,"
echo "4096-aligned) and the folder carries config.json and the tokenizer files."
