"""The checks of tests/cli_python.sh, run by the venv's python with the installed package.

usage: python check_package.py EDGELM_BINARY FIXTURES_DIR
Each failed check prints "FAIL: ..." on stderr; the exit status is the number failed (capped)."""

import array
import glob
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
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


def cli_json(*args):
    """`edgelm ARGS` (which print one JSON object): its object."""
    return json.loads(subprocess.run([binary, *args], check=True, capture_output=True,
                                     text=True).stdout)


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

tmp = tempfile.mkdtemp(prefix="edgelm-py-")
text = f"{fixtures}/stories260K/text/valid.txt"
calib = f"{fixtures}/stories260K/text/calib.txt"

# chat as the server does: a forced tool call on stories260K with qwen3's template, its arguments
# valid under the function's schema (checked by hand); a JSON schema's reply parses
weather = {"type": "object", "required": ["city", "days"], "additionalProperties": False,
           "properties": {"city": {"type": "string"},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}}}
tools = [{"type": "function", "function": {"name": "get_weather", "description": "The weather",
                                           "parameters": weather}},
         {"type": "function", "function": {"name": "get_time", "parameters": {
             "type": "object", "properties": {"zone": {"type": "string"}}}}}]
with edgelm.Model(gguf, n_ctx=1024, n_threads=1) as model:
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = model.chat(question, tools=tools, template="qwen3", parallel_tool_calls=False,
                   tool_choice={"type": "function", "function": {"name": "get_weather"}},
                   temperature=0, max_tokens=200)
    call = r.tool_calls[0]["function"] if len(r.tool_calls) == 1 else {}
    args = json.loads(call.get("arguments", "null"))
    check(r.finish_reason == "tool_calls" and r.tool_calls[0]["type"] == "function" and
          r.tool_calls[0]["id"].startswith("call_") and call["name"] == "get_weather" and
          r.template == "qwen3", f"forced call: {r}")
    check(isinstance(args, dict) and set(args) == {"city", "days"} and
          isinstance(args["city"], str) and type(args["days"]) is int and 1 <= args["days"] <= 7,
          f"arguments not valid under the schema: {args}")
    several = model.chat(question, tools=tools, template="qwen3", tool_choice="required",
                         temperature=0, max_tokens=120)
    check(several.tool_calls and all(c["function"]["name"] in ("get_weather", "get_time")
                                      for c in several.tool_calls), f"required: {several}")
    # the call and its result as the next turn's messages: rendered, answered
    turn = question + [r.message, {"role": "tool", "content": '{"sky": "blue"}'}]
    after = model.chat(turn, tools=tools, template="qwen3", temperature=0, max_tokens=8)
    check(after.finish_reason in ("stop", "length", "tool_calls"), f"after a tool result: {after}")
    schema = {"type": "object", "required": ["name", "age"],
              "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}
    r = model.chat([{"role": "user", "content": "A person as JSON"}], temperature=0,
                   response_format={"type": "json_schema", "json_schema": {"schema": schema}},
                   max_tokens=200)
    doc = json.loads(r.text) if r.finish_reason == "stop" else None
    check(isinstance(doc, dict) and isinstance(doc.get("name"), str) and
          type(doc.get("age")) is int, f"json_schema reply: {r}")
    # any object: stories260K writes keys until max_tokens, so only its opening is checked
    r = model.chat([{"role": "user", "content": "JSON"}], temperature=0, max_tokens=40,
                   response_format={"type": "json_object"})
    check(r.text.startswith("{") and (r.finish_reason == "length" or
                                      isinstance(json.loads(r.text), dict)), f"json_object: {r}")
    r = model.chat([{"role": "system", "content": "Tell a story."},
                    {"role": "user", "content": "Once"}], temperature=0, max_tokens=8)
    check(r.template == "plain" and r.finish_reason == "length" and len(r.ids) == 8 and
          r.text == model.detokenize(r.ids), f"plain chat: {r}")
    raises(edgelm.ArgumentError, "unknown chat template", model.chat, question, template="nope")
    raises(edgelm.UnsupportedError, "has no tool calls", model.chat, question, tools=tools)
    raises(edgelm.ArgumentError, "cannot be combined", model.chat, question, tools=tools,
           template="qwen3", tool_choice="required", response_format={"type": "json_object"})
    raises(edgelm.ArgumentError, "role 'system'", model.chat,
           [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}])
    raises(edgelm.ArgumentError, "content", model.chat, [{"role": "user", "content": b"\xff"}])
