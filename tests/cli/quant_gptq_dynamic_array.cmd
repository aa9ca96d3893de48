$HC validate $FIX/quant/bad_gptq_dynamic_array
