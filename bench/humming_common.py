# humming_common.py: what the two peer scripts (humming_moe.py: Humming's MoE GEMM; humming_dense.py:
# its dense GEMM) share -- Humming's caches kept under /tmp, one-line logging, the launcher's interval
# rule and the CUDA-graph timing -- so that both time Humming the same way as bench/gpu_bench.c and
# bench/moe_bench.c time ours (a graph of back-to-back calls, the median of its replays a call).
import json
import os
import statistics
import sys

GRAPH_CALLS = 20
GRAPH_REPLAYS = 10


def keep_caches_in_tmp():
    """Humming JIT-compiles with NVRTC and caches under ~/.humming by default; keep all under /tmp."""
    for var, path in (
        ("HUMMING_CACHE_DIR", "/tmp/humming-cache"),
        ("HUMMING_TMP_DIR", "/tmp/humming-tmp"),
        ("TRITON_CACHE_DIR", "/tmp/triton-cache"),
    ):
        os.environ.setdefault(var, path)
        try:
            os.makedirs(os.environ[var], exist_ok=True)
        except OSError:
            pass
    try:
        sys.stdout.reconfigure(line_buffering=True)
    except Exception:
        pass


def log(*args):
    print(*args, flush=True)


def one_line(exc):
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:400]


def fmt_us(value):
    return f"{value:.1f} us" if value is not None else "n/a"


def parse_ms(var, default):
    raw = os.environ.get(var, default)
    return [int(x) for x in raw.replace(" ", "").split(",") if x]


def device_of(torch, humming):
    """the current CUDA device and a header's words for it: torch, Humming, the GPU"""
    dev = torch.device("cuda", torch.cuda.current_device())
    props = torch.cuda.get_device_properties(dev)
    return dev, (
        f"torch {torch.__version__} humming {getattr(humming, '__version__', '?')} GPU {props.name} "
        f"({props.multi_processor_count} SMs, sm{props.major}{props.minor})"
    )


def heuristics_list(get_heuristics_config, layer_cfg_str, gemm_type, device_index):
    """Humming's own tuning list for a layer, as its forward path builds it when given none
    (kernel/humming.py HummingKernel._resolve_configs -> get_heuristics_config), as a private copy
    (the result is lru-cached) in the JSON form forward would serialise it to"""
    full = get_heuristics_config(
        json.loads(layer_cfg_str), use_f16_accum=False, gemm_type=gemm_type, device=device_index
    )
    return json.loads(
        json.dumps(full, default=lambda o: o.item() if hasattr(o, "item") else getattr(o, "value", str(o)))
    )


def interval_index(tuning_list, shape_m):
    """The launcher's rule (launcher.cpp find_kernel_configs_target_index): min < shape_m <= max,
    a max <= 0 meaning no upper bound."""
    for i, (lo, hi, _cfg) in enumerate(tuning_list):
        hi = hi if hi > 0 else (1 << 30)
        if lo < shape_m <= hi:
            return i
    return None


def time_graph(torch, fn):
    """fn() (any callable that launches on the current stream) captured GRAPH_CALLS times into one
    CUDA graph; the median over GRAPH_REPLAYS replays of the graph's time over GRAPH_CALLS, in us.
    fn may take the call's index (rotating weights): it is called as fn(i), i = 0 .. GRAPH_CALLS - 1."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            fn(i)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(GRAPH_CALLS):
            fn(i)
    graph.replay()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(GRAPH_REPLAYS):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1000.0 / GRAPH_CALLS)
    del graph
    return statistics.median(per_call)
