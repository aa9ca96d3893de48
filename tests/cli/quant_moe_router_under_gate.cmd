python3 $FIX/../cli/quant_moe_synth.py m --router gate.wg
$HC validate m
$HC convert m out >/dev/null
test -e out/model.hconvert
