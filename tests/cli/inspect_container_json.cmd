$HC convert $FIX/ckpt/demo out >/dev/null
$HC inspect out --json --tensors
