# an ignore pattern the matcher refuses is an error, not "this module is not ignored"
# (before: 0 errors, and the later entries of the list were never tried)
cp -r $FIX/quant/ct_w4a16_g128_sym_v010 ck
python3 - <<'PY'
import json
c = json.load(open("ck/config.json"))
c["quantization_config"]["ignore"] = ["re:(?!x)lm_head", "lm_head"]
json.dump(c, open("ck/config.json", "w"))
PY
$HC validate ck
