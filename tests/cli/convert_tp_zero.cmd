$HC convert $FIX/ckpt/single out --tp 0
