$HC convert $FIX/ckpt/demo out >/dev/null
size=$(stat -c %s out/model.hconvert)
printf "\\377" | dd of=out/model.hconvert bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
$HC verify out
