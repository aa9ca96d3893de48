python3 $FIX/../cli/quant_moe_synth.py m --half-down 1
$HC validate m
