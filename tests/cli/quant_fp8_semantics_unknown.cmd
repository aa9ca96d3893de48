$HC validate $FIX/quant/bad_fp8_semantics_unknown
