$HC inspect $FIX/ckpt/bad_index_missing
