$HC validate $FIX/quant/bad_ct_scale_zero_inf_neg
