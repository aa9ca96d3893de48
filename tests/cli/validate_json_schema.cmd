$HC validate $FIX/quant/gptoss_mxfp4 --json
