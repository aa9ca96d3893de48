$HC convert $FIX/ckpt/demo a --threads 1 >/dev/null
$HC convert $FIX/ckpt/demo b --threads 2 >/dev/null
cmp a/model.hconvert b/model.hconvert
