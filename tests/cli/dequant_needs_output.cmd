$HC dequant $FIX/quant/ct_nvfp4 model.layers.0.self_attn.q_proj
