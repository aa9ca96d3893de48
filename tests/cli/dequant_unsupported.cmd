$HC dequant $FIX/quant/bad_gptq_marlin model.layers.0.self_attn.q_proj -o x.npy
