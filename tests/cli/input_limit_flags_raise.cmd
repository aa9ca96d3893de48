# --max-extract-ratio reaches every command that takes SRC: inspect, validate, convert
$HC inspect "$FIX/archives/bomb.zip" --max-extract-ratio 100000 >/dev/null
rc=0
$HC validate "$FIX/archives/bomb.zip" --max-extract-ratio 100000 >/dev/null 2>err || rc=$?
test $rc -le 1 && ! grep -q 'extracted size' err
$HC convert "$FIX/archives/bomb.zip" out --max-extract-ratio 100000 >/dev/null
stat -c '%s bytes' out/tokenizer.json
