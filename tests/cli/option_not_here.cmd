$HC verify $FIX/ckpt/single --json
