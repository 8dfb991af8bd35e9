#!/usr/bin/env python3
"""Aggregate decode tokens/s of `edgelm serve` with 1, 2 and 4 concurrent streams (continuous
batching: each step runs the next token of every stream through one forward pass).

Starts `edgelm serve --parallel 4` on a free loopback port with MODEL (by default a
TinyLlama-1.1B-shaped Q4_0 file of random weights, made with `edgelm synth` when missing), then
for each stream count S sends S streamed completions at once (ignore_eos, max_tokens N, temperature
0) and measures, from the Server-Sent Events as they arrive, the decode rate of all streams
together: tokens after each stream's first / (last token of any stream - first token of any), and
the same tokens per CPU-second of the server process (utime + stime from /proc), which a busy
shared machine disturbs less than wall time. Stream counts are interleaved (1, 2, 4, 1, 2, 4...)
and the best of REPEATS rounds kept. Prints one Markdown table with the speedups over one stream.
Not a test: figures depend on the machine.

usage: python3 bench/serve_batching.py [EDGELM] [MODEL] [THREADS]   (env N: tokens per stream)
"""
import os
import subprocess
import sys

from serve_common import concurrent_streams, cpu_seconds, decode_rate, start_edgelm

binary = sys.argv[1] if len(sys.argv) > 1 else "build/edgelm"
model = sys.argv[2] if len(sys.argv) > 2 else "build/bench-serve/tinyllama-q4_0.gguf"
threads = sys.argv[3] if len(sys.argv) > 3 else str(os.cpu_count())
n_tokens = int(os.environ.get("N", "48"))
repeats = int(os.environ.get("REPEATS", "3"))

if not os.path.exists(model):
    os.makedirs(os.path.dirname(model) or ".", exist_ok=True)
    subprocess.run([binary, "synth", "--preset", "tinyllama-1.1b", "--type", "q4_0", "-o", model],
                   check=True)

server, base = start_edgelm(binary, model, "--parallel", "4", "-c", "256", "-t", threads)
try:
    url = base + "/v1/completions"

    def run(s):
        bodies = [{"prompt": "Stream %d: once upon a time" % i, "max_tokens": n_tokens,
                   "ignore_eos": True, "temperature": 0} for i in range(s)]
        cpu0 = cpu_seconds(server.pid)
        out = concurrent_streams(url, bodies)
        cpu = cpu_seconds(server.pid) - cpu0
        return decode_rate(out), sum(o[3] for o in out) / cpu

    run(1)  # warm-up: pages of the model, the pool's threads
    best = {s: (0.0, 0.0) for s in (1, 2, 4)}
    for _ in range(repeats):
        for s in (1, 2, 4):
            wall, cpu = run(s)
            best[s] = (max(best[s][0], wall), max(best[s][1], cpu))
    b1 = best[1]
    print("| streams | aggregate decode tok/s | vs 1 stream | tokens per CPU-second | vs 1 stream |")
    print("|--------:|-----------------------:|------------:|----------------------:|------------:|")
    for s in (1, 2, 4):
        wall, cpu = best[s]
        print("| %7d | %22.1f | %10.2fx | %21.1f | %10.2fx |" % (s, wall, wall / b1[0], cpu, cpu / b1[1]))
finally:
    server.terminate()
    server.wait()
