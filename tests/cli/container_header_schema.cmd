$HC convert $FIX/ckpt/demo out >/dev/null
cat out/model.hconvert
