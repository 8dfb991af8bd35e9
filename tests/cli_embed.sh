#!/usr/bin/env bash
# `edgelm embed` and `edgelm serve`'s POST /v1/embeddings, on stories260K (a file that says no
# pooling: mean) and on synth's tiny embedding models:
#  - embed --json: one unit vector of dim floats, n_tokens and tokens as `tokenize` gives them,
#    pooling "mean"; the plain output is the same vector on one line; -f FILE as -p; --pooling
#    cls / last give other vectors; --no-normalize the same direction at another length;
#  - synth --pooling writes pooling_type (inspect and embed say it); the tiny gemma-embedding
#    (bidirectional, Dense layers) gives the same vector from its GGUF, its --hf copy and, near,
#    from a Q8_0 quantization of it; a text may not pass the context (-c); an HF tokenizer.json
#    whose TemplateProcessing appends a special token appends it (the EOS last-token pooling
#    reads, as Qwen3-Embedding's), one without adds none;
#  - errors in one line: no model, no text or two, a bad --pooling;
#  - the server: /v1/embeddings gives `edgelm embed`'s vectors (floats, and base64 of
#    little-endian float32), an array of texts in order, token ids, "dimensions" (the first N
#    floats at unit length), usage; 400 naming the field for each bad body; completions still
#    answered afterwards.
# usage: cli_embed.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"

text="Once upon a time, Lily saw a big dog."
# vec_of JSON_FILE: the embedding of an `embed --json` output, as a Python list literal
check_py() { python3 -c "$1" "${@:2}"; }

# --- embed on stories260K
"$bin" embed -m "$model" -p "$text" --json -t 2 >"$tmp/e.json" 2>"$tmp/err" && ok || fail "embed --json: $(cat "$tmp/err")"
grep -q '^load .* tokens, mean pooling, 64 floats, unit length' "$tmp/err" && ok || fail "stats line: $(cat "$tmp/err")"
ids=$("$bin" tokenize -m "$model" -p "$text" --ids)
"$bin" embed -m "$model" -p "$text" -t 2 >"$tmp/plain" 2>/dev/null && ok || fail "embed plain"
printf '%s' "$text" >"$tmp/text.txt"
"$bin" embed -m "$model" -f "$tmp/text.txt" -t 1 --json >"$tmp/f.json" 2>/dev/null || fail "embed -f"
for p in cls last; do
    "$bin" embed -m "$model" -p "$text" --pooling $p --json >"$tmp/$p.json" 2>/dev/null || fail "--pooling $p"
done
"$bin" embed -m "$model" -p "$text" --no-normalize --json >"$tmp/raw.json" 2>/dev/null || fail "--no-normalize"
check_py '
import json, math, sys
load = lambda p: json.load(open(sys.argv[1] + "/" + p))
j, ids = load("e.json"), json.loads(sys.argv[2])
v = j["embedding"]
assert len(v) == 64 and abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-6, len(v)
assert j["n_tokens"] == len(ids) and j["tokens"] == ids and j["pooling"] == "mean", (j["tokens"], ids)
plain = [float(x) for x in open(sys.argv[1] + "/plain").read().split()]
assert plain == v and load("f.json")["embedding"] == v, "plain or -f differ"
c, l, r = load("cls.json"), load("last.json"), load("raw.json")
assert c["pooling"] == "cls" and l["pooling"] == "last" and not r["normalized"]
cos = lambda a, b: sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
assert cos(v, c["embedding"]) < 0.99 and cos(v, l["embedding"]) < 0.99, "cls or last as mean"
n = math.sqrt(sum(x * x for x in r["embedding"]))
assert abs(n - 1) > 1e-3 and all(abs(x / n - y) < 1e-6 for x, y in zip(r["embedding"], v)), "raw"
' "$tmp" "$ids" && ok || fail "embed --json, plain, -f, --pooling or --no-normalize: $(head -c 300 "$tmp/e.json")"

expect_error "no model" "-m MODEL is required" "$bin" embed -p hi
expect_error "no text" "either -p TEXT or -f FILE" "$bin" embed -m "$model"
expect_error "both texts" "either -p TEXT or -f FILE" "$bin" embed -m "$model" -p a -f "$tmp/text.txt"
expect_error "bad pooling" "--pooling: 'rank' is not mean, cls or last" "$bin" embed -m "$model" -p a --pooling rank
expect_error "over -c" "over the 4 the context takes" "$bin" embed -m "$model" -p "$text" -c 4

