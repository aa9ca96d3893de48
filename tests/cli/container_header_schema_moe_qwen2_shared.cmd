$HC convert $FIX/quant/ct_moe_qwen2_shared out >/dev/null
cat out/model.hconvert
