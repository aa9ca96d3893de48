$HC dequant $FIX/quant/gptqmodel_fp8_block model.layers.0.self_attn.q_proj -o q.npy
cmp q.npy $FIX/quant/gptqmodel_fp8_block/expected/model.layers.0.self_attn.q_proj.npy
$HC dequant $FIX/quant/gptqmodel_fp8_row model.layers.0.self_attn.k_proj -o k.npy
cmp k.npy $FIX/quant/gptqmodel_fp8_row/expected/model.layers.0.self_attn.k_proj.npy
