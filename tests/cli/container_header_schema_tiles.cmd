$HC convert $FIX/quant/gptq_desc_act out >/dev/null
cat out/model.hconvert
