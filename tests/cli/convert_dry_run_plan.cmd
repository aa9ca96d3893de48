$HC convert $FIX/quant/ct_w4_actorder out --dry-run
test ! -e out
