#!/usr/bin/env python3
"""seed.py: writes the fuzz inputs of tests/fuzz/ from the fixtures (tests/fixtures/**), so the
committed corpora can be regenerated and reviewed instead of being opaque bytes.

  python3 tests/fuzz/seed.py [HCONVERT]     (from the repository root; HCONVERT: build/hconvert)

corpus/<target>/ is replaced: seeds in each target's input format (see the fuzz_*.c heads).
regress/<target>/ only gains (or refreshes) the named inputs of issue 13 written here (those
named accept_* must be accepted, not merely survived); other files there (crash inputs saved
by hand) are kept. Needs python3, GNU tar and zstd, and a
built hconvert for the container seeds (converted from pruned fixtures)."""
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import ctypes
import ctypes.util

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
OUT = os.path.join(ROOT, "tests", "fuzz")

# positions in fuzz_config.c's and fuzz_index.c's fixture lists (append-only there too)
CONFIG_FIXTURES = [
    "ckpt/single", "quant/gptq_4bit_sym_v1", "quant/gptq_4bit_asym_v1", "quant/gptq_4bit_v2",
    "quant/gptq_2bit", "quant/gptq_3bit", "quant/gptq_8bit", "quant/gptq_desc_act",
    "quant/gptq_dynamic", "quant/gptq_legacy_qcfg", "quant/gptq_mixtral_moe", "quant/awq_gemm",
    "quant/awq_legacy", "quant/ct_mixed", "quant/ct_w4_actorder", "quant/ct_w4a16_g32_asym",
    "quant/ct_w8a8_int", "quant/ct_fp8_block", "quant/ct_nvfp4", "quant/ct_mxfp4_v014",
    "quant/ct_mxfp8", "quant/ct_moe_qwen3", "quant/ct_w3_new", "quant/ct_w4afp8",
    "quant/deepseek_fp8", "quant/gptoss_mxfp4", "quant/ct_fp8_channel", "ckpt/sharded",
]
INDEX_FIXTURES = ["ckpt/demo", "ckpt/sharded", "quant/bad_index_total_size"]
# the fixture a bad_* config is paired with, by quant_method
METHOD_FIXTURE = {"gptq": "quant/gptq_4bit_sym_v1", "awq": "quant/awq_gemm",
                  "compressed-tensors": "quant/ct_mixed", "fp8": "quant/deepseek_fp8",
                  "mxfp4": "quant/gptoss_mxfp4"}


def read(path):
    with open(path, "rb") as f:
        return f.read()


