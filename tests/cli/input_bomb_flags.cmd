# --max-extract-ratio raises the cap; --max-extract-bytes lowers the absolute one
$HC dequant "$FIX/archives/bomb.tar.zst" model.norm -o w.npy --max-extract-ratio 100000
test -s w.npy
$HC dequant "$FIX/archives/bomb.tar.zst" model.norm -o w.npy --max-extract-ratio 100000 --max-extract-bytes 1M
