$HC dequant $FIX/quant/gptoss_mxfp4 model.layers.0.mlp.experts.gate_up_proj -o g.npy
head -c 128 g.npy | tail -c 118 | tr -d " " 
