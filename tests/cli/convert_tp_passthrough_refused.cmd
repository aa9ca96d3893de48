$HC convert $FIX/ckpt/single out --tp 2 --target passthrough