# --- the tiny embedding models: pooling_type written, GGUF = HF, Q8_0 near
st=$fx/stories260K/stories260K-f32.gguf
"$bin" synth --arch llama --tiny --pooling cls --vocab "$st" -o "$tmp/cls.gguf" >/dev/null 2>&1 || fail "synth --pooling cls"
"$bin" inspect "$tmp/cls.gguf" | grep -q 'embedding: pooling cls, causal attention' && ok || fail "inspect: pooling cls"
"$bin" embed -m "$tmp/cls.gguf" -p "$text" --json 2>/dev/null | grep -q '"pooling":	"cls"' && ok || fail "embed: the file's cls"
expect_error "synth bad pooling" "--pooling: 'max' is not mean, cls or last" "$bin" synth --arch llama --tiny --pooling max -o "$tmp/x.gguf"
ge=$tmp/ge.gguf
"$bin" synth --arch gemma-embedding --tiny --vocab "$st" -o "$ge" --hf "$tmp/ge-hf" -s 5 >/dev/null 2>"$tmp/err" ||
    fail "synth gemma-embedding: $(cat "$tmp/err")"
"$bin" inspect "$ge" | grep -q 'embedding: pooling mean, bidirectional attention, dense projection 128' && ok ||
    fail "inspect gemma-embedding: $("$bin" inspect "$ge" | sed -n 7,9p)"
"$bin" quantize -m "$ge" -o "$tmp/ge-q8.gguf" --type q8_0 >/dev/null 2>&1 || fail "quantize gemma-embedding"
for m in "$ge" "$tmp/ge-hf" "$tmp/ge-q8.gguf"; do
    "$bin" embed -m "$m" -p "$text" --json -t 2 >"$tmp/$(basename "$m").json" 2>"$tmp/err" || fail "embed $m: $(cat "$tmp/err")"
done
check_py '
import json, math, sys
g, h, q = (json.load(open(p))["embedding"] for p in sys.argv[1:4])
cos = lambda a, b: sum(x * y for x, y in zip(a, b))
assert len(g) == 64 and cos(g, h) > 0.999999 and 0.99 < cos(g, q) < 0.999999, (cos(g, h), cos(g, q))
' "$tmp/ge.gguf.json" "$tmp/ge-hf.json" "$tmp/ge-q8.gguf.json" && ok || fail "gemma-embedding: GGUF, HF and Q8_0 vectors"

# an HF tokenizer whose post-processor appends the EOS (Qwen3-Embedding's TemplateProcessing):
# last-token pooling reads it; without that template, and without add_eos_token, none is added
"$bin" synth --arch llama --tiny --pooling last --vocab "$st" -o "$tmp/last.gguf" --hf "$tmp/last-hf" \
    >/dev/null 2>&1 || fail "synth --pooling last --hf"
cp -r "$tmp/last-hf" "$tmp/plain-hf"
check_py '
import json, sys
for d, template in ((sys.argv[1], True), (sys.argv[2], False)):
    c = json.load(open(d + "/tokenizer_config.json")); c.pop("add_eos_token", None)
    json.dump(c, open(d + "/tokenizer_config.json", "w"))
    t = json.load(open(d + "/tokenizer.json"))
    single = [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]
    if template:
        single.append({"SpecialToken": {"id": "</s>", "type_id": 0}})
    t["post_processor"] = {"type": "Sequence", "processors": [{"type": "TemplateProcessing", "single": single}]}
    json.dump(t, open(d + "/tokenizer.json", "w"))
' "$tmp/last-hf" "$tmp/plain-hf" || fail "editing the HF tokenizers"
"$bin" embed -m "$tmp/last-hf" -p "$text" --json 2>/dev/null | tr -d ' \n\t' | grep -q '"pooling":"last".*"tokens":\[1,[0-9,]*,2\]' &&
    ok || fail "the template's EOS: $("$bin" embed -m "$tmp/last-hf" -p "$text" --json 2>&1 | tail -c 200)"
"$bin" embed -m "$tmp/plain-hf" -p "$text" --json 2>/dev/null | tr -d ' \n\t' >"$tmp/plain.json"
grep -q '"tokens":\[1,' "$tmp/plain.json" && ! grep -q ',2\]' "$tmp/plain.json" && ok || fail "no template, no EOS: $("$bin" embed -m "$tmp/plain-hf" -p "$text" --json 2>&1 | tail -c 200)"

