$HC dequant $FIX/quant/ct_nvfp4 model.nope -o x.npy
