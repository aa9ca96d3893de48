$HC convert $FIX/quant/gptoss_mxfp4 out >/dev/null
R=$FIX/quant/gptoss_mxfp4/run/model.layers.0.mlp.experts.gate_up_proj
$HC run out model.layers.0.mlp --input $R.x.npy --topk-ids $R.ids.npy --topk-weights $R.w.npy -o y.npy
head -c 128 y.npy | tail -c 118 | tr -d " "
