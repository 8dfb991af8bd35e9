#!/usr/bin/env python3
"""edgelm bench against llama.cpp's llama-bench on the same GGUF files.

Runs the two tools in alternation (edgelm, llama-bench, edgelm, llama-bench, ...) so that drift on
a shared machine hits both alike, then prints per file the mean ± sd of each tool's prompt (pp)
and generation (tg) tokens/s over the rounds, the ratios edgelm / llama.cpp, and each tool's
decode bandwidth (weight bytes per token × tg tokens/s) next to edgelm's measured read bandwidth.

usage: bench/side_by_side.py --llama-bench PATH [--edgelm PATH] [-t 2] [-p 512] [-n 128]
                             [--rounds 3] [--json] MODEL.gguf [MODEL.gguf ...]

llama.cpp is not part of edgelm: build it yourself and pass the llama-bench binary's path.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run_json(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return json.loads(out.stdout)


def edgelm_round(args, model):
    d = run_json([args.edgelm, "bench", "-m", model, "-t", str(args.threads), "-p", str(args.p),
                  "-n", str(args.n), "-r", "1", "--json"])
    return d["pp_tps"], d["tg_tps"], d


def llama_round(args, model):
    rows = run_json([args.llama_bench, "-m", model, "-t", str(args.threads), "-p", str(args.p),
                     "-n", str(args.n), "-r", "1", "-o", "json"])
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0)
    return pp, tg


def mean_sd(v):
    return statistics.mean(v), (statistics.stdev(v) if len(v) > 1 else 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-bench", required=True, help="path of a llama-bench binary")
    ap.add_argument("--edgelm", default=os.path.join(os.path.dirname(__file__), "..", "build", "edgelm"))
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()

    results = []
    for model in args.models:
        e_pp, e_tg, l_pp, l_tg = [], [], [], []
        info = None
        for r in range(args.rounds):
            pp, tg, info = edgelm_round(args, model)
            e_pp.append(pp), e_tg.append(tg)
            pp, tg = llama_round(args, model)
            l_pp.append(pp), l_tg.append(tg)
            print(f"{os.path.basename(model)} round {r + 1}/{args.rounds}: edgelm pp {e_pp[-1]:.1f} "
                  f"tg {e_tg[-1]:.1f} | llama.cpp pp {l_pp[-1]:.1f} tg {l_tg[-1]:.1f}", file=sys.stderr)
        gb = info["decode_bytes_per_token"] / 1e9
        res = {"model": model, "bytes": info["model_bytes"], "isa": info["isa"], "threads": args.threads,
               "membw_gbps": info["membw_gbps"],
               "edgelm": {"pp": mean_sd(e_pp), "tg": mean_sd(e_tg), "decode_gbps": statistics.mean(e_tg) * gb},
               "llama": {"pp": mean_sd(l_pp), "tg": mean_sd(l_tg), "decode_gbps": statistics.mean(l_tg) * gb},
               "ratio_pp": statistics.mean(e_pp) / statistics.mean(l_pp),
               "ratio_tg": statistics.mean(e_tg) / statistics.mean(l_tg)}
        results.append(res)

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"| file | size | tool | pp{args.p} tok/s | tg{args.n} tok/s | decode GB/s | of read GB/s |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for r in results:
        name, size = os.path.basename(r["model"]), f"{r['bytes'] / 2**20:.0f} MiB"
        for tool, label in (("edgelm", f"edgelm ({r['isa']})"), ("llama", "llama.cpp")):
            t = r[tool]
            print(f"| {name} | {size} | {label} | {t['pp'][0]:.1f} ± {t['pp'][1]:.1f} | "
                  f"{t['tg'][0]:.1f} ± {t['tg'][1]:.1f} | {t['decode_gbps']:.1f} | "
                  f"{100 * t['decode_gbps'] / r['membw_gbps']:.0f}% of {r['membw_gbps']:.1f} |")
        print(f"| {name} | | **edgelm / llama.cpp** | **{r['ratio_pp']:.2f}×** | **{r['ratio_tg']:.2f}×** | | |")


if __name__ == "__main__":
    main()
