$HC inspect $FIX/ckpt/single --json | sed "s/\"checkpoint\"/\"nonsense\"/"