check("chat" in edgelm.chat_templates()[3] and "qwen3" in edgelm.chat_templates(), "templates")

# tool calls opened and closed with control tokens (LFM2's), preserved while a request has tools:
# a tiny model on a vocabulary of the test's making, LFM2's markers its control tokens 0 and 1,
# whose logits are all 0 (output norm zeroed), so greedy draws the lowest id allowed: the opening
# marker, which fires "auto"'s lazy grammar, the call spelled in bytes, the closing marker, EOS
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import gguf_tensors  # noqa: E402
import gguf_vocab  # noqa: E402

V = gguf_vocab


def flat_model(name, controls):
    """A tiny llama model on a vocabulary of the control tokens `controls` (ids 0..), <unk>, <s>,
    </s> and the 256 bytes, whose logits are all 0 (output norm zeroed): greedy draws the lowest
    id allowed."""
    k = len(controls)
    gguf_vocab.write(f"{tmp}/{name}-vocab.gguf",
                     [(t, V.CONTROL) for t in controls] +
                     [("<unk>", V.UNKNOWN), ("<s>", V.CONTROL), ("</s>", V.CONTROL)] +
                     [(f"<0x{b:02X}>", V.BYTE) for b in range(256)], bos=k + 1, eos=k + 2, unk=k)
    path = f"{tmp}/{name}.gguf"
    subprocess.run([binary, "synth", "--arch", "llama", "--tiny", "--vocab",
                    f"{tmp}/{name}-vocab.gguf", "-o", path], check=True, capture_output=True)
    _, table = gguf_tensors.layout(path)
    _, ne, _, off = next(t for t in table if t[0] == "output_norm.weight")
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(bytes(4 * ne[0]))  # F32 zeros
    return path


