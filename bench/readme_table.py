#!/usr/bin/env python3
"""Produces the README's performance table: machine (CPU, cores, SIMD features, kernels chosen),
date, the exact command lines, and for each model the `edgelm bench` figures (prompt and generation
tokens/s, load time, time to first token, peak RSS, decode bandwidth next to the machine's read
bandwidth). With --llama-bench PATH it also runs bench/side_by_side.py and appends the edgelm /
llama.cpp ratios.

Models default to random-weight files of real shapes written by `edgelm synth` (for speed and
memory measurement only) into --models-dir when they are missing.

usage: bench/readme_table.py [--edgelm build/edgelm] [-t 2] [-p 512] [-n 128] [-r 5]
                             [--preset tinyllama-1.1b] [--types q4_0,q8_0,f16]
                             [--models-dir build/bench-models] [--llama-bench PATH] [--rounds 3]
                             [MODEL.gguf ...]
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, log):
    log.append(" ".join(shlex.quote(c) for c in cmd))
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edgelm", default=os.path.join(HERE, "..", "build", "edgelm"))
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("--preset", default="tinyllama-1.1b")
    ap.add_argument("--types", default="q4_0,q8_0,f16")
    ap.add_argument("--models-dir", default=os.path.join(HERE, "..", "build", "bench-models"))
    ap.add_argument("--llama-bench", help="also compare with this llama-bench binary")
    ap.add_argument("--rounds", type=int, default=3, help="side-by-side rounds")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()

    log = []
    models = args.models
    if not models:
        os.makedirs(args.models_dir, exist_ok=True)
        for t in args.types.split(","):
            path = os.path.join(args.models_dir, f"{args.preset}-{t}.gguf")
            if not os.path.exists(path):
                print(f"writing {path}", file=sys.stderr)
                run([args.edgelm, "synth", "--preset", args.preset, "--type", t, "-o", path], log)
            models.append(path)

    system = json.loads(run([args.edgelm, "inspect", "--system", "--json"], log))
    membw = json.loads(run([args.edgelm, "bench", "--membw", "-t", str(args.threads), "--json"], log))
    rows = []
    for m in models:
        print(f"measuring {m}", file=sys.stderr)
        rows.append(json.loads(run([args.edgelm, "bench", "-m", m, "-t", str(args.threads), "-p", str(args.p),
                                    "-n", str(args.n), "-r", str(args.r), "--json"], log)))
    side = None
    if args.llama_bench:
        side = run([sys.executable, os.path.join(HERE, "side_by_side.py"), "--llama-bench", args.llama_bench,
                    "--edgelm", args.edgelm, "-t", str(args.threads), "-p", str(args.p), "-n", str(args.n),
                    "--rounds", str(args.rounds)] + models, log)

    print(f"Machine: {system['cpu']}, {system['cores']} cores; SIMD: {' '.join(system['features'])}; "
          f"kernels: {system['isa']}  ")
    print(f"Date: {datetime.date.today().isoformat()}  ")
    print("Read bandwidth (`edgelm bench --membw`): " +
          ", ".join(f"{e['membw_gbps']:.1f} GB/s on {e['threads']} thread{'s' if e['threads'] > 1 else ''}"
                    for e in membw))
    print()
    print(f"| model | size | threads | pp{args.p} tok/s | tg{args.n} tok/s | load ms | TTFT 128 ms | "
          f"peak RSS MiB | decode GB/s (of read) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in rows:
        print(f"| {os.path.basename(d['model'])} | {d['model_bytes'] / 2**20:.0f} MiB | {d['threads']} | "
              f"{d['pp_tps']:.1f} ± {d['pp_tps_sd']:.1f} | {d['tg_tps']:.1f} ± {d['tg_tps_sd']:.1f} | "
              f"{d['load_ms']:.0f} | {d['ttft_ms']:.0f} | {d['peak_rss_mib']:.0f} | "
              f"{d['decode_gbps']:.1f} ({100 * d['decode_gbps'] / d['membw_gbps']:.0f}% of {d['membw_gbps']:.1f}) |")
    if side:
        print()
        print(f"Side by side with llama.cpp's llama-bench ({args.rounds} alternating rounds):")
        print()
        print(side.rstrip())
    print()
    print("Commands:")
    print()
    print("```")
    print("\n".join(log))
    print("```")


if __name__ == "__main__":
    main()
