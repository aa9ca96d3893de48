$HC convert $FIX/quant/ct_mxfp4_v013 out >/dev/null
$HC inspect out --json --tensors
