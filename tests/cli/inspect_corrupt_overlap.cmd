$HC inspect $FIX/corrupt/overlap.safetensors
