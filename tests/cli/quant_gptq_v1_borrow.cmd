$HC validate $FIX/quant/gptq_4bit_asym_v1_borrow
