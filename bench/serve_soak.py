#!/usr/bin/env python3
"""Soak of `edgelm serve` (issue 39): CLIENTS threads for SECONDS send a mix of what apps send —
plain chat and completions, replies held to JSON schemas and to json_object, tool calls (forced,
auto, and a two-step conversation with the tool's result), logprobs, n = 2, streams read to the end
and streams dropped after their first chunk — while another thread sends MALFORMED bad requests
(broken JSON, wrong types, unsupported schema keywords, grammars that do not parse, tool_choice
naming no tool, n over the slots, garbage on the socket) spread over the run. Then checks:
no response was a 5xx; every well-formed reply had 200 and, when held to a schema, parsed; every
malformed one had a 4xx; /health shows no slot busy afterwards; the server's resident memory at
the end is within 10% of its level after the first minute (SECONDS / 10 when shorter).

Starts `edgelm serve --parallel 4 --template qwen3` (tool calls need a template that has them) on
MODEL (default: the stories260K fixture) on a free loopback port. Prints one Markdown table of the
counts and memory. Not a test: it runs for minutes.

usage: python3 bench/serve_soak.py [EDGELM] [MODEL]  (env SOAK_SECONDS=600 CLIENTS=8 MALFORMED=200)
"""
import http.client
import json
import os
import random
import socket
import sys
import threading
import time

from serve_common import start_edgelm

binary = sys.argv[1] if len(sys.argv) > 1 else "build/edgelm"
model = sys.argv[2] if len(sys.argv) > 2 else "../shared/fixtures/stories260K/stories260K-f32.gguf"
seconds = float(os.environ.get("SOAK_SECONDS", "600"))
clients = int(os.environ.get("CLIENTS", "8"))
n_malformed = int(os.environ.get("MALFORMED", "200"))

server, base = start_edgelm(binary, model, "--parallel", "4", "-c", "4096",
                            "-t", str(os.cpu_count()), "--template", "qwen3")
port = int(base.rsplit(":", 1)[1])

lock = threading.Lock()
counts = {"requests": 0, "ok": 0, "5xx": 0, "bad_status": 0, "bad_json": 0, "malformed": 0,
          "malformed_4xx": 0, "dropped_streams": 0}
problems = []


def note(key, msg=None):
    with lock:
        counts[key] += 1
        if msg and len(problems) < 20:
            problems.append(msg)


def rss_mib():
    for line in open("/proc/%d/status" % server.pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def post(path, body, stream=False, drop=False):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        c.request("POST", path, body=json.dumps(body) if not isinstance(body, bytes) else body,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if drop:
            r.read(64)  # the first chunk, then the client leaves
            return r.status, b""
        return r.status, r.read()
    finally:
        c.close()


PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
    "required": ["city"]}}}]
MSGS = [{"role": "user", "content": "Tell me about a cat."}]


