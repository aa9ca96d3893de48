#!/usr/bin/env python3
# humming_moe.py: a peer measurement of Humming's indexed (MoE) GEMM on the Qwen3-30B-A3B-like gate_up
# projection (E = 128 experts, top_k = 8, N = 1536 = 2 x 768, K = 2048, int4 symmetric weights with
# group-128 bfloat16 scales, no zero point, bfloat16 activations), for M in 1, 16, 64, 256, 1024, 4096.
#
# Why it exists: the Humming MoE figures (gate_up 10.8 / 33.5 / 78.1 / 77.7 / 188.7 / 491.9 us)
# came from Humming's benchmarks/bench_humming.py or a harness calling `layer(...)` the same way. That
# script builds the input with M x top_k rows and pads sorted_ids to the block M of the tuning config for
# M x top_k routed rows, but passes no valid_shape_m, so the launcher (csrc/launcher/launcher.cpp,
# launch_kernel_impl: valid_shape_m = a.size(0) x top_k) picks its config for M x top_k x top_k rows.
# Where the two block sizes differ, the kernel's m-blocks (num_tokens_padded / its own block M) each take
# expert_ids[b] of a table laid out for the other block size: it reads the wrong experts for most rows
# and times a different amount of weight (bench/NOTES.md, session 29). This script re-measures the
# correct call (inputs of M rows, valid_shape_m = M x top_k, sorted_ids padded to the launched config's
# block M), checks it against an independent torch reference, and measures the old bench's form beside
# it, so that the targets can be taken from correct runs.
# What to expect under 0.1.20 (its sm90 heuristics evaluated off-device with H200 numbers -- 132 SMs --
# and torch stubbed: a prediction, not a measurement): the correct call's block M is 8 / 8 / 8 / 24 /
# 80 / 96 at M = 1 / 16 / 64 / 256 / 1024 / 4096; the old form's kernel (valid_shape_m = 64 M) has
# block M 8 / 16 / 48 / 72 / 88 / 88, so in this version the old form should be wrong at every M but 1
# (session 29's a6455de heuristics differed only at 16 / 64 / 256). The detail lines print the real picks.
#
# How it is run: bench/device_run.sh step `humming` on a lent H200, with .whl carried (humming_kernels
# 0.1.20, cuda_bindings 13.5, cuda_pathfinder, tabulate; the device has torch, triton, numpy, jinja2),
# downloaded here once (.whl is ignored: `echo /.whl/ >> .git/info/exclude`):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#       -d .whl humming-kernels==0.1.20 cuda-bindings==13.5.0 cuda-pathfinder tabulate
# and there:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
#   python3 bench/humming_moe.py
# Knobs (environment, all optional): HUMMING_MOE_MS="1,16" (the M list), HUMMING_MOE_TUNING=full (pass
# no tuning_config, i.e. Humming's whole default list: ~19 kernels to JIT-compile instead of ~9),
# HUMMING_MOE_DEADLINE (seconds, default 140: later M are skipped, not cut off).
#
# Output: a header line, a setup line, then per M one result line
#   humming-moe M=16 touched=82 correct: graph .. us do_bench .. us .. GB/s(touched) check PASS err ..
#       | old-bench form: do_bench .. us reads .. experts check MISMATCH
# and one detail line (blocks, intervals, padded rows); any part that fails prints
#   humming-moe M=.. <part> FAILED: <exception on one line>
# and the script goes on. GB/s(touched) = touched experts x (1536 x 2048 / 2 + 1536 x 16 x 2) bytes over
# the graph time (over do_bench's where the graph failed).
#
# L2: all 128 experts' weights are ~207 MB, past the H200's 60 MB L2, so the weights are not rotated
# between timed calls. Caveat: at M = 1 only the 8 touched experts (13 MB) are read, which do fit in L2,
# so the back-to-back graph figure at M = 1 is L2-warm; do_bench flushes L2 before every call and is the
# cold figure there (at M >= 16 the touched experts are >= ~130 MB).
#
# Only Humming's public calls are used to build and run the layer (HummingLayer, load_from_tensors,
# transform, forward; humming.tune.get_heuristics_config; humming.testing.data.generate_moe_tensors;
# humming.ops.unpack_weight to check this script's own packing). One read-only diagnostic looks up
# the compiled kernel's block shape through humming.kernel.humming.HummingKernel (internal; it only
# confirms the Python-side interval pick and is reported as n/a if it fails).

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

