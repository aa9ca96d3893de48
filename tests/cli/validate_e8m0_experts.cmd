$HC validate $FIX/quant/bad_gptoss_e8m0_ff
