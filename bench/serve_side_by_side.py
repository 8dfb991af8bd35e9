#!/usr/bin/env python3
"""`edgelm serve` against llama.cpp's `llama-server` under the same streaming load: aggregate
decode tokens/s, tokens per CPU-second and time to first token with 1, 4 and 8 concurrent clients.

Starts `edgelm serve --parallel 4` and `llama-server -np 4` on MODEL, each on a free loopback port,
with the same threads (-t THREADS) and the same context per slot (edgelm's -c is a slot's,
llama-server's the total it splits over its slots: -c 512 against -c 2048; --no-kv-unified where
llama-server has it, so that its slots own their rows as edgelm's do). Each keeps its defaults
otherwise: llama-server continuous batching and flash attention auto (--no-webui where it has
it), each its own KV cache type (edgelm f32, llama-server f16; EDGELM_ARGS="--cache-type-k f16
--cache-type-v f16" matches them). Both stay up; only one is loaded at a time. A round runs each
client count on both servers in turn (which goes first swaps every round, so drift on a shared
machine hits both); every client sends one streamed /v1/completions request (N tokens,
ignore_eos, temperature 0; a prompt of its own in each round and client count, so neither server
answers from a cached prompt) and times its Server-Sent Events as they arrive. The requests ban
the byte tokens of a Llama SentencePiece vocabulary (ids 3-258, logit_bias -100): llama-server
runs its chat-output parser over every reply, and a random-weight model's stray bytes (invalid
UTF-8) make it fail the stream with a 500. edgelm ignores logit_bias; greedy decoding costs the
same whichever token wins.

Per server and client count it prints the median over REPEATS rounds of the aggregate decode
rate (tokens after each stream's first / the span from the first stream's first token to the
last token of any) and of the tokens per CPU-second (completion tokens over the server process's
CPU time in the round, from /proc, prefill included: the prompts are about 130 tokens of the
synthetic vocabulary), and the 50th and 99th percentiles of time to first token over every
stream of every round (from sending the request: with 8 clients on 4 slots, the wait for a slot
too); then the ratios edgelm / llama-server (tok/s above 1.0x and TTFT below 1.0x: edgelm
better). One Markdown table. Not a test: figures depend on the machine.

MODEL defaults to a TinyLlama-1.1B-shaped file of random weights made with `edgelm synth
--preset tinyllama-1.1b --type q4_k` when missing (synth writes one type throughout, as
llama-quantize --pure; it has no Q4_K_M mix). LLAMA_SERVER "none" measures edgelm alone.

usage: python3 bench/serve_side_by_side.py [EDGELM] [LLAMA_SERVER] [MODEL] [THREADS]  ("": default)
       (env REPEATS=3, N=64 tokens per stream, CLIENTS=1,4,8, EDGELM_ARGS, LLAMA_ARGS: more options)
"""
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from serve_common import concurrent_streams, cpu_seconds, decode_rate, start_edgelm

args = sys.argv[1:] + [""] * 4  # "" takes the default, so THREADS can follow a default MODEL
edgelm = args[0] or "build/edgelm"
llama = args[1] or "llama-server"
model = args[2] or "build/bench-serve/tinyllama-q4_k.gguf"
threads = args[3] or str(os.cpu_count())
repeats = int(os.environ.get("REPEATS", "3"))
n_tokens = int(os.environ.get("N", "64"))
client_counts = [int(c) for c in os.environ.get("CLIENTS", "1,4,8").split(",")]
SLOTS, SLOT_CTX = 4, 512

