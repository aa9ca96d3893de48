$HC inspect $FIX/ckpt/sharded --json --tensors
