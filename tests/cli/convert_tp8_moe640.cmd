$HC convert $FIX/quant/moe_640_tp8 out --tp 8 >/dev/null
ls out
$HC verify out | wc -l
$HC dequant out/rank5 model.layers.0.mlp.experts.1.down_proj -o d.npy
head -c 128 d.npy | tail -c 118 | tr -d " "
