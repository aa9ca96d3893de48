$HC inspect $FIX/ckpt/sharded
