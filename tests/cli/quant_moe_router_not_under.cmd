python3 $FIX/../cli/quant_moe_synth.py m --router gate_wg
$HC validate m
