"""Bounded load on `edgelm serve` over loopback: CLIENTS threads each send PER_CLIENT well-formed
requests (chat and completions, streamed and not, /v1/models, /health; varied sampling and
lengths) while MALFORMED bad ones go out from another thread (broken JSON, wrong types, unknown
routes, wrong methods, garbage on the socket, bodies cut short, over-limit bodies). Checks every
well-formed request completes with 200 (a whole JSON body with usage, or a stream ending in
data: [DONE]), no response at all is a 5xx, and the server's RSS after the load is within
RSS_SLACK_MIB of what it was after a warm-up round of the same mix (not under AddressSanitizer,
whose quarantine holds freed memory: there the leak check at exit stands in for it).
usage: python3 serve_load.py URL PID CLIENTS PER_CLIENT MALFORMED [no-rss]"""
import http.client
import json
import random
import socket
import sys
import threading

url, pid = sys.argv[1], int(sys.argv[2])
clients, per_client, malformed = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
check_rss = sys.argv[6:7] != ["no-rss"]
host, port = url.split("//")[1].split(":")
port = int(port)
RSS_SLACK_MIB = 16
errors, lock = [], threading.Lock()


def problem(msg):
    with lock:
        errors.append(msg)


def rss_mib():
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def request(method, path, body=None, headers=None):
    c = http.client.HTTPConnection(host, port, timeout=120)
    try:
        c.request(method, path, body=body, headers=headers or {"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def well_formed(rng, i):
    kind = i % 6
    if kind == 4:
        status, body = request("GET", "/v1/models")
        if status != 200 or json.loads(body)["object"] != "list":
            problem("models: %d %r" % (status, body[:200]))
        return
    if kind == 5:
        status, body = request("GET", "/health")
        if status != 200:
            problem("health: %d" % status)
        return
    chat, stream = kind in (0, 1), kind in (1, 3)
    req = {"max_tokens": rng.randint(1, 48), "temperature": rng.choice([0, 0.7, 1.2]),
           "top_k": rng.choice([0, 40]), "top_p": rng.choice([1, 0.9]), "seed": rng.randint(0, 99),
           "stream": stream}
    if rng.random() < 0.3:
        req["stop"] = [rng.choice([".", "Lily", "\n"])]
    if chat:
        msgs = [{"role": "system", "content": "You tell stories."}]
        for t in range(rng.randint(0, 2)):
            msgs += [{"role": "user", "content": "Tell me about Lily %d." % t},
                     {"role": "assistant", "content": "Lily was a little girl."}]
        msgs.append({"role": "user", "content": rng.choice(["Once upon a time", "A dog", "Ben ran"])})
        req["messages"] = msgs
        path = "/v1/chat/completions"
    else:
        req["prompt"] = rng.choice(["Once upon a time", "The cat", "One day, Tom"])
        path = "/v1/completions"
    status, body = request("POST", path, json.dumps(req))
    if status != 200:
        problem("%s: status %d %r" % (path, status, body[:200]))
        return
    text = body.decode()
    if stream:
        events = [e for e in text.split("\n\n") if e]
        if not events or events[-1] != "data: [DONE]":
            problem("%s stream did not end in [DONE]: %r" % (path, text[-200:]))
            return
        last = json.loads(events[-2][6:])
    else:
        last = json.loads(text)
    if not last["choices"][0]["finish_reason"] or "usage" not in last:
        problem("%s incomplete: %r" % (path, text[-300:]))
    elif last["usage"]["completion_tokens"] > req["max_tokens"]:
        problem("%s: %d tokens > max_tokens %d" % (path, last["usage"]["completion_tokens"], req["max_tokens"]))


def client(seed, n):
    rng = random.Random(seed)
    for i in range(n):
        try:
            well_formed(rng, i + seed)
        except Exception as e:  # a dropped connection or a bad body is a failure too
            problem("client %d request %d: %r" % (seed, i, e))


BAD = [
    ("POST", "/v1/chat/completions", b'{"messages": ['),
    ("POST", "/v1/chat/completions", b'{"messages": "hi"}'),
    ("POST", "/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": -4}'),
    ("POST", "/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "temperature": "warm"}'),
    ("POST", "/v1/chat/completions", b'{"messages": [{"role": "bot", "content": "x"}]}'),
    ("POST", "/v1/chat/completions", b'{"messages": [{"role": "user"}]}'),
    ("POST", "/v1/completions", b'{"prompt": 12}'),
    ("POST", "/v1/completions", b'{"prompt": "x", "stop": [1, 2]}'),
    ("POST", "/v1/completions", b'\xff\xfe\x00garbage'),
    ("POST", "/v1/completions", b''),
    ("GET", "/v1/completions", None),
    ("DELETE", "/v1/models", None),
    ("GET", "/nowhere", None),
    ("POST", "/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "n": 5}'),  # over the 4 slots
]


def raw(payload, read=True):
    s = socket.create_connection((host, port), timeout=30)
    try:
        s.sendall(payload)
        if read:
            data = s.recv(4096)
            first = data.split(b"\r\n", 1)[0]
            parts = first.split()
            if len(parts) >= 2 and parts[1].isdigit() and int(parts[1]) >= 500:
                problem("raw %r: %r" % (payload[:40], first))
    finally:
        s.close()


def bad_requests(n):
    rng = random.Random(7)
    for i in range(n):
        try:
            k = i % (len(BAD) + 3)
            if k < len(BAD):
                method, path, body = BAD[k]
                status, resp = request(method, path, body)
                if status >= 500 or status < 400:
                    problem("bad %s %s %r: status %d" % (method, path, body, status))
                elif status != 404 and b'"error"' not in resp:
                    problem("bad %s %s: no error object: %r" % (method, path, resp[:200]))
            elif k == len(BAD):
                raw(b"NONSENSE\x01 garbage request line\r\n\r\n")
            elif k == len(BAD) + 1:  # a body announced but cut short, then the client leaves
                raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"prompt\":", read=False)
            else:  # over the body limit
                status, _ = request("POST", "/v1/completions", b'{"prompt":"' + b"a" * (1 << 20) + b'"}')
                if status != 413:
                    problem("over-limit body: status %d" % status)
        except Exception as e:
            problem("bad request %d: %r" % (i, e))


# warm-up: one client's worth of the mix, then the baseline RSS
client(1000, 12)
base = rss_mib()
threads = [threading.Thread(target=client, args=(s, per_client)) for s in range(clients)]
threads.append(threading.Thread(target=bad_requests, args=(malformed,)))
for t in threads:
    t.start()
for t in threads:
    t.join()
# the same load again: memory that grows with the number of requests shows up as a second rise
mid = rss_mib()
client(2000, 12)
end = rss_mib()
print("RSS after warm-up %.1f MiB, after the load %.1f MiB, after another round %.1f MiB" % (base, mid, end))
if check_rss and end - base > RSS_SLACK_MIB:
    problem("RSS grew from %.1f to %.1f MiB" % (base, end))
for e in errors[:20]:
    print("FAIL: " + e, file=sys.stderr)
print("%d well-formed + %d malformed requests, %d problems" % (clients * per_client + 24, malformed, len(errors)))
sys.exit(1 if errors else 0)
