$HC convert $FIX/quant/gptq_desc_act out >/dev/null
$HC run out model.nope --input $FIX/quant/gptq_desc_act/run/model.layers.0.self_attn.q_proj.x.npy -o y.npy
