$HC validate $FIX/quant/bad_gptq_v1_says_v2_data
