$HC convert $FIX/ckpt/sharded out --dry-run
test ! -e out
