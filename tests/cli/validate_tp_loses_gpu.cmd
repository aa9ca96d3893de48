$HC validate $FIX/quant/ct_nvfp4 --tp 3
$HC validate $FIX/quant/ct_nvfp4 --tp 8 | grep -c 'CPU executor only' | sed 's/^/tp 8 lines for the CPU only: /'
