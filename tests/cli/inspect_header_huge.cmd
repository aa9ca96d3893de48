$HC inspect $FIX/corrupt/header_len_huge.safetensors
