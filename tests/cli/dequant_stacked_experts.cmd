$HC dequant $FIX/quant/ct_moe_qwen3 model.layers.0.mlp.experts.down_proj -o s.npy
head -c 128 s.npy | tail -c 118 | tr -d " "
