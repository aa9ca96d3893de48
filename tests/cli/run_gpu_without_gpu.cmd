$HC convert $FIX/quant/gptq_desc_act out >/dev/null
HC_NO_GPU=1 $HC run out model.layers.0.self_attn.q_proj --input $FIX/quant/gptq_desc_act/run/model.layers.0.self_attn.q_proj.x.npy -o y.npy --device gpu