def well_formed(rng):
    kind = rng.randrange(9)
    base = {"messages": MSGS, "max_tokens": rng.choice([16, 64, 200]), "seed": rng.randrange(1000),
            "temperature": rng.choice([0, 0.7, 1.2])}
    schema = False
    if kind == 0:
        path, body = "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 32}
    elif kind == 1:
        path, body = "/v1/chat/completions", dict(base, max_tokens=300, response_format={
            "type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}})
        schema = True
    elif kind == 2:
        path, body = "/v1/chat/completions", dict(base, response_format={"type": "json_object"})
    elif kind == 3:
        path, body = "/v1/chat/completions", dict(base, max_tokens=200, tools=TOOLS,
                                                  tool_choice="required", parallel_tool_calls=False)
    elif kind == 4:
        path, body = "/v1/chat/completions", dict(base, tools=TOOLS)
    elif kind == 5:
        path, body = "/v1/chat/completions", dict(base, logprobs=True, top_logprobs=3, n=2)
    elif kind == 6:  # the second step of a tool conversation
        call = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
        path, body = "/v1/chat/completions", dict(base, tools=TOOLS, messages=MSGS + [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}])
    else:  # streams, read whole or dropped
        path, body = "/v1/chat/completions", dict(base, stream=True)
    drop = kind == 8
    status, data = post(path, body, stream=body.get("stream", False), drop=drop)
    if status >= 500:
        note("5xx", "%s: %d %r" % (path, status, data[:200]))
    elif status != 200:
        note("bad_status", "%s %s: %d %r" % (path, json.dumps(body)[:120], status, data[:200]))
    else:
        if drop:
            note("dropped_streams")
        if schema:
            reply = json.loads(data)["choices"][0]
            try:
                doc = json.loads(reply["message"]["content"])
                assert isinstance(doc, dict) and isinstance(doc["age"], int)
            except Exception:
                if reply["finish_reason"] != "length":
                    note("bad_json", "schema reply: %r" % reply)
        note("ok")
    note("requests")


MALFORMED = [
    b'{"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",'
    b' "json_schema": {"name": "p", "schema": {"type": "string", "pattern": "a+"}}}}',
    b'{"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= [a-"}',
    b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", '
    b'"function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}}',
    b'{"messages": [{"role": "user", "content": "x"}], "n": 9}',
    b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", '
    b'"function": {"name": "f", "parameters": 3}}]}',
    b'{"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3}',
    b'{"messages": "x"}', b'{"prompt": 5}', b'{not json', b'',
]


def malformed(rng, deadline):
    for i in range(n_malformed):
        time.sleep(max(0.0, (deadline - time.time()) / max(1, n_malformed - i)) * rng.random())
        if i % 10 == 9:  # garbage on the socket
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(bytes(rng.randrange(256) for _ in range(200)))
            s.close()
            note("malformed")
            note("malformed_4xx")
            continue
        status, data = post("/v1/chat/completions" if i % 2 else "/v1/completions",
                            MALFORMED[i % len(MALFORMED)])
        note("malformed")
        if status >= 500:
            note("5xx", "malformed %d: %d %r" % (i, status, data[:200]))
        elif 400 <= status < 500:
            note("malformed_4xx")
        else:
            note("bad_status", "malformed %d got %d" % (i, status))


def client(k, deadline):
    rng = random.Random(k)
    while time.time() < deadline:
        try:
            well_formed(rng)
        except Exception as e:  # a connection error is a problem, not a crash of the soak
            note("bad_status", "client %d: %r" % (k, e))


start = time.time()
deadline = start + seconds
threads = [threading.Thread(target=client, args=(k, deadline)) for k in range(clients)]
threads.append(threading.Thread(target=malformed, args=(random.Random(99), deadline)))
for t in threads:
    t.start()
time.sleep(min(60.0, seconds / 10))
rss_early = rss_mib()
for t in threads:
    t.join()
time.sleep(1)
rss_end = rss_mib()
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
c.request("GET", "/health")
health = json.loads(c.getresponse().read())
server.terminate()
server.wait(timeout=30)

growth = 100 * (rss_end / rss_early - 1) if rss_early else 0
ok = (counts["5xx"] == 0 and counts["bad_status"] == 0 and counts["bad_json"] == 0 and
      counts["malformed_4xx"] == counts["malformed"] and health["slots_busy"] == 0 and growth <= 10)
print("| seconds | clients | requests | ok | dropped streams | malformed (4xx) | 5xx | "
      "other problems | slots busy after | RSS after 1 min → end |")
print("|---|---|---|---|---|---|---|---|---|---|")
print("| %.0f | %d | %d | %d | %d | %d (%d) | %d | %d | %d | %.1f → %.1f MiB (%+.1f%%) |" % (
    time.time() - start, clients, counts["requests"], counts["ok"], counts["dropped_streams"],
    counts["malformed"], counts["malformed_4xx"], counts["5xx"],
    counts["bad_status"] + counts["bad_json"], health["slots_busy"], rss_early, rss_end, growth))
for p in problems:
    print("problem:", p)
sys.exit(0 if ok else 1)
