$HC convert $FIX/ckpt/demo out >/dev/null
truncate -s 5000 out/model.hconvert
$HC verify out
