$HC dequant $FIX/quant/bad_moe_missing_expert model.layers.0.mlp.experts.down_proj -o s.npy
