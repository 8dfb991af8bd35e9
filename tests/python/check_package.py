"""The checks of tests/cli_python.sh, run by the venv's python with the installed package.

usage: python check_package.py EDGELM_BINARY FIXTURES_DIR
Each failed check prints "FAIL: ..." on stderr; the exit status is the number failed (capped)."""

import array
import json
import os
import signal
import subprocess
import sys
import threading

import edgelm

binary, fixtures = sys.argv[1], sys.argv[2]
gguf = f"{fixtures}/stories260K/stories260K-f32.gguf"
passed = failed = 0


def check(cond, what):
    """Counts a check, and says which when it failed."""
    global passed, failed
    passed += bool(cond)
    if not cond:
        failed += 1
        print(f"FAIL: {what}", file=sys.stderr)


def raises(cls, pattern, fn, *args, **kwargs):
    """fn(*args, **kwargs) raises cls (an edgelm.Error) whose message contains pattern."""
    try:
        fn(*args, **kwargs)
    except cls as e:
        check(isinstance(e, edgelm.Error) and pattern in str(e),
              f"{cls.__name__} '{e}' lacks '{pattern}'")
        return
    except BaseException as e:
        check(False, f"want {cls.__name__} '{pattern}', got {type(e).__name__}: {e}")
        return
    check(False, f"want {cls.__name__} '{pattern}', nothing raised")


def cli_run(prompt, n, logits=0):
    """`edgelm run --temp 0 --ignore-eos --json` on the fixture: its JSON object."""
    args = [binary, "run", "-m", gguf, "-p", prompt, "--temp", "0", "-n", str(n), "--ignore-eos",
            "--json", "-t", "1"] + (["--logits", str(logits)] if logits else [])
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def vm_rss_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


# inspect maps a GGUF file: the peak memory of a fresh python inspecting a 150 MB file stays
# far below the file (reading it in, as loading to run does, would pass it)
synth = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"edgelm-inspect-{os.getpid()}.gguf")
try:
    subprocess.run([binary, "synth", "--preset", "tinyllama-1.1b", "--type", "q8_0", "--layers",
                    "1", "-o", synth], check=True, capture_output=True)
    size_kib = os.path.getsize(synth) // 1024
    peak = subprocess.run([sys.executable, "-c",
                           "import edgelm, resource, sys; i = edgelm.inspect(sys.argv[1]); "
                           "print(i['n_layers'], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
                           synth], check=True, capture_output=True, text=True).stdout.split()
    check(peak[0] == "1" and int(peak[1]) < size_kib // 2,
          f"inspect of a {size_kib} KiB file: n_layers {peak[0]}, peak RSS {peak[1]} KiB")
finally:
    if os.path.exists(synth):
        os.remove(synth)

