touch out
$HC convert $FIX/ckpt/single out
