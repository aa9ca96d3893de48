#!/usr/bin/env python3
# humming_dense.py: a peer measurement of Humming's dense GEMM on issue 15's four dense layers -- int4
# symmetric with group-128 bfloat16 scales and MXFP4 (E2M1 codes, an E8M0 scale a group of 32), each at
# N x K = 28672 x 8192 and 8192 x 8192, bfloat16 activations -- for M from 1 to 8192.
#
# Why it exists: the dense targets (M = 16 / 64: int4 28672 45.0 / 66.0 us, int4 8192 17.6 / 24.6,
# mxfp4 28672 58.4 / 75.8, mxfp4 8192 22.1 / 27.6) are Humming figures from an H200, and sessions 30-32
# had H100s only: figures from different GPUs do not compare. This script times Humming on whatever GPU
# the call has, in the call that runs bench/gpu_bench.c for ours (device_run.sh: STEPS="hdense bench"),
# the same way: the weights rotate through copies of the layer (at least 200 MB in all, past L2, as
# gpu_bench.c's copies), a CUDA graph of back-to-back calls, the median of its replays a call.
#
# How it is run: bench/device_run.sh step `hdense` (carry .whl; humming_moe.py's header says how .whl is
# made), or by hand there:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && PYTHONPATH=/tmp/site python3 bench/humming_dense.py
# Knobs (environment, optional): HUMMING_DENSE_MS="1,16" (the M list), HUMMING_DENSE_LAYERS="0,2" (which
# of the four layers, in the order above: int4 28672, int4 8192, mxfp4 28672, mxfp4 8192),
# HUMMING_DENSE_DEADLINE (seconds, default 230: later layers and M are skipped, not cut off).
#
# Output: a header line; per layer a setup line (copies, bytes, kernels compiled, the check of the first
# copy at M = 16 against a float64 reference of the dequantized weights: PASS / MISMATCH and the error
# relative to the reference's largest value) and per M one line
#   humming-dense int4-g128 28672x8192 M=16: 45.0 us 2612 GB/s block_m 16
# (GB/s: the layer's weight and scale bytes over the time); anything that fails prints
#   humming-dense <layer> <part> FAILED: <exception on one line>
# and the script goes on.
#
# Only Humming's public calls build and run the layers (HummingLayer, load_from_tensors, transform,
# forward; humming.tune.get_heuristics_config for its own pick, passed back as a subset of its list whose
# intervals hold every M launched here, so that the same kernels run and fewer compile).
import json
import math
import os
import sys
import time

from humming_common import (
    device_of,
    fmt_us,
    heuristics_list,
    interval_index,
    keep_caches_in_tmp,
    log,
    one_line,
    parse_ms,
    time_graph,
)

T0 = time.time()
keep_caches_in_tmp()

ROTATE_BYTES = 200 << 20  # as bench/gpu_bench.c: copies of at least 200 MB in all
CHECK_M = 16
CHECK_TOL = 2e-2
COMPUTE_CONFIG = json.dumps({"use_f16_accum": False, "gemm_type": "dense"})
# E2M1 magnitudes of codes 0..7 (bit 3 the sign), as the OCP MX spec defines them
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
LAYERS = [  # (name, kind, N, K)
    ("int4-g128", "int4", 28672, 8192),
    ("int4-g128", "int4", 8192, 8192),
    ("mxfp4", "mxfp4", 28672, 8192),
    ("mxfp4", "mxfp4", 8192, 8192),
]


def layer_bytes(kind, n, k):
    if kind == "int4":
        return n * k // 2 + n * (k // 128) * 2
    return n * k // 2 + n * (k // 32)


