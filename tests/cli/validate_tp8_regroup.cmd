$HC validate $FIX/quant/ct_moe_qwen3 --tp 8
