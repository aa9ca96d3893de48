rc=0
$HC convert $FIX/quant/bad_moe_missing_down out || rc=$?
test ! -e out/model.hconvert
exit $rc
