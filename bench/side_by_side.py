#!/usr/bin/env python3
"""edgelm bench against llama.cpp's llama-bench on the same GGUF files.

Runs the two tools in alternation (edgelm, llama-bench, edgelm, llama-bench, ...) so that drift on
a shared machine hits both alike (llama-bench with -mmp 0 and 1, the better of the two per test), then prints per file, kernel set and thread count the mean ± sd
of each tool's prompt (pp) and generation (tg) tokens/s over the rounds, the ratios edgelm /
llama.cpp, and each tool's decode bandwidth (weight bytes per token × tg tokens/s) next to
edgelm's measured read bandwidth.

Kernel sets ("rows"):
  native  edgelm's own choice for this CPU against --llama-bench (built with -DGGML_NATIVE=ON)
  avx2    (--isa avx2) edgelm under EDGELM_ISA=avx2 against --llama-bench-avx2, a llama-bench built
          with -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF: what an AVX2-only CPU gets, on
          any x86 machine. On an AVX-512 machine both rows are reported; where edgelm's native
          choice already is avx2, the native row is that row.

usage: bench/side_by_side.py [--llama-bench PATH] [--isa avx2 --llama-bench-avx2 PATH]
                             [--edgelm PATH] [-t 1,2] [-p 512] [-n 128] [--rounds 3] [--json]
                             MODEL.gguf [MODEL.gguf ...]

llama.cpp is not part of edgelm: build it yourself and pass the llama-bench binaries' paths
(docs/bench.md shows the commands).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run_json(cmd, env=None):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=env)
    return json.loads(out.stdout)


def edgelm_env(isa):
    env = dict(os.environ)
    if isa == "native":
        env.pop("EDGELM_ISA", None)
    else:
        env["EDGELM_ISA"] = isa
    return env


def edgelm_round(args, model, isa, threads):
    d = run_json([args.edgelm, "bench", "-m", model, "-t", str(threads), "-p", str(args.p),
                  "-n", str(args.n), "-r", "1", "--json"], edgelm_env(isa))
    return d["pp_tps"], d["tg_tps"], d


def llama_round(args, llama_bench, model, threads):
    """llama-bench with its weights mapped (-mmp 1, its default) and read into memory (-mmp 0):
    the better of the two for each test, so that the peer runs at its best on this machine."""
    rows = run_json([llama_bench, "-m", model, "-t", str(threads), "-p", str(args.p),
                     "-n", str(args.n), "-r", "1", "-mmp", "0,1", "-o", "json"])
    pp = max(r["avg_ts"] for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0)
    tg = max(r["avg_ts"] for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0)
    return pp, tg


def mean_sd(v):
    return statistics.mean(v), (statistics.stdev(v) if len(v) > 1 else 0.0)


def kernel_sets(args):
    """(label, EDGELM_ISA value, llama-bench path) for each row to measure."""
    system = run_json([args.edgelm, "inspect", "--system", "--json"], edgelm_env("native"))
    sets = []
    if args.llama_bench:
        sets.append((system["isa"], "native", args.llama_bench))
    if args.isa == "avx2" and not (args.llama_bench and system["isa"] == "avx2"):
        if "avx2" not in system["available"]:
            sys.exit("side_by_side: --isa avx2: this CPU has no AVX2 (edgelm inspect --system)")
        sets.append(("avx2", "avx2", args.llama_bench_avx2))
    return sets


def measure(args, model, label, isa, llama_bench, threads):
    e_pp, e_tg, l_pp, l_tg = [], [], [], []
    info = None
    for r in range(args.rounds):
        pp, tg, info = edgelm_round(args, model, isa, threads)
        e_pp.append(pp), e_tg.append(tg)
        pp, tg = llama_round(args, llama_bench, model, threads)
        l_pp.append(pp), l_tg.append(tg)
        print(f"{os.path.basename(model)} {label} -t {threads} round {r + 1}/{args.rounds}: edgelm pp "
              f"{e_pp[-1]:.1f} tg {e_tg[-1]:.1f} | llama.cpp pp {l_pp[-1]:.1f} tg {l_tg[-1]:.1f}",
              file=sys.stderr)
    gb = info["decode_bytes_per_token"] / 1e9
    return {"model": model, "bytes": info["model_bytes"], "isa": info["isa"], "threads": threads,
            "llama_build": isa,
            "llama_bench": llama_bench, "membw_gbps": info["membw_gbps"],
            "edgelm": {"pp": mean_sd(e_pp), "tg": mean_sd(e_tg), "decode_gbps": statistics.mean(e_tg) * gb},
            "llama": {"pp": mean_sd(l_pp), "tg": mean_sd(l_tg), "decode_gbps": statistics.mean(l_tg) * gb},
            "ratio_pp": statistics.mean(e_pp) / statistics.mean(l_pp),
            "ratio_tg": statistics.mean(e_tg) / statistics.mean(l_tg)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-bench", help="llama-bench built for this machine (-DGGML_NATIVE=ON)")
    ap.add_argument("--isa", choices=["avx2"], help="also measure edgelm's AVX2 kernels (EDGELM_ISA=avx2)")
    ap.add_argument("--llama-bench-avx2", help="llama-bench built with -DGGML_NATIVE=OFF -DGGML_AVX2=ON "
                    "-DGGML_AVX512=OFF (with --isa avx2)")
    ap.add_argument("--edgelm", default=os.path.join(os.path.dirname(__file__), "..", "build", "edgelm"))
    ap.add_argument("-t", "--threads", default=f"1,{os.cpu_count()}" if os.cpu_count() > 1 else "1",
                    help="thread counts, comma-separated (default: 1 and all cores)")
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    if args.isa == "avx2" and not args.llama_bench_avx2:
        ap.error("--isa avx2 needs --llama-bench-avx2 PATH")
    if not args.llama_bench and not args.isa:
        ap.error("give --llama-bench PATH, or --isa avx2 with --llama-bench-avx2 PATH, or both")
    threads = sorted({int(t) for t in args.threads.split(",")})

    results = [measure(args, model, label, isa, lb, t)
               for model in args.models for label, isa, lb in kernel_sets(args) for t in threads]

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"| file | size | threads | tool | pp{args.p} tok/s | tg{args.n} tok/s | decode GB/s | of read GB/s |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for r in results:
        name, size = os.path.basename(r["model"]), f"{r['bytes'] / 2**20:.0f} MiB"
        for tool, label in (("edgelm", f"edgelm ({r['isa']})"), ("llama", f"llama.cpp ({r['llama_build']} build)")):
            t = r[tool]
            print(f"| {name} | {size} | {r['threads']} | {label} | {t['pp'][0]:.1f} ± {t['pp'][1]:.1f} | "
                  f"{t['tg'][0]:.1f} ± {t['tg'][1]:.1f} | {t['decode_gbps']:.1f} | "
                  f"{100 * t['decode_gbps'] / r['membw_gbps']:.0f}% of {r['membw_gbps']:.1f} |")
        print(f"| {name} | | {r['threads']} | **edgelm / llama.cpp** | **{r['ratio_pp']:.2f}×** | "
              f"**{r['ratio_tg']:.2f}×** | | |")


if __name__ == "__main__":
    main()
