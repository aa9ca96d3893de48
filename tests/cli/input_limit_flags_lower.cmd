# --max-extract-bytes lowers the absolute limit of convert and validate
rc=0
$HC convert "$FIX/archives/bomb.zip" out --max-extract-ratio 100000 --max-extract-bytes 64K || rc=$?
test $rc = 1 && test ! -e out/tokenizer.json
$HC validate "$FIX/archives/bomb.zip" --max-extract-ratio 100000 --max-extract-bytes 64K
