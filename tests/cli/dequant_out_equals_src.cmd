$HC convert $FIX/quant/ct_mxfp4_v013 out >/dev/null
$HC dequant out model.layers.0.self_attn.q_proj -o a.npy
$HC dequant $FIX/quant/ct_mxfp4_v013 model.layers.0.self_attn.q_proj -o b.npy
cmp a.npy b.npy
