#!/usr/bin/env python3
"""real_client.py: hc_gpu_moe (through `hconvert run ... --device gpu`) against the MoE blocks of
the transformers package on the GPU, given the same weights and the same routing.

- Qwen3-MoE: transformers' Qwen3MoeSparseMoeBlock (router included) with the weights of the
  compressed-tensors fixture dequantized by `hconvert dequant`; the routing it computes (softmax,
  top-k, renormalised) is recomputed here and handed to hconvert.
- gpt-oss: transformers' GptOssExperts with the MXFP4 fixture's weights from `hconvert dequant`
  and its biases, a random routing given to both.

usage: python3 tests/gpu/real_client.py BUILD  (BUILD holds hconvert; run from the project root)
Prints one line per check and "N passed, N failed"; exit status 1 on a failure, 0 with a
"skipped" line where torch, transformers or a GPU is missing."""
import inspect
import json
import os
import subprocess
import sys
import tempfile

FIX = "tests/fixtures/quant"
LAYER = "model.layers.0.mlp"


def main():
    """(see the module's comment)"""
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    hc = os.path.join(build, "hconvert")
    try:
        import numpy as np
        import torch
        import transformers
        from safetensors.torch import load_file
    except ImportError as e:
        print(f"skipped: {e}\n0 passed, 0 failed")
        return 0
    if not torch.cuda.is_available():
        print("skipped: no GPU\n0 passed, 0 failed")
        return 0
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    dev = torch.device("cuda")
    results = []
    tmp = tempfile.mkdtemp(prefix="hc-real-client-")

    def sh(*args):
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def dequant(fx, name):
        out = os.path.join(tmp, name.replace("/", "_") + ".npy")
        sh(hc, "dequant", f"{FIX}/{fx}", name, "-o", out)
        return torch.from_numpy(np.load(out)).float()

    def bf16(t):
        return t.to(torch.bfloat16).float()

    def ours(fx, x, ids, w, device):
        out = os.path.join(tmp, fx)
        if not os.path.exists(out):
            sh(hc, "convert", f"{FIX}/{fx}", out)
        xp, ip, wp, yp = (os.path.join(tmp, f"{fx}.{n}.npy") for n in ("x", "i", "w", "y"))
        np.save(xp, x.cpu().numpy().astype(np.float32))
        np.save(ip, ids.cpu().numpy().astype(np.int32))
        np.save(wp, w.cpu().numpy().astype(np.float32))
        sh(hc, "run", out, LAYER, "--input", xp, "--topk-ids", ip, "--topk-weights", wp, "-o", yp,
           "--device", device)
        return torch.from_numpy(np.load(yp)).float()

    def compare(label, y, ref, tol):
        rel = ((y - ref).norm() / ref.norm()).item()
        ok = rel <= tol and torch.isfinite(y).all().item()
        print(f"{'ok  ' if ok else 'FAIL'} {label}: ||ours - transformers|| / ||transformers|| = "
              f"{rel:.2e} (bound {tol:g})")
        results.append(ok)

    # ---- Qwen3-MoE: the whole sparse block, its router included ----
    from transformers.models.qwen3_moe import modeling_qwen3_moe as qm
    cfgd = json.load(open(f"{FIX}/ct_moe_qwen3/config.json"))
    cfgd.pop("quantization_config", None)
    cfg = transformers.Qwen3MoeConfig(**cfgd)
    E, k, I, H = cfg.num_experts, cfg.num_experts_per_tok, cfg.moe_intermediate_size, cfg.hidden_size
    block = qm.Qwen3MoeSparseMoeBlock(cfg).float()
    st = load_file(f"{FIX}/ct_moe_qwen3/model.safetensors")
    router = st[f"{LAYER}.gate.weight"].float()
    # (a per-expert layer named without its id dequantizes to [E, N, K])
    g = dequant("ct_moe_qwen3", f"{LAYER}.experts.gate_proj")
    u = dequant("ct_moe_qwen3", f"{LAYER}.experts.up_proj")
    d = dequant("ct_moe_qwen3", f"{LAYER}.experts.down_proj")
    with torch.no_grad():
        block.gate.weight.copy_(router)
        if isinstance(block.experts, torch.nn.ModuleList):  # transformers 4.x: an MLP per expert
            for e in range(E):
                block.experts[e].gate_proj.weight.copy_(g[e])
                block.experts[e].up_proj.weight.copy_(u[e])
                block.experts[e].down_proj.weight.copy_(d[e])
        else:  # transformers 5: fused experts, gate_up [E, 2I, H] (gate rows first), down [E, H, I]
            gu, dn = torch.cat([g, u], dim=1), d
            params = dict(block.experts.named_parameters())
            p_gu, p_dn = params["gate_up_proj"], params["down_proj"]
            p_gu.copy_(gu if p_gu.shape == gu.shape else gu.transpose(1, 2))
            p_dn.copy_(dn if p_dn.shape == dn.shape else dn.transpose(1, 2))
    block = block.to(dev).eval()
    for T in (1, 7, 333):
        x = bf16(torch.randn(T, H, generator=torch.Generator().manual_seed(T)))
        with torch.no_grad():
            out = block(x[None].to(dev))
            ref = (out[0] if isinstance(out, tuple) else out)[0].float().cpu()
            logits = x @ router.T
            probs = torch.softmax(logits, dim=-1, dtype=torch.float)
            w, ids = torch.topk(probs, k, dim=-1)
            if cfg.norm_topk_prob:
                w = w / w.sum(dim=-1, keepdim=True)
        for device in ("gpu", "cpu"):
            y = ours("ct_moe_qwen3", x, ids, w, device)
            compare(f"Qwen3MoeSparseMoeBlock T={T} E={E} top-{k} H={H} I={I} vs hconvert "
                    f"--device {device}", y, ref, 2e-2)

    # ---- gpt-oss: the experts block with biases and the clamped SwiGLU ----
    from transformers.models.gpt_oss import modeling_gpt_oss as gm
    cfgd = json.load(open(f"{FIX}/gptoss_mxfp4/config.json"))
    cfgd.pop("quantization_config", None)
    cfg = transformers.GptOssConfig(**cfgd)
    E, k, H = cfg.num_local_experts, cfg.num_experts_per_tok, cfg.hidden_size
    ex = gm.GptOssExperts(cfg).float()
    st = load_file(f"{FIX}/gptoss_mxfp4/model.safetensors")
    gu = dequant("gptoss_mxfp4", f"{LAYER}.experts.gate_up_proj")  # [E, 2I, H]
    dn = dequant("gptoss_mxfp4", f"{LAYER}.experts.down_proj")  # [E, H, I]
    try:  # transformers' own MXFP4 dequantization, in the orientation its experts take
        from transformers.integrations.mxfp4 import convert_moe_packed_tensors as hf_deq
    except ImportError:
        hf_deq = None
    with torch.no_grad():
        for nm, p, v in (("gate_up_proj", ex.gate_up_proj, gu), ("down_proj", ex.down_proj, dn)):
            if hf_deq is not None:
                hv = hf_deq(st[f"{LAYER}.experts.{nm}_blocks"], st[f"{LAYER}.experts.{nm}_scales"],
                            dtype=torch.float32).reshape(p.shape).float()
                same = torch.equal(hv, v.reshape(p.shape)) if hv.shape == v.shape else False
                tr = torch.equal(hv, v.transpose(1, 2).reshape(p.shape))
                ok = same or tr
                print(f"{'ok  ' if ok else 'FAIL'} hconvert dequant of {nm} equals transformers' "
                      f"MXFP4 dequantization{' (transposed)' if tr and not same else ''}")
                results.append(ok)
                p.copy_(v.reshape(p.shape) if same else v.transpose(1, 2).reshape(p.shape))
            else:  # (an older transformers: the orientation from the shapes)
                p.copy_(v if p.shape == v.shape else v.transpose(1, 2))
        ex.gate_up_proj_bias.copy_(st[f"{LAYER}.experts.gate_up_proj_bias"].float())
        ex.down_proj_bias.copy_(st[f"{LAYER}.experts.down_proj_bias"].float())
    ex = ex.to(dev).eval()
    for T in (1, 5, 200):
        gen = torch.Generator().manual_seed(100 + T)
        x = bf16(torch.randn(T, H, generator=gen) * 2)
        scores = torch.rand(T, E, generator=gen)
        w, ids = torch.topk(scores, k, dim=-1)
        w = torch.softmax(w, dim=-1)
        dense = torch.zeros(T, E).scatter_(1, ids, w)
        # the weights as its forward indexes them: per token and top-k slot (transformers 5:
        # routing_weights[token_idx, top_k_pos]) or per token and expert (4.x: [T, E])
        wt = w if "top_k_pos" in inspect.getsource(type(ex).forward) else dense
        with torch.no_grad():
            ref = ex(x.to(dev), ids.to(dev), wt.to(dev))
            ref = (ref[0] if isinstance(ref, tuple) else ref).reshape(T, H).float().cpu()
        for device in ("gpu", "cpu"):
            y = ours("gptoss_mxfp4", x, ids, w, device)
            compare(f"GptOssExperts T={T} E={E} top-{k} H={H} vs hconvert --device {device}", y,
                    ref, 2e-2)
    subprocess.run(["rm", "-rf", tmp])
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