def put(target, kind, name, data):
    d = os.path.join(OUT, kind, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def st_split(data):
    """(header bytes, data bytes) of a safetensors file, or None when malformed."""
    if len(data) < 8:
        return None
    n = struct.unpack_from("<Q", data)[0]
    return (data[8:8 + n], data[8 + n:]) if n <= len(data) - 8 else None


def st_build(tensors, meta=None):
    """A safetensors file from [(name, dtype, shape, bytes)]."""
    hdr, blob = {}, b""
    if meta:
        hdr["__metadata__"] = meta
    for name, dtype, shape, raw in tensors:
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob


def seed_safetensors():
    files = [os.path.join(FIX, "st", f) for f in sorted(os.listdir(os.path.join(FIX, "st")))]
    files += [os.path.join(FIX, "corrupt", f) for f in sorted(os.listdir(os.path.join(FIX, "corrupt")))]
    files += [os.path.join(FIX, p, "model.safetensors") for p in CONFIG_FIXTURES[1:27:3]]
    for path in files:
        if not path.endswith(".safetensors"):
            continue
        parts = st_split(read(path))
        if parts is None or len(parts[0]) > 16384:
            continue
        name = os.path.relpath(path, FIX).replace("/", "_")
        # the target's format: the data size (which the header's offsets must fill), then the header
        put("safetensors", "corpus", name, struct.pack("<Q", len(parts[1])) + parts[0])


def seed_index():
    for i, fx in enumerate(INDEX_FIXTURES):
        put("index", "corpus", "%d_none" % i, bytes([i]))
    for d in sorted(os.listdir(os.path.join(FIX, "ckpt"))) + ["../quant/bad_index_total_size"]:
        p = os.path.join(FIX, "ckpt", d, "model.safetensors.index.json")
        if not os.path.exists(p):
            continue
        text = read(p)
        sel = 1 if b"-of-00003" in text else 2 if "bad_index_total_size" in d else 0
        put("index", "corpus", os.path.basename(d), bytes([sel]) + text)


def config_input(sel, folder):
    cfg = os.path.join(folder, "config.json")
    data = bytes([sel]) + (read(cfg) if os.path.exists(cfg) else b"")
    for bit, legacy in ((0, "quantize_config.json"), (0x80, "quant_config.json")):
        p = os.path.join(folder, legacy)
        if os.path.exists(p):
            data = bytes([sel | bit]) + data[1:] + b"\0" + read(p)
    return data


def seed_config():
    for i, fx in enumerate(CONFIG_FIXTURES):
        put("config", "corpus", fx.replace("/", "_"), config_input(i, os.path.join(FIX, fx)))
    for d in sorted(os.listdir(os.path.join(FIX, "quant"))):
        folder = os.path.join(FIX, "quant", d)
        if not d.startswith("bad_") or not os.path.exists(os.path.join(folder, "config.json")):
            continue
        qc = json.loads(read(os.path.join(folder, "config.json"))).get("quantization_config") or {}
        fx = METHOD_FIXTURE.get(qc.get("quant_method"), "ckpt/single")
        put("config", "corpus", d, config_input(CONFIG_FIXTURES.index(fx), folder))


def prune(src, dst, keep):
    """A copy of fixture folder src whose model.safetensors keeps only the tensors keep() accepts."""
    os.makedirs(dst)
    for f in os.listdir(src):
        p = os.path.join(src, f)
        if os.path.isfile(p) and not f.endswith(".safetensors"):
            shutil.copy(p, dst)
    data = read(os.path.join(src, "model.safetensors"))
    hdr, blob = st_split(data)
    h = json.loads(hdr)
    kept = [(k, v["dtype"], v["shape"], blob[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in sorted(h.items()) if k != "__metadata__" and keep(k, v)]
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(st_build(kept))


def seed_container(hconvert):
    """Containers of each tile layout (int with and without zero points, act-order, fp4,
    mxfold, fp8, fused experts), of MoE blocks (with their moe_layers record) and of zstd
    source tensors, converted from pruned fixtures."""
    norm = lambda k: "norm" in k
    cases = {
        "int4_sym": ("quant/gptq_4bit_sym_v1", "q_proj"), "int2": ("quant/gptq_2bit", "q_proj"),
        "int8": ("quant/ct_w8a8_int", "q_proj"), "int4_zeros": ("quant/awq_gemm", "q_proj"),
        "actorder": ("quant/gptq_desc_act", "q_proj"), "fp4": ("quant/ct_nvfp4", "down_proj"),
        "mxfold": ("quant/ct_mxfp4_v014", "q_proj"), "fp8": ("quant/ct_fp8_channel", "q_proj"),
        # whole MoE blocks (convert refuses a block without its router or an expert since
        # session 12): their containers carry the moe_layers record
        "experts": ("quant/gptoss_mxfp4", ".mlp."), "moe_qwen2": ("quant/ct_moe_qwen2_shared", ".mlp."),
        "zstd": ("quant/ct_mxfp4_v014", "lm_head"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (fx, part) in cases.items():
            src = os.path.join(tmp, name)
            prune(os.path.join(FIX, fx), src, lambda k, v, part=part: part in k or norm(k))
            out = os.path.join(tmp, name + ".out")
            subprocess.run([hconvert, "convert", src, out], check=True, stdout=subprocess.DEVNULL)
            put("container", "corpus", name + ".hconvert", read(os.path.join(out, "model.hconvert")))


def tiny_checkpoint(folder):
    """A small checkpoint folder: config, tokenizer and a safetensors of two plain tensors."""
    os.makedirs(folder)
    shutil.copy(os.path.join(FIX, "ckpt", "single", "config.json"), folder)
    shutil.copy(os.path.join(FIX, "ckpt", "single", "tokenizer.json"), folder)
    st = st_build([("lm_head.weight", "F16", [4, 16], bytes(range(128))),
                   ("model.norm.weight", "BF16", [16], b"\x80\x3f" * 16)])
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(st)


def gnu_tar(folder, members, dot):
    """A tar as GNU tar writes it (reproducible: names sorted, owner and times zeroed);
    dot: `tar -cf - -C folder .`, entries "./" and "./NAME"."""
    args = ["tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
            "--format=gnu", "-cf", "-", "-C", folder] + (["."] if dot else members)
    return subprocess.run(args, check=True, stdout=subprocess.PIPE).stdout


def zstd(data):
    return subprocess.run(["zstd", "-q", "-c", "-19"], input=data, check=True,
                          stdout=subprocess.PIPE).stdout


def zip_of(folder, prefix):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        if prefix:
            z.writestr(zipfile.ZipInfo(prefix, (1980, 1, 1, 0, 0, 0)), b"")
        for f in sorted(os.listdir(folder)):
            z.writestr(zipfile.ZipInfo(prefix + f, (1980, 1, 1, 0, 0, 0)), read(os.path.join(folder, f)),
                       zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def seed_archive():
    for f in sorted(os.listdir(os.path.join(FIX, "archives"))):
        data = read(os.path.join(FIX, "archives", f))
        if len(data) <= 16384:
            put("archive", "corpus", f, data)
    with tempfile.TemporaryDirectory() as tmp:
        ck = os.path.join(tmp, "ck")
        tiny_checkpoint(ck)
        members = sorted(os.listdir(ck))
        tar = gnu_tar(ck, members, False)
        nested = gnu_tar(tmp, ["ck"], False)
        put("archive", "corpus", "flat.tar", tar)
        put("archive", "corpus", "nested.tar", nested)
        put("archive", "corpus", "flat.tar.gz", gzip.compress(tar, mtime=0))
        put("archive", "corpus", "nested.tar.zst", zstd(nested))
        put("archive", "corpus", "flat.zip", zip_of(ck, ""))
        put("archive", "corpus", "nested.zip", zip_of(ck, "ck/"))
        # issue 13: the way people pack a folder, `tar -cf ck.tar -C ck .`: "./" entries
        dot = gnu_tar(ck, members, True)
        put("archive", "regress", "accept_dot_entries.tar", dot)
        put("archive", "regress", "accept_dot_entries.tar.gz", gzip.compress(dot, mtime=0))
        put("archive", "regress", "accept_dot_entries.tar.zst", zstd(dot))
        put("archive", "regress", "accept_dot_entries.zip", zip_of(ck, "./"))


def npy(descr, shape_text, data, fortran=False, version=1):
    d = ("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_text)).encode()
    pre = 10 if version == 1 else 12
    d += b" " * (-(pre + len(d) + 1) % 64) + b"\n"
    size = struct.pack("<H", len(d)) if version == 1 else struct.pack("<I", len(d))
    return b"\x93NUMPY" + bytes([version, 0]) + size + d + data


def seed_npy():
    found = []
    for dirpath, _, files in os.walk(FIX):
        found += [os.path.join(dirpath, f) for f in files if f.endswith(".npy")]
    for p in sorted(found, key=lambda p: (os.path.getsize(p), p))[:12]:
        put("npy", "corpus", os.path.relpath(p, FIX).replace("/", "_"), read(p))
    put("npy", "corpus", "f4_2x3.npy", npy("<f4", "(2, 3)", struct.pack("<6f", *range(6))))
    put("npy", "corpus", "f4_fortran.npy", npy("<f4", "(2, 3)", struct.pack("<6f", *range(6)), True))
    put("npy", "corpus", "i4_3x1.npy", npy("<i4", "(3, 1)", struct.pack("<3i", -1, 0, 7)))
    put("npy", "corpus", "i8_1x2.npy", npy("<i8", "(1, 2)", struct.pack("<2q", 5, -2**31)))
    put("npy", "corpus", "v2_f4.npy", npy("<f4", "(1, 1)", struct.pack("<f", 1.5), version=2))
    put("npy", "corpus", "empty_0x4.npy", npy("<f4", "(0, 4)", b""))
    # issue 13: a zero-element shape whose other extent loops for ever
    put("npy", "regress", "shape_u64max_0.npy", npy("<f4", "(18446744073709551615, 0)", b""))
    put("npy", "regress", "shape_minus1_0.npy", npy("<f4", "(-1, 0)", b""))


def regress_config():
    # issue 13: GPTQ `dynamic` given as a JSON array (resolve_gptq read a NULL item name)
    fx = "quant/gptq_dynamic"
    cfg = json.loads(read(os.path.join(FIX, fx, "config.json")))
    cfg["quantization_config"]["dynamic"] = [{"-:.*k_proj": {}}, "+:.*o_proj"]
    put("config", "regress", "gptq_dynamic_array",
        bytes([CONFIG_FIXTURES.index(fx)]) + json.dumps(cfg, indent=2).encode())
    # issue 13: a pattern exponential for a backtracking engine, as a compressed-tensors ignore
    fx = "quant/ct_mixed"
    cfg = json.loads(read(os.path.join(FIX, fx, "config.json")))
    cfg["quantization_config"]["ignore"] = ["re:" + "(a*)*" * 50 + "b"] + cfg["quantization_config"].get("ignore", [])
    put("config", "regress", "ct_ignore_regex_blowup",
        bytes([CONFIG_FIXTURES.index(fx)]) + json.dumps(cfg, indent=2).encode())


def xxh3(data):
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash"))
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(data, len(data))


def zstd_zeros(n):
    """A zstd frame of n zero bytes (n a multiple of 128 KiB) as RLE blocks: 4 bytes per 128 KiB."""
    blk = 128 << 10
    frame = struct.pack("<IBQ", 0xFD2FB528, 0xE0, n)  # single segment, 8-byte content size
    count = n // blk
    for i in range(count):
        frame += struct.pack("<I", (blk << 3) | (1 << 1) | (i + 1 == count))[:3] + b"\0"
    return frame


def regress_container():
    # issue 13: one zstd tensor declaring 4 GiB (sizes honest, every hash valid), 128 KiB on disk
    raw = 4 << 30
    z = zstd_zeros(raw)
    t = {"name": "model.embed_tokens.weight", "dtype": "BF16", "shape": [65536, 32768],
         "padded_shape": [65536, 32768], "layout": "source", "layout_version": 1, "offset": 4096,
         "length": len(z), "encoding": "zstd", "raw_length": raw, "hash": "%016x" % xxh3(z)}
    hdr = {"format": "hconvert", "required_features": ["zstd"],
           "model": {"converter": "hconvert 0.1.0", "source_format": "safetensors",
                     "source_version": None, "target": "tiles", "tp_rank": 0, "tp_size": 1,
                     "tile_config": {"tile_n": 64, "tile_k": 64, "align": 128}, "config_json": None},
           "tensors": [t]}
    h = json.dumps(hdr, indent=1).encode()
    assert 64 + len(h) <= 4096
    size = 4096 + len(z)
    pre = b"\x89HCVT\r\n\x1a" + struct.pack("<HHIQQQQQ", 1, 0, 64, 64, len(h), 4096, size, xxh3(h))
    pre += struct.pack("<Q", xxh3(pre))
    put("container", "regress", "zstd_4gib.hconvert", pre + h + b"\0" * (4096 - 64 - len(h)) + z)


def main():
    hconvert = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "hconvert")
    for t in ("safetensors", "index", "config", "container", "archive", "npy"):
        shutil.rmtree(os.path.join(OUT, "corpus", t), ignore_errors=True)
    seed_safetensors()
    seed_index()
    seed_config()
    seed_container(hconvert)
    seed_archive()
    seed_npy()
    regress_config()
    regress_container()


if __name__ == "__main__":
    main()
