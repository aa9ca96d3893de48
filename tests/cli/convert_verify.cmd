$HC convert $FIX/ckpt/sharded out >/dev/null
$HC verify out
$HC inspect out
