$HC validate $FIX/quant/ct_nvfp4 --tp 8