markers = flat_model("markers", ["<|tool_call_start|>", "<|tool_call_end|>"])
now = [{"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}]
ask = [{"role": "user", "content": "time?"}]
with edgelm.Model(markers, n_ctx=1024, n_threads=1) as m:
    r = m.chat(ask, tools=now, template="lfm2", temperature=0, max_tokens=16,
               parallel_tool_calls=False)
    check(r.ids[0] == 0 and r.ids[-1] == 1 and r.finish_reason == "tool_calls" and
          [c["function"]["name"] for c in r.tool_calls] == ["now"],
          f"lfm2 call between control tokens: {r.ids} {r.finish_reason} {r.tool_calls}")
    r = m.chat(ask, template="lfm2", temperature=0, max_tokens=4)
    check(r.ids == [0] * 4 and r.text == "" and not r.tool_calls,
          f"without tools a control token has no text: {r.ids} {r.text!r}")

# gpt-oss's harmony markers as control tokens 0-4 of the same kind of model: a required call is
# written with them (the lowest ids the grammar allows) and read back as the call
harmony = flat_model("harmony", ["<|channel|>", "<|message|>", "<|start|>", "<|end|>",
                                "<|constrain|>"])
with edgelm.Model(harmony, n_ctx=2048, n_threads=1) as m:
    # no arguments ({} with whitespace, bounded, which greedy takes): nothing else is lower
    none = [{"type": "function", "function": {"name": "now", "parameters": {
        "type": "object", "properties": {}, "additionalProperties": False}}}]
    r = m.chat(ask, tools=none, tool_choice="required", template="gpt-oss", temperature=0,
               max_tokens=256)
    check(r.ids[0] == 0 and 4 in r.ids and 1 in r.ids and r.finish_reason == "tool_calls" and
          [c["function"]["name"] for c in r.tool_calls] == ["now"] and r.text == "" and
          r.reasoning == "" and
          r.message == {"role": "assistant", "content": None, "tool_calls": r.tool_calls},
          f"gpt-oss call in channels: {r.ids} {r.finish_reason} {r.tool_calls} {r.text!r}")
    # its reasoning effort, as the server's reasoning_effort
    r = m.chat(ask, template="gpt-oss", reasoning_effort="high", temperature=0, max_tokens=2)
    check(len(r.ids) == 2, f"reasoning_effort high: {r.ids}")
    raises(edgelm.ArgumentError, "reasoning_effort: 'max'", m.chat, ask, template="gpt-oss",
           reasoning_effort="max")

# embeddings: the CLI's vectors bit for bit, of an embedding model (EmbeddingGemma's shape,
# bidirectional, mean pooling, Dense projections) and of a generative one
emb = f"{tmp}/gemma-embedding.gguf"
subprocess.run([binary, "synth", "--arch", "gemma-embedding", "--tiny", "--vocab", gguf, "-o", emb,
                "-s", "5"], check=True, capture_output=True)
texts = ["Once upon a time", "Lily and Ben went to the park. 日本 ü"]
for path in (emb, gguf):
    with edgelm.Model(path, n_ctx=128, n_threads=1) as m:
        vectors = m.embed(texts)
        for t, v in zip(texts, vectors):
            want = cli_json("embed", "-m", path, "-p", t, "--json", "-t", "1")["embedding"]
            check(array.array("f", v) == array.array("f", want), f"embed {path} '{t}'")
        check(array.array("f", m.embed(texts[0])[0]) == array.array("f", vectors[0]),
              "a str embeds as a list of one")
        raw = m.embed(texts[0], normalize=False)[0]
        check(abs(sum(x * x for x in raw) - 1) > 1e-3, "normalize=False")
        raises(edgelm.ArgumentError, "not mean, cls or last", m.embed, "x", pooling="max")
        raises(edgelm.ArgumentError, "n_ctx", m.embed, "Once upon a time " * 100)
raises(edgelm.ClosedError, "closed", m.embed, "x")
raises(edgelm.ClosedError, "closed", m.chat, [{"role": "user", "content": "x"}])

# quantize + evaluate: the CLI's file byte for byte, the CLI's report figure for figure
cli_q, py_q = f"{tmp}/cli-q4_0.gguf", f"{tmp}/py-q4_0.gguf"
subprocess.run([binary, "quantize", "-m", gguf, "-o", cli_q, "--type", "q4_0", "-t", "1"],
               check=True, capture_output=True)
steps = []
q = edgelm.quantize(gguf, py_q, type="q4_0", threads=1,
                    progress=lambda done, total, name: steps.append((done, total, name)))
check(open(cli_q, "rb").read() == open(py_q, "rb").read(), "quantize: not the CLI's file")
check(len(steps) == q["n_fallback"] + 43 and steps[-1][:2] == (48, 48) and
      q["type"] == "q4_0" and len(q["tensors"]) == 48 and q["file_bytes"] == os.path.getsize(py_q),
      f"quantize: {len(steps)} progress calls, {steps[-1:]}, {q['type']}")
check(any("written as f16" in w for w in q["warnings"]), f"warnings {q['warnings'][:1]}")
cli_r = cli_json("eval", "--ref", gguf, "-m", cli_q, "-f", text, "-c", "128", "-t", "1", "--json")
svg = f"{tmp}/plot.svg"
r = edgelm.evaluate(gguf, py_q, text, n_ctx=128, threads=1, svg=svg)
got, want = r["models"][0], cli_r["models"][0]
check(got["kld_mean"] == want["kld_mean"] and got["kld_mean"] > 0, f"KLD {got['kld_mean']} "
      f"!= the CLI's {want['kld_mean']}")
check({k: v for k, v in got.items() if k not in ("name", "path")} ==
      {k: v for k, v in want.items() if k not in ("name", "path")} and
      r["baseline"] == cli_r["baseline"] and got["path"] == py_q, "report differs from the CLI's")
schema = json.load(open(os.path.join(os.path.dirname(__file__), "../../docs/eval.schema.json")))
model_schema = schema["definitions"]["model"]
check(set(r) == set(schema["required"]) and set(got) == set(model_schema["required"]) and
      set(got["verdicts"]) == {"ppl", "similarity"}, f"report keys {sorted(r)}, {sorted(got)}")
check(open(svg).read().lstrip().startswith(("<svg", "<?xml")) and "</svg>" in open(svg).read(),
      "evaluate's svg")
prompts = ["Once upon a time", "Lily and Ben"]
r = edgelm.evaluate(gguf, [py_q], text, n_ctx=128, threads=1, prompts=prompts, n_predict=16)
check(r["prompts"] == 2 and 0 <= r["models"][0]["similarity"] <= 1, f"prompts: {r['prompts']}")
cli_kv = cli_json("eval", "--ref", gguf, "-m", gguf, "-f", text, "-c", "128", "-t", "1",
                  "--cache-type-k", "q8_0", "--cache-type-v", "q4_0", "--json")
r = edgelm.evaluate(gguf, gguf, text, n_ctx=128, threads=1, cache_type_k="q8_0", cache_type_v="q4_0")
check(r["cache_type_k"] == "q8_0" and r["cache_type_v"] == "q4_0" and
      r["models"][0]["kld_mean"] == cli_kv["models"][0]["kld_mean"] > 0,
      f"evaluate with a quantized KV cache: {r['models'][0]['kld_mean']}")
raises(edgelm.ArgumentError, "cache_type_k", edgelm.evaluate, gguf, gguf, text, cache_type_k="q5_0")

# a progress callback that raises, and Ctrl-C, stop a quantization: the exception raised, no
# file left (rtn, and gptq without resume: no checkpoint)


class Enough(Exception):
    pass


def stop_at(n, exc):
    def progress(done, total, name):
        if done == n:
            raise exc
    return progress


for method in ("rtn", "gptq"):
    out = f"{tmp}/stopped-{method}.gguf"
    raises_plain = None
    try:
        edgelm.quantize(f"{fixtures}/stories260K/hf-f32", out, type="q4_k_m", method=method,
                        calib=calib, calib_samples=8, seq_len=64, threads=1,
                        progress=stop_at(3, Enough("stop")))
    except Enough as e:
        raises_plain = e
    check(raises_plain is not None and not glob.glob(out + "*"),
          f"{method}: callback's exception {raises_plain!r}, files {glob.glob(out + '*')}")
out = f"{tmp}/interrupted.gguf"
try:
    edgelm.quantize(gguf, out, type="q8_0", threads=1,
                    progress=lambda done, total, name: done == 5 and os.kill(os.getpid(),
                                                                             signal.SIGINT))
    check(False, "SIGINT did not stop quantize")
except KeyboardInterrupt:
    check(not os.path.exists(out), "a file left after Ctrl-C")
check(signal.getsignal(signal.SIGINT) is signal.default_int_handler, "SIGINT handler restored")

# errors of quantize and evaluate: the library's message
raises(edgelm.FileError, "/nonexistent/calib.txt", edgelm.quantize, gguf, f"{tmp}/x.gguf",
       type="q4_0", method="gptq", calib="/nonexistent/calib.txt")
raises(edgelm.FileError, "/nonexistent/model.gguf", edgelm.quantize, "/nonexistent/model.gguf",
       f"{tmp}/x.gguf", type="q4_0")
raises(edgelm.ArgumentError, "unknown type 'q9_k'", edgelm.quantize, gguf, f"{tmp}/x.gguf",
       type="q9_k")
raises(edgelm.ArgumentError, "needs calibration", edgelm.quantize, gguf, f"{tmp}/x.gguf",
       type="q4_0", method="gptq")
raises(edgelm.FileError, f"{tmp}/no-such/x.gguf", edgelm.quantize, gguf, f"{tmp}/no-such/x.gguf",
       type="q4_0")
raises(edgelm.FileError, "/nonexistent/q.gguf", edgelm.evaluate, gguf, "/nonexistent/q.gguf", text)
raises(edgelm.ArgumentError, "need at least", edgelm.evaluate, gguf, py_q, calib, n_ctx=1 << 16)
raises(edgelm.ArgumentError, "too small", edgelm.evaluate, gguf, py_q, text, n_ctx=2)
check(not glob.glob(f"{tmp}/x.gguf*"), "a file left by a failed quantize")

# a size budget (a few short samples): the CLI's file byte for byte, its choices and costs
cli_b, py_b = f"{tmp}/cli-budget.gguf", f"{tmp}/py-budget.gguf"
budget_args = ["--target-bpw", "7", "--candidates", "q4_0,q5_0,q8_0", "--calib", calib,
               "--calib-samples", "4", "--seq-len", "32", "-t", "1"]
want = cli_json("quantize", "-m", gguf, "-o", cli_b, *budget_args, "--json")
got = edgelm.quantize(gguf, py_b, type="q8_0", target_bpw=7, candidates=["q4_0", "q5_0", "q8_0"],
                      calib=calib, calib_samples=4, seq_len=32, threads=1)
check(open(cli_b, "rb").read() == open(py_b, "rb").read(), "budget: not the CLI's file")
# (cJSON prints a double in 15 digits where that reads back within its epsilon)
check([(t["name"], t["type"], "predicted_cost" in t) for t in got["tensors"]] ==
      [(t["name"], t["type"], "predicted_cost" in t) for t in want["tensors"]] and
      all(abs(a.get("predicted_cost", 0) - b.get("predicted_cost", 0)) <=
          1e-12 * abs(b.get("predicted_cost", 0)) for a, b in zip(got["tensors"], want["tensors"]))
      and got["target_bpw"] == want["target_bpw"] == 7 and
      any("predicted_cost" in t for t in got["tensors"]), "budget: not the CLI's report")
raises(edgelm.ArgumentError, "give calib=FILE", edgelm.quantize, gguf, f"{tmp}/x.gguf",
       type="q8_0", target_size=300000)

# help(edgelm.quantize) reads like `edgelm quantize --help`: its lists are the CLI's
cli_help = subprocess.run([binary, "quantize", "--help"], capture_output=True, text=True).stdout
doc = inspect.getdoc(edgelm.quantize)
for line in (ln for ln in cli_help.splitlines() if ln.startswith(("types:", "recipes:"))):
    check(line in doc, f"quantize's docstring lacks the CLI's '{line}'")
for option in ("--calib", "--seq-len", "--imatrix", "--damp", "--act-order", "--pure",
               "--keep-sensitive", "--tensor-type", "--resume", "--target-size", "--target-bpw",
               "--candidates"):
    check(f"({option}" in doc or f"{option})" in doc or f"({option};" in doc,
          f"quantize's docstring lacks {option}")

# docstrings and type hints on every public name
for name in edgelm.__all__:
    obj = getattr(edgelm, name)
    check(name == "__version__" or inspect.getdoc(obj), f"edgelm.{name} has no docstring")
    members = [obj] if inspect.isfunction(obj) else [
        f for n, f in vars(obj).items() if inspect.isfunction(f) and not n.startswith("_")
    ] if inspect.isclass(obj) else []
    for f in members:
        sig = inspect.signature(f)
        check(inspect.getdoc(f) and all(p.annotation is not p.empty for p in sig.parameters.values()
                                        if p.name != "self") and
              sig.return_annotation is not sig.empty, f"{name}.{f.__name__}: docstring or hints")
shutil.rmtree(tmp)

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