golden = json.load(open(f"{fixtures}/stories260K/golden/greedy.json"))
with edgelm.Model(gguf, n_ctx=256, n_threads=1) as model:
    info = edgelm.inspect(gguf)
    check(info["architecture"] == "llama" and info["n_vocab"] == 512 and model.info == info,
          f"inspect: {info}")

    # greedy generation: the goldens, the CLI's ids and text, streaming's text
    for case in golden["cases"]:
        r = model.generate(case["prompt"], max_tokens=golden["n_predict"], temperature=0,
                           ignore_eos=True)
        check(r.prompt_ids == case["prompt_ids"] and r.ids == case["generated_ids"],
              f"golden '{case['prompt']}': {r.ids}")
        check(r.stats.generated_tokens == len(r.ids) and r.stats.prompt_tokens == len(r.prompt_ids),
              f"stats {r.stats}")
        streamed = "".join(model.generate(case["prompt"], max_tokens=golden["n_predict"],
                                          temperature=0, ignore_eos=True, stream=True))
        check(streamed == r.text, f"stream '{streamed}' != '{r.text}'")
    cli = cli_run("Lily and Ben", 12, logits=3)
    r = model.generate("Lily and Ben", max_tokens=12, temperature=0, ignore_eos=True)
    check(r.ids == cli["generated_ids"] and r.text == cli["text"],
          f"CLI {cli['generated_ids']}, {r.ids}")
    sampled = [model.generate("Once", max_tokens=16, temperature=0.9, seed=7).ids for _ in range(2)]
    check(sampled[0] == sampled[1], f"same seed, different ids: {sampled}")

    # logits: the CLI's rows (prefill, then one decode step each), all=True's rows
    ids = cli["prompt_ids"] + cli["generated_ids"]
    n_prompt = len(cli["prompt_ids"])
    rows = model.logits(ids, all=True)
    for t, want in enumerate(cli["logits"]):
        got = list(model.logits(ids[:n_prompt + t]))
        check(max(abs(a - b) for a, b in zip(got, want)) < 1e-4, f"logits row {t}")
        check(max(abs(a - b) for a, b in zip(rows[n_prompt - 1 + t], want)) < 1e-4,
              f"all=True row {n_prompt - 1 + t}")
    # the prefill row bit for bit (the JSON holds each float to 15 digits: compare as floats)
    check(array.array("f", model.logits(cli["prompt_ids"])) == array.array("f", cli["logits"][0]),
          "prefill row not bit-exact")

    # tokenize / detokenize
    text = "Once upon a time, Lily saw a big dog. 日本 ü"
    toks = model.tokenize(text)
    check(toks[0] == 1 and model.tokenize(text, add_special=False) == toks[1:], "BOS")
    check(model.detokenize(toks).strip() == text, f"round trip: '{model.detokenize(toks)}'")
    check(model.tokenize(text.encode()) == toks, "bytes prompt")

    # cancelling a stream: breaking out stops it, the model is usable after
    stream = model.generate("Once upon a time", max_tokens=200, temperature=0, ignore_eos=True,
                            stream=True)
    for i, _ in enumerate(stream):
        if i == 3:
            break
    stream.close()
    check(model.generate("Once upon a time", max_tokens=4, temperature=0).ids ==
          golden["cases"][0]["generated_ids"][:4], "generate after a cancelled stream")

    # Ctrl-C during a long generation: KeyboardInterrupt out of generate, the model usable after
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        model.generate("Once", max_tokens=1 << 20, ignore_eos=True)
        check(False, "SIGINT did not stop generate")
    except KeyboardInterrupt:
        check(True, "")
    check(model.generate("Once upon a time", max_tokens=4, temperature=0).ids ==
          golden["cases"][0]["generated_ids"][:4], "generate after an interrupted one")

    # errors: bad arguments
    raises(edgelm.ArgumentError, "not valid UTF-8", model.generate, b"Once \xff\xfe upon")
    raises(edgelm.ArgumentError, "NUL", model.tokenize, "a\0b")
    raises(edgelm.ArgumentError, "out of range", model.detokenize, [1, 100000])
    raises(edgelm.ArgumentError, "out of range", model.logits, [1, -3])
    raises(edgelm.ArgumentError, "max_tokens", model.generate, "x", max_tokens=0)
    raises(edgelm.ArgumentError, "", model.logits, [])
    raises(edgelm.ArgumentError, "context", model.generate, "Once upon a time " * 200)
    inner = model.generate("Once", max_tokens=8, stream=True)
    next(inner)
    raises(edgelm.Error, "stream", model.generate, "x")
    inner.close()

# errors: closed model, files, contexts
raises(edgelm.ClosedError, "closed", model.generate, "Once")
raises(edgelm.ClosedError, "closed", model.tokenize, "Once")
raises(edgelm.ClosedError, "closed", model.logits, [1])
model.close()
raises(edgelm.FileError, "/nonexistent/model.gguf", edgelm.Model, "/nonexistent/model.gguf")
raises(edgelm.FileError, "/nonexistent/model.gguf", edgelm.inspect, "/nonexistent/model.gguf")
raises(edgelm.ArgumentError, "context size -5", edgelm.Model, gguf, n_ctx=-5)
raises(edgelm.FormatError, "", edgelm.Model, __file__)
raises(edgelm.ArgumentError, "n_ctx 4294967552", edgelm.Model, gguf, n_ctx=2**32 + 256)

# two models in two threads: each the golden ids
results = {}


def worker(k):
    with edgelm.Model(gguf, n_ctx=128, n_threads=1) as m:
        results[k] = [m.generate(c["prompt"], max_tokens=golden["n_predict"], temperature=0,
                                 ignore_eos=True).ids for c in golden["cases"]]


threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
want = [c["generated_ids"] for c in golden["cases"]]
check(results.get(0) == want and results.get(1) == want, "two models in two threads")

# 1,000 load/unload cycles: resident memory flat (the first 100 warm the allocator up)
for i in range(1000):
    with edgelm.Model(gguf, n_ctx=64, n_threads=1) as m:
        m.generate("Once", max_tokens=2, temperature=0)
    if i == 99:
        rss0 = vm_rss_kib()
rss1 = vm_rss_kib()
check(rss1 - rss0 < 2048, f"RSS grew {rss1 - rss0} KiB over 900 load/unload cycles")

print(f"check_package: {passed} passed, {failed} failed; RSS {rss0} -> {rss1} KiB", file=sys.stderr)
sys.exit(min(failed, 100))
