# a limit must be a positive count
$HC dequant "$FIX/archives/bomb.zip" model.norm -o w.npy --max-extract-bytes 0
