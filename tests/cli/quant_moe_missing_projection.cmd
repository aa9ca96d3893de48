$HC validate $FIX/quant/bad_moe_missing_down
