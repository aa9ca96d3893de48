# a dangling link among the side files is left out with a warning; convert still succeeds
cp -r "$FIX/ckpt/single" ck
ln -s nowhere.json ck/gone.json
$HC convert ck out >/dev/null
test ! -e out/gone.json && test ! -L out/gone.json
test -f out/tokenizer.json
$HC inspect ck
