# the way people pack a folder: "./" and "./name" entries, zstd filter
tar --zstd -cf ck.tar.zst -C "$FIX/ckpt/sharded" .
$HC convert ck.tar.zst out >/dev/null
for f in config.json tokenizer.json tokenizer_config.json generation_config.json; do cmp out/$f "$FIX/ckpt/sharded/$f"; done
$HC verify out