NUM_EXPERTS = 128
TOP_K = 8
SHAPE_N = 1536  # gate_up: 2 x 768
SHAPE_K = 2048
GROUP = 128
PER_EXPERT_BYTES = SHAPE_N * SHAPE_K // 2 + SHAPE_N * (SHAPE_K // GROUP) * 2  # int4 codes + bf16 scales
CHECK_TOL = 2e-2
COMPUTE_CONFIG = json.dumps({"use_f16_accum": False, "gemm_type": "indexed"})  # as the old bench's


def main():
    ms_list = parse_ms("HUMMING_MOE_MS", "1,16,64,256,1024,4096")
    deadline = float(os.environ.get("HUMMING_MOE_DEADLINE", "140"))
    use_full_list = os.environ.get("HUMMING_MOE_TUNING", "") == "full"

    # ---------------------------------------------------------------- header
    try:
        import torch
        import triton
        import triton.testing
        import humming
        import humming.ops as hops
        from humming.layer import HummingLayer
        from humming.tune import get_heuristics_config

        dev, words = device_of(torch, humming)
        log(
            f"humming-moe header: {words} triton {getattr(triton, '__version__', '?')} layer E={NUM_EXPERTS} "
            f"top_k={TOP_K} N={SHAPE_N} K={SHAPE_K} int4 g{GROUP} bf16 scales, bf16 activations"
        )
    except Exception as exc:
        log(f"humming-moe header FAILED: {one_line(exc)}")
        return 1

    try:
        # Humming's own routing helper (its KernelTestRunner builds indexed-GEMM tables with it).
        from humming.testing.data import generate_moe_tensors

        routing_note = "routing tables from humming.testing.data.generate_moe_tensors"
    except Exception as exc:  # fall back to the old humming/utils/test.py logic, line for line
        routing_note = f"routing tables re-implemented (humming.testing.data: {one_line(exc)[:80]})"

        def generate_moe_tensors(topk_ids, num_experts, gemm_type, block_size_config=None):
            assert gemm_type == "indexed" and isinstance(block_size_config, int)
            parts, expert_id_list = [], []
            for expert_id in range(num_experts):
                part = torch.where(topk_ids.view(-1) == expert_id)[0]
                num_blocks = math.ceil(part.size(0) / block_size_config)
                pad = num_blocks * block_size_config - part.size(0)
                parts.append(torch.nn.functional.pad(part, pad=(0, pad), value=topk_ids.nelement()))
                expert_id_list += [expert_id] * num_blocks
            sorted_ids = torch.cat(parts, dim=0).to(torch.int32)
            expert_ids = torch.tensor(expert_id_list, dtype=torch.int32, device=topk_ids.device)
            ntp = torch.tensor(sorted_ids.size(0), dtype=torch.int32, device=topk_ids.device)
            return topk_ids, None, sorted_ids, expert_ids, ntp

    # ---------------------------------------------------------------- layer
    try:
        t_setup = time.time()
        gen = torch.Generator(device=dev)
        gen.manual_seed(1234)
        # The weights as codes 0..15 meaning code - 8 (Humming's integer weights are offset-binary:
        # schema/humming.py HummingWeightSchema.__post_init__ maps int4 to uint4, utils/weight.py
        # dequantize_weight subtracts 2^(bits-1) when there is no zero point). Codes span all 16
        # values, as the old bench's random int32 fill did; a code 0 (-8) keeps the layer at uint4
        # (transform's convert_symmetric_integer_weight converts to float4e0m3 only when no -8 occurs).
        codes = torch.randint(0, 16, (NUM_EXPERTS, SHAPE_N, SHAPE_K), generator=gen, device=dev, dtype=torch.uint8)
        scales = (torch.rand((NUM_EXPERTS, SHAPE_N, SHAPE_K // GROUP), generator=gen, device=dev) * 0.01 + 0.005)
        scales = scales.to(torch.bfloat16)

        # Pack 8 codes a word, code j of a word at bits 4j (kernel/pack_weight.cuh common_pack_weight:
        # element i at bit i x num_bits of a little-endian bit stream) -> (E, N, K / 8) int32, the
        # layout HummingWeightSchema.get_tensors_attrs asks for ("weight": (N, K * bits / 32) int32).
        shifts = torch.arange(0, 32, 4, device=dev, dtype=torch.int64)
        packed = torch.empty((NUM_EXPERTS, SHAPE_N, SHAPE_K // 8), dtype=torch.int32, device=dev)
        for e0 in range(0, NUM_EXPERTS, 16):
            c = codes[e0 : e0 + 16].view(-1, SHAPE_N, SHAPE_K // 8, 8).to(torch.int64)
            words = (c << shifts).sum(-1)
            words = torch.where(words >= 2**31, words - 2**32, words)
            packed[e0 : e0 + 16] = words.to(torch.int32)
            del c, words
        pack_note = "own packing"
        try:
            unpacked = hops.unpack_weight(packed[:2].contiguous(), 4)
            if not torch.equal(unpacked.to(torch.int32), codes[:2].to(torch.int32)):
                packed = hops.pack_weight(codes.contiguous(), 4)
                pack_note = "own packing disagreed with ops.unpack_weight: used ops.pack_weight"
            else:
                pack_note = "own packing = ops.unpack_weight"
        except Exception as exc:
            pack_note = f"packing not cross-checked ({one_line(exc)[:120]})"

        layer = HummingLayer(
            shape_n=SHAPE_N,
            shape_k=SHAPE_K,
            num_experts=NUM_EXPERTS,
            weight_config={
                "quant_method": "humming",
                "dtype": "uint4",  # "int4" is mapped to "uint4" by HummingWeightSchema anyway
                "group_size": GROUP,
                "scale_dtype": "bfloat16",
                "has_zero_point": False,
            },
            input_config={"quant_method": "humming", "dtype": "bfloat16"},
            torch_dtype=torch.bfloat16,
        ).to(dev)
        layer.load_from_tensors({"weight": packed, "weight_scale": scales})
        del packed
        layer.transform()
        layer_cfg = layer.humming_config
        layer_cfg_str = layer_cfg.to_str()
        torch.cuda.synchronize()

        # Humming's own heuristic list for this layer, exactly as the forward path builds it when no
        # tuning_config is given (kernel/humming.py HummingKernel._resolve_configs ->
        # get_heuristics_config(LayerConfig(**json.loads(layer_config)), **compute_config)).
        full_list = heuristics_list(get_heuristics_config, layer_cfg_str, "indexed", dev.index)
        needed = {interval_index(full_list, 1)}  # the launcher looks up shape 1 first (gemm type)
        for m in ms_list:
            needed.add(interval_index(full_list, m * TOP_K))  # the correct call
            needed.add(interval_index(full_list, m * TOP_K * TOP_K))  # the old bench's form
        needed.discard(None)
        if use_full_list:
            tuning_list = full_list
            tuning_arg = None  # Humming's default: the whole list, resolved inside prepare_kernels
        else:
            # A subset of Humming's list, intervals unchanged: every shape this script launches falls in
            # the same interval (so the same kernel) as with the whole list; only fewer kernels compile.
            tuning_list = [full_list[i] for i in sorted(needed)]
            tuning_arg = json.dumps(tuning_list)  # a string: forward passes it through untouched
        n_kernels = len({json.dumps(c, sort_keys=True) for _, _, c in tuning_list})
        log(
            f"humming-moe setup: b_dtype after transform {layer_cfg.b_dtype}, bs_dtype {layer_cfg.bs_dtype}, "
            f"{pack_note}; {routing_note}; tuning: {'whole default list' if use_full_list else 'subset of the default list'} "
            f"({len(tuning_list)} of {len(full_list)} intervals, {n_kernels} kernels); "
            f"layer ready in {time.time() - t_setup:.1f} s"
        )
    except Exception as exc:
        log(f"humming-moe setup FAILED: {one_line(exc)}")
        return 1

    def routing(m):
        g = torch.Generator(device=dev)
        g.manual_seed(m)  # as the old bench: torch.cuda.manual_seed(M), then randn(M, E).topk(k)
        scores = torch.randn((m, NUM_EXPERTS), generator=g, device=dev, dtype=torch.float32)
        return scores.topk(TOP_K, dim=1).indices.to(torch.int32).contiguous()

    def reference(x, topk_ids):
        """y[t * top_k + j] = x[t] @ W[topk_ids[t, j]].T, W = (code - 8) x scale, in float64."""
        flat = topk_ids.reshape(-1).long()
        ref = torch.zeros((flat.numel(), SHAPE_N), dtype=torch.float64, device=dev)
        xd = x.double()
        for e in torch.unique(flat).tolist():
            rows = (flat == e).nonzero().squeeze(1)
            w = (codes[e].double() - 8.0) * scales[e].double().repeat_interleave(GROUP, dim=1)
            ref[rows] = xd[rows // TOP_K] @ w.T
        return ref

    def rel_err(out_rows, ref):
        err = (out_rows.double() - ref).abs().max().item()
        scale = ref.abs().max().item()
        val = err / scale if scale > 0 else float("inf")
        ok = math.isfinite(val) and val < CHECK_TOL
        return val, ok

    def checked(fn, rows, ref, m, what):
        """runs fn, compares rows() with ref: (error, PASS / MISMATCH), or (None, None) and a line"""
        try:
            fn()
            torch.cuda.synchronize()
            err, ok = rel_err(rows(), ref)
            return err, "PASS" if ok else "MISMATCH"
        except Exception as exc:
            log(f"humming-moe M={m} {what} FAILED: {one_line(exc)}")
            return None, None

    def forward(x, out, sorted_ids, expert_ids, ntp, valid_shape_m):
        return layer(
            inputs=x,
            outputs=out,
            sorted_ids=sorted_ids,
            expert_ids=expert_ids,
            num_tokens_padded=ntp,
            top_k=TOP_K,
            valid_shape_m=valid_shape_m,
            compute_config=COMPUTE_CONFIG,
            tuning_config=tuning_arg,
        )

    def launched_block(shape_m):
        """(Python) the block M of the config the launcher picks for shape_m, and the interval."""
        i = interval_index(tuning_list, shape_m)
        lo, hi, cfg = tuning_list[i]
        return cfg["block_shape"][0], (lo, hi), cfg

    def compiled_block(shape_m):
        """(Diagnostic, internal API) the block shape of the compiled kernel the launcher will run."""
        try:
            from humming.kernel.humming import HummingKernel

            configs = HummingKernel.prepare_kernels(layer_cfg_str, COMPUTE_CONFIG, tuning_arg, dev.index)
            rows = configs.reshape(-1, 4).tolist()
            for lo, hi, kid, _sms in rows:
                hi = hi if hi > 0 else (1 << 30)
                if lo < shape_m <= hi:
                    return list(HummingKernel._id2kernel[int(kid)].block_shape)
            return "none"
        except Exception as exc:
            return f"n/a ({one_line(exc)[:80]})"

    def time_do_bench(fn):
        # triton.testing.do_bench zeroes a 256 MB buffer (L2 flush) before each call and returns
        # the mean in ms (its default return_mode), as the old bench used it.
        return triton.testing.do_bench(fn, warmup=100, rep=500) * 1000.0

    # ---------------------------------------------------------------- first call: JIT compile
    try:
        t_first = time.time()
        m0 = min(ms_list)  # any M of the list: its interval is in the tuning list
        tk = routing(m0)
        blk, _, _ = launched_block(m0 * TOP_K)
        _, _, s_ids, e_ids, ntp = generate_moe_tensors(tk, NUM_EXPERTS, "indexed", block_size_config=blk)
        x1 = torch.randn((m0, SHAPE_K), device=dev, dtype=torch.bfloat16)
        o1 = torch.zeros((m0 * TOP_K, SHAPE_N), device=dev, dtype=torch.bfloat16)
        forward(x1, o1, s_ids, e_ids, ntp, m0 * TOP_K)
        torch.cuda.synchronize()
        del tk, s_ids, e_ids, ntp, x1, o1
        log(f"humming-moe compile: first forward (JIT of the tuning list's kernels) {time.time() - t_first:.1f} s")
    except Exception as exc:
        log(f"humming-moe compile FAILED: {one_line(exc)}")

    def report(m, touched, pairs, padded, blk, interval, expert_list, t_graph, t_bench, check_c, err_c,
               old_block, old_interval, old_bench, old_check, old_err, old_reads, old_over):
        t_rate = t_graph if t_graph is not None else t_bench
        rate = f"{touched * PER_EXPERT_BYTES / t_rate / 1e3:.0f} GB/s(touched)" if t_rate else "n/a GB/s(touched)"
        if t_graph is None and t_bench is not None:
            rate += " [from do_bench]"
        err_c_s = f" err {err_c:.1e}" if err_c is not None else ""
        old_err_s = f" err {old_err:.1e}" if old_err is not None else ""
        old_reads_s = f"reads {old_reads} experts" if old_reads is not None else "reads n/a experts"
        log(
            f"humming-moe M={m} touched={touched} correct: graph {fmt_us(t_graph)} do_bench {fmt_us(t_bench)} "
            f"{rate} check {check_c or 'n/a'}{err_c_s} | old-bench form: do_bench {fmt_us(old_bench)} "
            f"{old_reads_s} check {old_check or 'n/a'}{old_err_s}"
        )
        reads_c = len(set(expert_list[: -(-padded // blk)]))
        old_part = "n/a"
        if old_block is not None:
            old_part = (
                f"valid_shape_m {pairs * TOP_K} -> interval {tuple(old_interval)} block M {old_block} "
                f"(compiled {compiled_block(pairs * TOP_K)}), m_blocks {-(-padded // old_block)} over a table "
                f"of {len(expert_list)} blocks of {blk}"
                + (f", {old_over} read past its end (guarded)" if old_over else "")
            )
        log(
            f"humming-moe M={m} detail: pairs {pairs} padded {padded} | correct: valid_shape_m {pairs} -> "
            f"interval {tuple(interval)} block M {blk} (compiled {compiled_block(pairs)}), "
            f"{len(expert_list)} m-blocks read {reads_c} experts | old form: {old_part} | "
            f"elapsed {time.time() - T0:.0f} s"
        )

    # ---------------------------------------------------------------- per M
    for m in ms_list:
        if time.time() - T0 > deadline:
            log(f"humming-moe M={m} skipped: past the {deadline:.0f} s deadline ({time.time() - T0:.0f} s)")
            continue
        pairs = m * TOP_K
        try:
            topk_ids = routing(m)
            touched = int(torch.unique(topk_ids).numel())
            blk, interval, _cfg = launched_block(pairs)
            # Humming's own routing helper (testing/data.py generate_moe_tensors, as its KernelTestRunner
            # calls it), padded to the block M of the config the launcher picks for valid_shape_m = M x k.
            _, _, sorted_ids, expert_ids, ntp = generate_moe_tensors(
                topk_ids, NUM_EXPERTS, "indexed", block_size_config=blk
            )
            padded = int(ntp.item())
            x = torch.randn((m, SHAPE_K), device=dev, dtype=torch.bfloat16)
            out = torch.zeros((pairs, SHAPE_N), device=dev, dtype=torch.bfloat16)
            ref = reference(x, topk_ids)
            expert_list = expert_ids.tolist()
        except Exception as exc:
            log(f"humming-moe M={m} setup FAILED: {one_line(exc)}")
            continue

        def fn_correct():
            return forward(x, out, sorted_ids, expert_ids, ntp, pairs)

        check_c = err_c = t_graph = t_bench = None
        out.zero_()
        err_c, check_c = checked(fn_correct, lambda: out, ref, m, "check")
        try:
            t_graph = time_graph(torch, lambda _i: fn_correct())
        except Exception as exc:
            log(f"humming-moe M={m} graph FAILED (capture or replay; graph timing skipped): {one_line(exc)}")
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
        try:
            t_bench = time_do_bench(fn_correct)
        except Exception as exc:
            log(f"humming-moe M={m} do_bench FAILED: {one_line(exc)}")

        # ------------------------------------------------------------ the old bench's form
        old_block = old_interval = old_bench = old_check = old_err = None
        old_reads = old_over = None
        try:
            old_valid = pairs * TOP_K  # launcher default: a.size(0) x top_k with a.size(0) = M x top_k
            old_block, old_interval, _ = launched_block(old_valid)
            # The same routing tables (the old bench padded them to the block M of the config for
            # M x top_k routed rows, as the correct call does), copied into buffers with a guard past
            # their end: the kernel takes m_blocks = num_tokens_padded / its own block M
            # (scheduler.cuh calc_m_blocks) and reads expert_ids[b] and sorted_ids[b x its block M ..]
            # (fetch_moe_index_block) with no bound, so a smaller launched block reads past
            # expert_ids and a larger one past sorted_ids. The guard (expert 0; token id 2^31 - 1,
            # which the kernel's row predicates skip) keeps those reads inside memory without
            # changing what the tables hold. The old bench had no guard: it read whatever followed.
            m_blocks = -(-padded // old_block)
            e_guard = torch.zeros((len(expert_list) + m_blocks + 16,), dtype=torch.int32, device=dev)
            e_guard[: len(expert_list)].copy_(expert_ids)
            old_expert_ids = e_guard[: len(expert_list)]
            s_guard = torch.full((padded + 1024,), 2**31 - 1, dtype=torch.int32, device=dev)
            s_guard[:padded].copy_(sorted_ids)
            old_sorted_ids = s_guard[:padded]
            old_reads = len(set(expert_list[: min(m_blocks, len(expert_list))]))
            old_over = max(0, m_blocks - len(expert_list))
            x_old = torch.randn((pairs, SHAPE_K), device=dev, dtype=torch.bfloat16)
            x_old[:m].copy_(x)  # rows 0..M-1 are the tokens (row = sorted_id / top_k)
            out_old = torch.zeros((pairs * TOP_K, SHAPE_N), device=dev, dtype=torch.bfloat16)

            def fn_old():
                return forward(x_old, out_old, old_sorted_ids, old_expert_ids, ntp, 0)  # no valid_shape_m

            old_err, old_check = checked(fn_old, lambda: out_old[:pairs], ref, m, "old-form check")
            try:
                old_bench = time_do_bench(fn_old)
            except Exception as exc:
                log(f"humming-moe M={m} old-form do_bench FAILED: {one_line(exc)}")
        except Exception as exc:
            log(f"humming-moe M={m} old-form FAILED: {one_line(exc)}")

        try:
            report(m, touched, pairs, padded, blk, interval, expert_list, t_graph, t_bench, check_c, err_c,
                   old_block, old_interval, old_bench, old_check, old_err, old_reads, old_over)
        except Exception as exc:
            log(f"humming-moe M={m} report FAILED: {one_line(exc)}")
        x_old = out_old = s_guard = e_guard = old_sorted_ids = old_expert_ids = None
        out = ref = x = sorted_ids = expert_ids = ntp = None
        try:
            torch.cuda.empty_cache()
        except Exception:
            pass

    log(f"humming-moe done in {time.time() - T0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
