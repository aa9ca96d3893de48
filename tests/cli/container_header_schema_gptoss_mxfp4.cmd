$HC convert $FIX/quant/gptoss_mxfp4 out >/dev/null
cat out/model.hconvert
