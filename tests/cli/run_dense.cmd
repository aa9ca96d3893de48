$HC convert $FIX/quant/gptq_desc_act out >/dev/null
$HC run out model.layers.0.self_attn.q_proj --input $FIX/quant/gptq_desc_act/run/model.layers.0.self_attn.q_proj.x33.npy -o y.npy --device cpu
head -c 128 y.npy | tail -c 118 | tr -d " "
