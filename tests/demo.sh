#!/bin/sh
# demo.sh: the main job on bundled examples: validate a quantized MoE checkpoint (and one with
# problems), convert it into tile layouts (also cut for 2 tensor-parallel ranks), verify,
# check the repacked bytes against the source, and run the CPU executor with routing.
set -e
HC=${1:-build/hconvert}
Q=tests/fixtures/quant
SRC=$Q/ct_moe_qwen3
OUT=${DEMO_OUT:-build/demo-out}
step() { printf '\n$ %s\n' "$*"; "$@"; }
echo "hconvert demo: a compressed-tensors int4 MoE checkpoint (8 experts) -> verified tiles"
step "$HC" inspect "$SRC"
step "$HC" validate "$SRC" --tp 8
printf '\n$ %s validate %s   # a checkpoint with broken scales: every problem, named\n' "$HC" "$Q/bad_gptoss_e8m0_ff"
"$HC" validate "$Q/bad_gptoss_e8m0_ff" || echo "(exit status $?: the checkpoint is refused)"
rm -rf "$OUT"
step "$HC" convert "$SRC" "$OUT"
step "$HC" verify "$OUT"
step "$HC" dequant "$SRC" model.layers.0.mlp.experts.3.down_proj -o "$OUT/src.npy"
step "$HC" dequant "$OUT" model.layers.0.mlp.experts.3.down_proj -o "$OUT/out.npy"
step cmp "$OUT/src.npy" "$OUT/out.npy"
echo "(identical: the tiles hold exactly the source's weights)"
R=$SRC/run/model.layers.0.mlp.experts.gate_proj
step "$HC" run "$OUT" model.layers.0.mlp.experts.gate_proj --input "$R.x.npy" \
    --topk-ids "$R.ids.npy" --topk-weights "$R.w.npy" -o "$OUT/y.npy" --device cpu
rm -rf "$OUT-tp2"
step "$HC" convert "$SRC" "$OUT-tp2" --tp 2
step "$HC" verify "$OUT-tp2"
echo
echo "demo done: $OUT holds the repacked container and the source's config and tokenizer"
echo "files; $OUT-tp2/rank0 and rank1 hold the two tensor-parallel halves."
