$HC convert $FIX/quant/gptoss_mxfp4 out >/dev/null
R=$FIX/quant/gptoss_mxfp4/run/model.layers.0.mlp.experts.gate_up_proj
HC_NO_GPU=1 $HC run out model.layers.0.mlp.experts.gate_up_proj --input $R.x.npy --topk-ids $R.ids.npy --topk-weights $R.w.npy -o y.npy --device gpu