# --- the server: edgelm embed's vectors
command -v curl >/dev/null || { echo "cli_embed: curl missing, server checks not run" >&2; echo "$passed passed, $failed failed"; exit $((failed > 0)); }
start_server -m "$model" -t 1 --parallel 2 -c 64
other="The dog ran."
"$bin" embed -m "$model" -p "$other" --json >"$tmp/o.json" 2>/dev/null
body=$(check_py 'import json,sys; print(json.dumps({"model": "x", "input": sys.argv[1]}))' "$text")
[ "$(status_of POST /v1/embeddings "$body")" = 200 ] && ok || fail "embeddings: $(cat "$tmp/body")"
mv "$tmp/body" "$tmp/r1.json"
body=$(check_py 'import json,sys; print(json.dumps({"input": sys.argv[1:], "encoding_format": "base64"}))' "$text" "$other")
[ "$(status_of POST /v1/embeddings "$body")" = 200 ] && ok || fail "base64: $(cat "$tmp/body")"
mv "$tmp/body" "$tmp/r2.json"
[ "$(status_of POST /v1/embeddings "{\"input\": [$ids, [1, 403]], \"dimensions\": 16}")" = 200 ] && ok || fail "ids: $(cat "$tmp/body")"
mv "$tmp/body" "$tmp/r3.json"
check_py '
import base64, json, math, struct, sys
load = lambda p: json.load(open(sys.argv[1] + "/" + p))
e, o, ids = load("e.json"), load("o.json"), json.loads(sys.argv[2])
# one text: edgelm embed'"'"'s vector, usage
r = load("r1.json")
assert list(r) == ["object", "data", "model", "usage"] and r["object"] == "list", list(r)
d = r["data"]
assert len(d) == 1 and d[0]["object"] == "embedding" and d[0]["index"] == 0
assert d[0]["embedding"] == e["embedding"], "server and edgelm embed differ"
assert r["usage"] == {"prompt_tokens": e["n_tokens"], "total_tokens": e["n_tokens"]}, r["usage"]
# base64 of two texts, in order
r = load("r2.json")
raw = [base64.b64decode(d["embedding"]) for d in r["data"]]
got = [struct.unpack("<%df" % (len(b) // 4), b) for b in raw]
assert [d["index"] for d in r["data"]] == [0, 1] and len(got[1]) == 64, "base64 order"
assert all(abs(a - b) < 1e-8 for g, w in zip(got, (e["embedding"], o["embedding"])) for a, b in zip(g, w)), "base64"
# token ids, dimensions 16: the first 16 floats at unit length
r = load("r3.json")
v, n = r["data"][0]["embedding"], math.sqrt(sum(x * x for x in e["embedding"][:16]))
assert len(v) == 16 and all(abs(a - b / n) < 1e-6 for a, b in zip(v, e["embedding"][:16])), v
assert r["usage"]["prompt_tokens"] == len(ids) + 2, r["usage"]
' "$tmp" "$ids" && ok || fail "embeddings responses: $(head -c 300 "$tmp/r1.json")"
expect_status "no input" 400 '"message":"input: required"' POST /v1/embeddings '{"model": "m"}'
expect_status "empty input" 400 'input: an empty array' POST /v1/embeddings '{"input": []}'
expect_status "number input" 400 'input: expected a string, an array of strings' POST /v1/embeddings '{"input": 3}'
expect_status "mixed input" 400 'input\[1\]: expected a string, as input\[0\] is' POST /v1/embeddings '{"input": ["a", 3]}'
expect_status "bad id" 400 'input\[1\]: 512 is not in the vocabulary' POST /v1/embeddings '{"input": [1, 512]}'
expect_status "no ids" 400 'input\[0\]: no tokens' POST /v1/embeddings '{"input": [[]]}'
expect_status "too long" 400 'input: 70 tokens, over the 64 an input may have' POST /v1/embeddings \
    "{\"input\": [$(seq -s, 1 70)]}"
expect_status "format" 400 'encoding_format: expected' POST /v1/embeddings '{"input": "a", "encoding_format": "int8"}'
expect_status "dimensions" 400 'dimensions: 65 out of range 1..64' POST /v1/embeddings '{"input": "a", "dimensions": 65}'
expect_status "model" 400 'model: expected a string' POST /v1/embeddings '{"input": "a", "model": 1}'
expect_status "not JSON" 400 'request body: invalid JSON' POST /v1/embeddings '{"input": '
expect_status "NUL escape" 400 'request body: a string holds' POST /v1/embeddings '{"input": "a\u0000b"}'
expect_status "GET" 405 'use POST' GET /v1/embeddings
expect_status "completion after" 200 '"text_completion"' POST /v1/completions '{"prompt": "Once", "max_tokens": 4}'
stop_server TERM
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
