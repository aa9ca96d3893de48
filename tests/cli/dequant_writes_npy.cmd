$HC dequant $FIX/quant/gptq_3bit model.layers.0.self_attn.q_proj -o q.npy
head -c 6 q.npy | od -An -c | tr -s " "
stat -c %s q.npy
