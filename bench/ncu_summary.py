#!/usr/bin/env python3
"""ncu_summary.py SRC_CSV [N]: what the warps of one profiled kernel wait for.

Reads the per-SASS-instruction export that bench/ncu_profile.sh leaves (src.csv: ncu --page
source --csv --print-source sass) and prints the stall samples summed by reason, the N (12)
instructions with the most samples with their top reasons, and the executed instructions split
by pipe family (integer ALU: LOP3/SHF/ISETP/IADD3/LEA/SEL/PRMT...; FMA: IMAD/FFMA/HFMA2/...;
tensor: HMMA/HGMMA; memory) -- on Hopper the integer ALU pipe runs at half the FMA rate, which
is what bounds the small-M kernels (bench/NOTES.md v15). Standard library only.
"""
import csv
import sys
from collections import Counter

ALU = {"LOP3", "SHF", "ISETP", "IADD3", "LEA", "SEL", "PRMT", "PLOP3", "FSEL", "IABS", "VIMNMX",
       "FLO", "POPC", "BREV", "IMNMX", "LOP"}
FMA = {"IMAD", "FFMA", "FADD", "FMUL", "HFMA2", "HADD2", "HMUL2", "F2FP", "IMUL", "FMNMX"}
TENSOR = {"HMMA", "HGMMA", "IMMA"}
MEM = {"LDS", "STS", "LDG", "STG", "LDGSTS", "LDSM", "LD", "ST", "ATOMS", "RED", "ATOMG",
       "UBLKCP", "UTMALDG", "SYNCS"}


def opcode(sass):
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    rows = list(csv.reader(open(sys.argv[1], newline="")))
    hdr = next(r for r in rows if "Source" in r and "Address" in r)
    data = rows[rows.index(hdr) + 1:]
    col = {h: i for i, h in enumerate(hdr)}
    samples = col.get("Warp Stall Sampling (All Samples)")
    executed = col.get("Instructions Executed")
    stalls = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]

    def num(r, i):
        try:
            return int(r[i])
        except (ValueError, IndexError, TypeError):
            return 0

    total = sum(num(r, samples) for r in data)
    by_reason = Counter()
    for r in data:
        for i in stalls:
            by_reason[hdr[i]] += num(r, i)
    print(f"stall samples: {total}")
    for name, n in by_reason.most_common(10):
        print(f"  {name:28s} {n:9d}  {100.0 * n / max(total, 1):5.1f}%")
    print(f"top {top} instructions by samples:")
    for r in sorted(data, key=lambda r: -num(r, samples))[:top]:
        why = sorted(((num(r, i), hdr[i][6:]) for i in stalls if num(r, i)), reverse=True)[:3]
        print(f"  {r[0][-6:]} {num(r, samples):7d}  {r[1].strip()[:56]:56s} "
              + ", ".join(f"{w} {n}" for n, w in why))
    pipes = Counter()
    for r in data:
        op = opcode(r[1])
        fam = ("alu" if op in ALU else "fma" if op in FMA else "tensor" if op in TENSOR
               else "memory" if op in MEM else "other")
        pipes[fam] += num(r, executed)
    allx = sum(pipes.values())
    print(f"executed warp instructions: {allx}")
    for fam, n in pipes.most_common():
        print(f"  {fam:8s} {n:11d}  {100.0 * n / max(allx, 1):5.1f}%")


if __name__ == "__main__":
    main()
