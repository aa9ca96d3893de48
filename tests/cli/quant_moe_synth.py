"""quant_moe_synth.py: writes a tiny unquantized (BF16) MoE checkpoint for the quant_moe_* CLI
tests, so a case is one flag away from another instead of one more committed fixture. Needs
only the standard library: the safetensors file is written by hand (8-byte little-endian
header length, JSON header padded with spaces to 8 bytes, data).

usage: quant_moe_synth.py DIR [--router NAME] [--half-down EXPERT]
  --router NAME       the router module under model.layers.0.mlp (default "gate"; "gate.wg"
                      is HunYuan-MoE-V1's), its tensor NAME.weight
  --half-down EXPERT  that expert's down_proj has half the columns of the others'
"""
import json
import os
import struct
import sys

E, H, I = 4, 16, 8
ONE_BF16 = b"\x80\x3f"  # 1.0


def main(argv):
    out, router, half = argv[0], "gate", -1
    args = argv[1:]
    while args:
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--router":
            router = value
        elif flag == "--half-down":
            half = int(value)
        else:
            raise SystemExit("unknown flag " + flag)
    pre = "model.layers.0.mlp."
    shapes = {pre + router + ".weight": [E, H]}
    for j in range(E):
        shapes[pre + "experts.%d.gate_proj.weight" % j] = [I, H]
        shapes[pre + "experts.%d.up_proj.weight" % j] = [I, H]
        shapes[pre + "experts.%d.down_proj.weight" % j] = [H, I // 2 if j == half else I]
    header, data = {}, b""
    for name in sorted(shapes):
        n = shapes[name][0] * shapes[name][1] * 2
        header[name] = {"dtype": "BF16", "shape": shapes[name],
                        "data_offsets": [len(data), len(data) + n]}
        data += ONE_BF16 * (n // 2)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
              "hidden_size": H, "moe_intermediate_size": I, "num_experts": E,
              "num_experts_per_tok": 2, "num_hidden_layers": 1, "torch_dtype": "bfloat16"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
