$HC convert $FIX/ckpt/bad_config out
