# 20000 experts, each without weight_shape and weight_scale: each problem is one finding that
# lists every expert once, in numeric order (before: the two were merged under one message and
# every expert listed twice; merging scanned the later modules per finding)
mkdir ck
python3 - <<'PY'
import json, struct
E = 20000
parts = ['"model.layers.0.mlp.experts.%d.down_proj.weight_packed":{"dtype":"I32","shape":[0,0],"data_offsets":[0,0]}' % e for e in range(E)]
b = ('{' + ','.join(parts) + '}').encode()
open("ck/model.safetensors", "wb").write(struct.pack("<Q", len(b)) + b)
g = {"targets": ["Linear"], "format": "pack-quantized",
     "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}}
json.dump({"num_experts": E, "quantization_config": {"quant_method": "compressed-tensors",
           "format": "pack-quantized", "quantization_status": "compressed",
           "config_groups": {"g": g}, "ignore": []}}, open("ck/config.json", "w"))
PY
timeout 60 $HC validate ck > out.txt || true
echo "merged: $(grep -c 'tensor; the same in experts 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11' out.txt)"
grep -o 'missing weight_s[a-z]* tensor; the same in experts 0, 1, 2' out.txt
