# an MoE model: its tiles' module, the grouped MoE GEMMs of that kind and the routing module
HC_CACHE_DIR=$T/kc $HC convert $FIX/quant/ct_moe_qwen3 out --target sm90 2>$T/err >/dev/null
cat $T/err >&2
ls $T/kc | grep -c '^sm_90a-[0-9a-f]*\.cubin$'
