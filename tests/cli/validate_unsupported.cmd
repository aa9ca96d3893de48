$HC validate $FIX/quant/bad_gptq_marlin
