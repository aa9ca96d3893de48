$HC inspect $FIX/ckpt/single --bogus
