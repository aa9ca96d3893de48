# a refused target pattern is quoted with its path (before: only the construct was named)
cp -r $FIX/quant/ct_w4a16_g128_sym_v010 ck
python3 - <<'PY'
import json
c = json.load(open("ck/config.json"))
g = next(iter(c["quantization_config"]["config_groups"].values()))
g["targets"] = ["lm_head_never", "re:(?i)proj"]
json.dump(c, open("ck/config.json", "w"))
PY
$HC validate ck
