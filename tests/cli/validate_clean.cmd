$HC validate $FIX/quant/ct_nvfp4
