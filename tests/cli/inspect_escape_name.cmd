$HC inspect $FIX/st/escape_name.safetensors --tensors
