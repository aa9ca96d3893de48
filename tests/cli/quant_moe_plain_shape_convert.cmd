python3 $FIX/../cli/quant_moe_synth.py m --half-down 1
rc=0
$HC convert m out || rc=$?
test ! -e out/model.hconvert
exit $rc
