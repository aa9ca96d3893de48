# GPTQModel FP8 (weight_scale_inv divides): tiled as tile64-fp8 version 2 (scale_divides),
# and the container dequantizes to the float64 reference's float32 bits, block and row scales
for c in gptqmodel_fp8_block gptqmodel_fp8_row; do
    $HC convert $FIX/quant/$c out_$c --target cpu >/dev/null 2>&1
    $HC inspect out_$c/model.hconvert --tensors | grep q_proj
    $HC dequant out_$c model.layers.0.self_attn.q_proj -o $c.npy
    cmp $c.npy $FIX/quant/$c/expected/model.layers.0.self_attn.q_proj.npy
done
