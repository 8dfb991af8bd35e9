#!/usr/bin/env python3
"""edgelm quantize against llama.cpp's llama-quantize on the same GGUF file.

For each type or recipe, runs `edgelm quantize` and `llama-quantize` in alternation (which goes
first swaps every round, so that drift on a shared machine hits both alike) at the same thread
count, with the same importance matrix or none, and prints the mean wall and CPU seconds (user +
system, from the children's rusage) of each tool and the ratios llama-quantize / edgelm: above
1.0x edgelm is faster. The two outputs are then compared tensor by tensor (name, type and the
sha256 of the bytes, tests/lib/gguf_tensors.py): "identical" or the count that differ. CPU
seconds are the figure to trust on a busy machine; wall seconds on a quiet one.

usage: bench/quant_side_by_side.py --llama-quantize PATH [--edgelm PATH] [-t 2] [--rounds 1]
                                   [--imatrix FILE] [--pure] [--types q4_k_m,iq4_xs]
                                   [--tmp DIR] [--json] MODEL.gguf

llama.cpp is not part of edgelm: build it yourself and pass llama-quantize's path (docs/bench.md).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import gguf_tensors  # noqa: E402

DEFAULT_TYPES = "q4_0,q4_1,q5_0,q5_1,q8_0,q2_k,q3_k_m,q4_k_m,q5_k_m,q6_k,iq4_nl,iq4_xs"


def timed(cmd):
    """Runs cmd (output discarded, stderr shown on failure); returns (wall s, CPU s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands(args, qtype, out_e, out_l):
    """The two tools' command lines for one type (same threads, imatrix, --pure)."""
    e = [args.edgelm, "quantize", "-m", args.model, "-o", out_e, "--type", qtype,
         "-t", str(args.t)]
    lq = [args.llama_quantize]
    if args.imatrix:
        e += ["--imatrix", args.imatrix]
        lq += ["--imatrix", args.imatrix]
    if args.pure:
        e.append("--pure")
        lq.append("--pure")
    lq += [args.model, out_l, qtype.upper(), str(args.t)]
    return e, lq


def differing(a, b):
    """Tensors whose name, type or bytes differ between two GGUF files."""
    ta, tb = gguf_tensors.tensors(a), gguf_tensors.tensors(b)
    return sorted(n for n in set(ta) | set(tb) if ta.get(n) != tb.get(n))


def compare(args, qtype):
    out_e = os.path.join(args.tmp, f"edgelm-{qtype}.gguf")
    out_l = os.path.join(args.tmp, f"llama-{qtype}.gguf")
    e_cmd, l_cmd = commands(args, qtype, out_e, out_l)
    runs = {"edgelm": [], "llama": []}
    for r in range(args.rounds):
        order = [("edgelm", e_cmd), ("llama", l_cmd)]
        for tool, cmd in order if r % 2 == 0 else order[::-1]:
            runs[tool].append(timed(cmd))
    diff = differing(out_e, out_l)
    for f in (out_e, out_l):
        os.remove(f)
    mean = {k: (statistics.mean(w for w, _ in v), statistics.mean(c for _, c in v))
            for k, v in runs.items()}
    return {"type": qtype, "edgelm_wall_s": mean["edgelm"][0], "edgelm_cpu_s": mean["edgelm"][1],
            "llama_wall_s": mean["llama"][0], "llama_cpu_s": mean["llama"][1],
            "ratio_wall": mean["llama"][0] / mean["edgelm"][0],
            "ratio_cpu": mean["llama"][1] / mean["edgelm"][1],
            "differing_tensors": diff}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--llama-quantize", required=True)
    ap.add_argument("--edgelm", default=os.path.join("build", "edgelm"))
    ap.add_argument("-t", type=int, default=2, help="threads of both tools (default 2)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--imatrix", help="importance matrix (llama.cpp's GGUF or .dat) for both")
    ap.add_argument("--pure", action="store_true", help="--pure to both: one type, no recipe")
    ap.add_argument("--types", default=DEFAULT_TYPES,
                    help=f"comma-separated (default {DEFAULT_TYPES})")
    ap.add_argument("--tmp", default=os.path.join("build", "bench-quant"),
                    help="folder of the outputs, each removed once compared")
    ap.add_argument("--json", action="store_true", help="one JSON list instead of the table")
    args = ap.parse_args()
    os.makedirs(args.tmp, exist_ok=True)
    rows = []
    if not args.json:
        print(f"{os.path.basename(args.model)}, -t {args.t}, {args.rounds} round(s)"
              f"{', imatrix ' + os.path.basename(args.imatrix) if args.imatrix else ''}"
              f"{', --pure' if args.pure else ''}; ratio: llama-quantize / edgelm")
        print("| type | edgelm wall s | edgelm CPU s | llama-quantize wall s "
              "| llama-quantize CPU s | ratio wall | ratio CPU | tensors |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
    for qtype in args.types.split(","):
        row = compare(args, qtype.strip().lower())
        rows.append(row)
        if not args.json:
            d = row["differing_tensors"]
            print(f"| {row['type']} | {row['edgelm_wall_s']:.1f} | {row['edgelm_cpu_s']:.1f} "
                  f"| {row['llama_wall_s']:.1f} | {row['llama_cpu_s']:.1f} "
                  f"| **{row['ratio_wall']:.2f}x** | {row['ratio_cpu']:.2f}x "
                  f"| {'identical' if not d else f'{len(d)} differ ({d[0]}, ...)'} |", flush=True)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    sys.exit(1 if any(r["differing_tensors"] for r in rows) else 0)


if __name__ == "__main__":
    main()
