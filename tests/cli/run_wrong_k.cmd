$HC convert $FIX/quant/gptq_desc_act out >/dev/null
$HC run out model.layers.0.self_attn.q_proj --input $FIX/quant/ct_w4a16_g32_asym/run/model.layers.0.mlp.gate_proj.x.npy -o y.npy
