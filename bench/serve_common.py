"""What the server benchmarks share (serve_batching.py, serve_soak.py, serve_side_by_side.py):
starting `edgelm serve` on a free loopback port, a process's CPU seconds from /proc (which a busy
shared machine disturbs less than wall time), and timing streamed completions as their
Server-Sent Events arrive. Not a benchmark itself.
"""
import json
import os
import re
import subprocess
import threading
import time
import urllib.request

TICKS = os.sysconf("SC_CLK_TCK")


def start_edgelm(binary, model, *args):
    """`edgelm serve -m MODEL ARGS` on 127.0.0.1, port 0 (any free one); returns the process and
    its base URL. The access log is off and the rest of stderr drained: an unread pipe would fill
    and block the connection threads."""
    server = subprocess.Popen([binary, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0",
                               "--log-format", "none", *args],
                              stderr=subprocess.PIPE, text=True)
    seen = []
    for line in server.stderr:
        seen.append(line)
        port = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if port:
            threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
            return server, "http://127.0.0.1:" + port.group(1)
    server.wait()
    raise SystemExit("edgelm serve did not start: " + "".join(seen))


def cpu_seconds(pid):
    """User + system CPU seconds of process pid so far."""
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def stream_completion(url, body):
    """POSTs body (stream forced on) to url, a /v1/completions route, and reads its events:
    returns (send time, first token's, last token's, completion tokens). A token's time is when the
    chunk holding its text arrived; the count is the final chunk's usage, as edgelm and
    llama-server both send it."""
    data = json.dumps(dict(body, stream=True)).encode()
    req = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    times, n = [], 0
    with urllib.request.urlopen(req) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: {"):
                continue
            ev = json.loads(line[6:])
            if "choices" not in ev:  # an error event in place of a chunk
                raise RuntimeError("%s: %s" % (url, line[6:300]))
            if ev["choices"] and ev["choices"][0].get("text"):
                times.append(time.perf_counter())
            if ev.get("usage"):
                n = ev["usage"]["completion_tokens"]
    if not times or not n:
        raise RuntimeError("%s: a stream without text or without usage" % url)
    return t0, times[0], times[-1], n


def concurrent_streams(url, bodies):
    """stream_completion of each body at once, one thread each; their results in order."""
    out = [None] * len(bodies)
    errors = []

    def one(i):
        try:
            out[i] = stream_completion(url, bodies[i])
        except Exception as e:  # reported after the others end, not lost in a thread
            errors.append(e)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return out


def decode_rate(results):
    """Aggregate decode tokens/s of concurrent streams: the tokens after each stream's first, over
    the span from the first stream's first token to the last token of any. NaN when that span is
    0: a model so small that each reply arrived in one chunk."""
    decoded = sum(n - 1 for _, _, _, n in results)
    span = max(r[2] for r in results) - min(r[1] for r in results)
    return decoded / span if span > 0 else float("nan")
