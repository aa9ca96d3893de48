$HC validate $FIX/quant/gptqmodel_fp8_row
