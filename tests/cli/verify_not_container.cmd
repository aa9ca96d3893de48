$HC verify $FIX/ckpt/single/model.safetensors