def main():
    ms_list = parse_ms("HUMMING_DENSE_MS", "1,16,32,48,64,96,128,256,512,1024,2048,4096,8192")
    which = parse_ms("HUMMING_DENSE_LAYERS", "0,1,2,3")
    deadline = float(os.environ.get("HUMMING_DENSE_DEADLINE", "230"))
    try:
        import torch
        import humming
        from humming.layer import HummingLayer
        from humming.tune import get_heuristics_config

        dev, words = device_of(torch, humming)
        log(
            f"humming-dense header: {words}; bf16 activations; weights rotated through copies of >= "
            f"{ROTATE_BYTES >> 20} MB; CUDA graph timing"
        )
    except Exception as exc:
        log(f"humming-dense header FAILED: {one_line(exc)}")
        return 1

    def make_copy(kind, n, k, seed):
        """one layer's tensors in Humming's input form and its codes and scales for the reference"""
        g = torch.Generator(device=dev)
        g.manual_seed(seed)
        codes = torch.randint(0, 16, (n, k), generator=g, device=dev, dtype=torch.uint8)
        if kind == "int4":
            # codes 0..15 meaning code - 8, 8 a little-endian int32 word (as humming_moe.py packs them)
            scales = (torch.rand((n, k // 128), generator=g, device=dev) * 0.01 + 0.005).to(torch.bfloat16)
            shifts = torch.arange(0, 32, 4, device=dev, dtype=torch.int64)
            packed = torch.empty((n, k // 8), dtype=torch.int32, device=dev)
            for r0 in range(0, n, 4096):
                packed[r0 : r0 + 4096] = _pack_words(torch, codes[r0 : r0 + 4096].view(-1, k // 8, 8), shifts)
            return {"weight": packed, "weight_scale": scales}, codes, scales
        # MXFP4: two codes a byte, the even element in the low nibble; E8M0 exponents 120..130
        exps = torch.randint(120, 131, (n, k // 32), generator=g, device=dev, dtype=torch.uint8)
        packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).contiguous()
        return {"weight": packed, "weight_scale": exps}, codes, exps

    def dequant_rows(kind, codes, scales, r0, r1):
        """rows r0..r1 of the layer's weights in float64"""
        c = codes[r0:r1]
        if kind == "int4":
            return (c.double() - 8.0) * scales[r0:r1].double().repeat_interleave(128, dim=1)
        table = torch.tensor(E2M1, dtype=torch.float64, device=dev)
        mag = table[(c & 7).long()]
        val = torch.where((c & 8) != 0, -mag, mag)
        return val * torch.pow(2.0, scales[r0:r1].double() - 127.0).repeat_interleave(32, dim=1)

    def build(kind, n, k, seed):
        cfg = (
            {"quant_method": "humming", "dtype": "uint4", "group_size": 128, "scale_dtype": "bfloat16",
             "has_zero_point": False}
            if kind == "int4"
            else {"quant_method": "mxfp4"}
        )
        layer = HummingLayer(
            shape_n=n,
            shape_k=k,
            weight_config=cfg,
            input_config={"quant_method": "humming", "dtype": "bfloat16"},
            torch_dtype=torch.bfloat16,
        ).to(dev)
        tensors, codes, scales = make_copy(kind, n, k, seed)
        layer.load_from_tensors(tensors)
        del tensors
        layer.transform()
        return layer, codes, scales

    for li in which:
        if li < 0 or li >= len(LAYERS):
            log(f"humming-dense layer {li}: none such (0..{len(LAYERS) - 1})")
            continue
        name, kind, n, k = LAYERS[li]
        tag = f"{name} {n}x{k}"
        if time.time() - T0 > deadline:
            log(f"humming-dense {tag} skipped: past the {deadline:.0f} s deadline")
            continue
        one = layer_bytes(kind, n, k)
        copies = ROTATE_BYTES // one + 1
        layers = []
        try:
            t_setup = time.time()
            first, codes, scales = build(kind, n, k, 1000 + li)
            layers.append(first)
            for c in range(1, copies):
                layers.append(build(kind, n, k, 1000 + li + 17 * c)[0])
            cfg_str = first.humming_config.to_str()
            full = heuristics_list(get_heuristics_config, cfg_str, "dense", dev.index)
            needed = {interval_index(full, m) for m in ms_list + [1, CHECK_M]}
            needed.discard(None)
            tuning = [full[i] for i in sorted(needed)]
            tuning_arg = json.dumps(tuning)
            torch.cuda.synchronize()
        except Exception as exc:
            log(f"humming-dense {tag} setup FAILED: {one_line(exc)}")
            layers = codes = scales = None
            torch.cuda.empty_cache()
            continue

        def forward(layer, x, out):
            return layer(inputs=x, outputs=out, compute_config=COMPUTE_CONFIG, tuning_config=tuning_arg)

        # the check: copy 0 at M = CHECK_M against float64 (this call also compiles the kernels)
        check = "n/a"
        try:
            t_first = time.time()
            x = torch.randn((CHECK_M, k), device=dev, dtype=torch.bfloat16)
            out = torch.zeros((CHECK_M, n), device=dev, dtype=torch.bfloat16)
            forward(first, x, out)
            torch.cuda.synchronize()
            compile_s = time.time() - t_first
            err = 0.0
            big = 0.0
            xd = x.double()
            for r0 in range(0, n, 2048):
                ref = xd @ dequant_rows(kind, codes, scales, r0, min(n, r0 + 2048)).T
                err = max(err, (out[:, r0 : r0 + 2048].double() - ref).abs().max().item())
                big = max(big, ref.abs().max().item())
            rel = err / big if big > 0 else float("inf")
            check = f"{'PASS' if math.isfinite(rel) and rel < CHECK_TOL else 'MISMATCH'} err {rel:.1e}"
            check += f" (first call {compile_s:.1f} s)"
        except Exception as exc:
            check = f"FAILED: {one_line(exc)}"
        codes = scales = None
        log(
            f"humming-dense {tag} setup: {copies} copies of {one / 1e6:.1f} MB, {len(tuning)} of {len(full)} "
            f"intervals of Humming's list, ready in {time.time() - t_setup:.1f} s; check at M={CHECK_M}: {check}"
        )

        for m in ms_list:
            if time.time() - T0 > deadline:
                log(f"humming-dense {tag} M={m} skipped: past the {deadline:.0f} s deadline")
                continue
            try:
                x = torch.randn((m, k), device=dev, dtype=torch.bfloat16)
                out = torch.empty((m, n), device=dev, dtype=torch.bfloat16)
                us = time_graph(torch, lambda i: forward(layers[i % copies], x, out))
                i = interval_index(tuning, m)
                blk = tuning[i][2].get("block_shape", ["?"])[0] if i is not None else "?"
                log(f"humming-dense {tag} M={m}: {fmt_us(us)} {one / us / 1e3:.0f} GB/s block_m {blk}")
            except Exception as exc:
                log(f"humming-dense {tag} M={m} FAILED: {one_line(exc)}")
        layers = first = None
        torch.cuda.empty_cache()

    log(f"humming-dense done in {time.time() - T0:.0f} s")
    return 0


def _pack_words(torch, c, shifts):
    """8 codes a word (code j at bits 4 j), as int32 with the top bit as the sign"""
    words = (c.to(torch.int64) << shifts).sum(-1)
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)


if __name__ == "__main__":
    sys.exit(main())
