$HC convert $FIX/archives/sharded.tar.zst out >/dev/null
$HC verify out >/dev/null
for f in config.json tokenizer.json tokenizer_config.json generation_config.json; do cmp out/$f $FIX/ckpt/sharded/$f; done
ls out
