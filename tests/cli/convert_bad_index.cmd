$HC convert $FIX/ckpt/bad_index_unlisted out