if not os.path.exists(model):
    os.makedirs(os.path.dirname(model) or ".", exist_ok=True)
    subprocess.run([edgelm, "synth", "--preset", "tinyllama-1.1b", "--type", "q4_k", "-o", model],
                   check=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_llama(log):
    """llama-server on a free port, once its /health says the model is loaded."""
    shown = subprocess.run([llama, "--help"], capture_output=True, text=True)
    help_text = shown.stdout + shown.stderr
    extra = [f for f in ("--no-webui", "--no-kv-unified") if f in help_text]
    port = free_port()
    server = subprocess.Popen([llama, "-m", model, "--host", "127.0.0.1", "--port", str(port),
                               "-np", str(SLOTS), "-c", str(SLOTS * SLOT_CTX), "-t", threads,
                               *extra, *shlex.split(os.environ.get("LLAMA_ARGS", ""))],
                              stdout=log, stderr=log)
    base = "http://127.0.0.1:%d" % port
    for _ in range(1200):
        if server.poll() is not None:
            break
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return server, base
        except (urllib.error.URLError, ConnectionError):
            pass  # not listening yet, or 503 while loading
        time.sleep(0.25)
    server.kill()
    log.seek(0)
    raise SystemExit("llama-server did not start:\n" + log.read().decode(errors="replace")[-3000:])


def percentile(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (k - lo)


NO_BYTES = {str(i): -100 for i in range(3, 259)}


def run(server, base, clients, round_no):
    """One round of `clients` streams: (decode tok/s, tokens per CPU-second, TTFTs in ms)."""
    bodies = [{"prompt": "Round %d, client %d of %d: once upon a time there was a little robot "
                         "who wanted to see the sea." % (round_no, i, clients),
               "max_tokens": n_tokens, "ignore_eos": True, "temperature": 0,
               "logit_bias": NO_BYTES}
              for i in range(clients)]
    cpu0 = cpu_seconds(server.pid)
    out = concurrent_streams(base + "/v1/completions", bodies)
    cpu = cpu_seconds(server.pid) - cpu0
    per_cpu = sum(o[3] for o in out) / cpu if cpu else float("nan")  # under a clock tick
    return decode_rate(out), per_cpu, [(o[1] - o[0]) * 1e3 for o in out]


servers = {}
log = tempfile.TemporaryFile()
try:
    servers["edgelm"] = start_edgelm(edgelm, model, "--parallel", str(SLOTS), "-c", str(SLOT_CTX),
                                     "-t", threads, *shlex.split(os.environ.get("EDGELM_ARGS", "")))
    if llama != "none":
        servers["llama-server"] = start_llama(log)
    names = list(servers)
    for name in names:  # warm-up: pages of the model, the thread pools
        run(*servers[name], 1, -1)
    rates = {(n, c): [] for n in names for c in client_counts}
    cpus = {(n, c): [] for n in names for c in client_counts}
    ttfts = {(n, c): [] for n in names for c in client_counts}
    for r in range(repeats):
        order = names if r % 2 == 0 else names[::-1]
        for c in client_counts:
            for name in order:
                rate, cpu, ttft = run(*servers[name], c, r)
                rates[name, c].append(rate)
                cpus[name, c].append(cpu)
                ttfts[name, c].extend(ttft)
finally:
    for proc, _ in servers.values():
        proc.terminate()
        proc.wait()

rows = {}
for (name, c), xs in rates.items():
    rows[name, c] = (statistics.median(xs), statistics.median(cpus[name, c]),
                     percentile(ttfts[name, c], 50), percentile(ttfts[name, c], 99))
print("| clients | server | decode tok/s | tokens per CPU-second | TTFT p50 ms | TTFT p99 ms |")
print("|--------:|--------|-------------:|----------------------:|------------:|------------:|")
for c in client_counts:
    for name in names:
        print("| %d | %s | %.1f | %.1f | %.1f | %.1f |" % ((c, name) + rows[name, c]))
    if len(names) == 2:
        ours, theirs = rows["edgelm", c], rows["llama-server", c]
        print("| %d | edgelm / llama-server | %s |" % (c, " | ".join(
            "%.2fx" % (a / b) if b else "-" for a, b in zip(ours, theirs))))
print("\n%d rounds (medians; TTFT percentiles over all %d rounds' streams), %d tokens per stream, "
      "-t %s, %d slots of %d tokens, %s" % (repeats, repeats, n_tokens, threads, SLOTS, SLOT_CTX,
                                             os.path.basename(model)))
