$HC convert $FIX/ckpt/single out --threads abc
