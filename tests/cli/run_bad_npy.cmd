echo hello > x.npy
$HC convert $FIX/quant/gptq_desc_act out >/dev/null
$HC run out model.layers.0.self_attn.q_proj --input x.npy -o y.npy
