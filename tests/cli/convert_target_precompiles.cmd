HC_CACHE_DIR=$T/kc $HC convert $FIX/quant/gptq_desc_act out --target sm90 2>$T/err >/dev/null
cat $T/err >&2
ls $T/kc | grep -c '^sm_90a-[0-9a-f]*\.cubin$'
HC_CACHE_DIR=$T/kc $HC convert $FIX/quant/gptq_desc_act out2 --target sm90 >/dev/null
ls $T/kc | grep -c '^sm_90a-[0-9a-f]*\.cubin$'
