# a GPTQModel FP8 config (weight_scale_method present) without weight_scale_semantics is
# GPTQModel's default "inverse": the weights are divided by weight_scale_inv (before: read as
# DeepSeek's multiply, every value wrong). Expected: the generator's float64 values.
cp -r $FIX/quant/gptqmodel_fp8_block ck
python3 - <<'PY'
import json
c = json.load(open("ck/config.json"))
del c["quantization_config"]["weight_scale_semantics"]
assert "weight_scale_method" in c["quantization_config"]
json.dump(c, open("ck/config.json", "w"))
PY
$HC dequant ck model.layers.0.self_attn.q_proj -o q.npy
cmp q.npy $FIX/quant/gptqmodel_fp8_block/expected/model.layers.0.self_attn.q_proj.npy
