$HC convert $FIX/ckpt/single out --json --threads 2
