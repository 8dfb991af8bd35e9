#!/usr/bin/env bash
# CLI checks of `edgelm eval` on a prefix of valid.txt (-c 128, to stay fast under the sanitizer):
# the baseline against itself, two llama.cpp quantizations with --json validated against
# docs/eval.schema.json, the SVG parsed as XML with one point per file, the Markdown report,
# --save-ref / --ref-logits giving the live figures, rejected reference files and bad arguments
# ending in one error line with exit status 1.
# usage: cli_eval.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
st=$fx/stories260K
f32=$st/stories260K-f32.gguf
q8=$st/reference-quants/llamacpp-q8_0-pure.gguf
q4=$st/reference-quants/llamacpp-q4_0-pure.gguf
schema=$(dirname "$0")/../docs/eval.schema.json
. "$(dirname "$0")/lib/cli.sh"

head -c 5000 "$st/text/valid.txt" > "$tmp/text.txt"
tail -c 5000 "$st/text/valid.txt" > "$tmp/other.txt"
head -n 3 "$st/text/prompts.txt" > "$tmp/prompts.txt"
common=(-f "$tmp/text.txt" -c 128 -t 2)

# the baseline against itself: KLD exactly 0, top-1 100%, similarity 100%
"$bin" eval -m "$f32" --ref "$f32" "${common[@]}" --prompts "$tmp/prompts.txt" -n 16 --json 2>/dev/null > "$tmp/self.json" &&
python3 - "$tmp/self.json" <<'EOF' && ok || fail "baseline against itself"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["models"][0]
assert m["kld_mean"] == 0 and m["kld_max"] == 0 and m["rms_dp_pct"] == 0, m
assert m["top1_pct"] == 100 and m["top5_overlap_pct"] == 100, m
assert m["similarity"] == 1 and m["exact_match_rate"] == 1, m
assert m["ppl"] == m["ref_ppl"] == d["baseline"]["ppl"] and m["ppl_change_pct"] == 0, m
assert m["verdicts"] == {"ppl": "excellent", "similarity": "acceptable"}, m["verdicts"]
assert d["prompts"] == 3 and d["n_predict"] == 16 and d["n_ctx"] == 128, d
EOF

# the baseline against itself with a quantized KV cache (the baseline's stays f32): what the
# cache costs, more for q4_0 than for q8_0; the perplexity command takes the same options
for t in q8_0 q4_0; do
    "$bin" eval -m "$f32" --ref "$f32" "${common[@]}" --cache-type-k $t --cache-type-v $t --json \
        2>/dev/null > "$tmp/kv-$t.json" || fail "eval --cache-type-k $t"
done
"$bin" perplexity -m "$f32" "${common[@]}" --cache-type-k q4_0 --cache-type-v q4_0 --json 2>/dev/null \
    > "$tmp/ppl-q4.json" || fail "perplexity --cache-type-k q4_0"
python3 - "$tmp/self.json" "$tmp/kv-q8_0.json" "$tmp/kv-q4_0.json" "$tmp/ppl-q4.json" <<'EOF' && ok || fail "KV cache types in eval"
import json, sys
base, q8, q4, ppl4 = (json.load(open(p)) for p in sys.argv[1:])
assert base["cache_type_k"] == base["cache_type_v"] == "f32", base
assert q8["cache_type_k"] == q8["cache_type_v"] == "q8_0" and q4["cache_type_v"] == "q4_0"
m8, m4 = q8["models"][0], q4["models"][0]
assert q8["baseline"]["ppl"] == q4["baseline"]["ppl"] == base["baseline"]["ppl"], "baseline moved"
assert 0 < m8["kld_mean"] < m4["kld_mean"], (m8["kld_mean"], m4["kld_mean"])
assert m8["top1_pct"] > 90 and abs(m8["ppl_change_pct"]) < 2, m8
assert ppl4["ppl"] == m4["ppl"], (ppl4["ppl"], m4["ppl"])
EOF
"$bin" eval -m "$f32" --ref "$f32" "${common[@]}" --cache-type-k q4_0 2>/dev/null | head -1 |
    grep -q "the models' KV cache q4_0/f32 (the baseline's f32)" && ok || fail "KV cache in the table's heading"
expect_error "bad cache type" "--cache-type-v: invalid value 'q5_0'" "$bin" eval -m "$f32" --ref "$f32" "${common[@]}" --cache-type-v q5_0

# two quantized files: JSON against the schema, SVG, Markdown, progress on stderr only
"$bin" eval -m "$q8" -m "$q4" --ref "$f32" "${common[@]}" --prompts "$tmp/prompts.txt" -n 16 --json \
  --plot "$tmp/plot.svg" --markdown "$tmp/report.md" 2>"$tmp/progress.txt" > "$tmp/two.json"
[ $? -eq 0 ] && ok || fail "eval of two files failed: $(tail -1 "$tmp/progress.txt")"
grep -q "chunk .*/.*running PPL" "$tmp/progress.txt" && ok || fail "no progress on stderr"
python3 - "$schema" "$tmp/two.json" <<'EOF' && ok || fail "--json does not validate against docs/eval.schema.json"
import copy, json, sys
schema, doc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))

def check(inst, sch, path="$"):
    """The subset of JSON Schema draft 7 the schema uses; raises on the first violation."""
    if "$ref" in sch:
        node = schema
        for part in sch["$ref"].lstrip("#/").split("/"):
            node = node[part]
        return check(inst, node, path)
    types = sch.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        is_num = isinstance(inst, (int, float)) and not isinstance(inst, bool)
        ok = any({"object": isinstance(inst, dict), "array": isinstance(inst, list),
                  "string": isinstance(inst, str), "null": inst is None,
                  "number": is_num, "integer": is_num and float(inst).is_integer(),
                  "boolean": isinstance(inst, bool)}[t] for t in types)
        assert ok, f"{path}: {inst!r} is not {types}"
    if "enum" in sch:
        assert inst in sch["enum"], f"{path}: {inst!r} not in {sch['enum']}"
    if isinstance(inst, (int, float)) and not isinstance(inst, bool):
        assert inst >= sch.get("minimum", inst), f"{path}: {inst} < minimum"
        assert inst <= sch.get("maximum", inst), f"{path}: {inst} > maximum"
    if isinstance(inst, dict):
        for k in sch.get("required", []):
            assert k in inst, f"{path}: missing {k}"
        props = sch.get("properties", {})
        if sch.get("additionalProperties") is False:
            extra = set(inst) - set(props)
            assert not extra, f"{path}: unexpected {sorted(extra)}"
        for k, v in inst.items():
            if k in props:
                check(v, props[k], f"{path}.{k}")
    if isinstance(inst, list) and "items" in sch:
        for i, v in enumerate(inst):
            check(v, sch["items"], f"{path}[{i}]")

def valid(inst):
    try:
        check(inst, schema)
    except AssertionError:
        return False
    try:
        import jsonschema
    except ImportError:
        return True
    try:
        jsonschema.validate(inst, schema)
    except jsonschema.ValidationError:
        return False
    return True

assert valid(doc), check(doc, schema)
# the validation can fail: a missing key, a wrong type, an unknown verdict
for mutate in (lambda d: d["models"][0].pop("kld_mean"),
               lambda d: d["models"][1].__setitem__("top1_pct", "81"),
               lambda d: d["models"][0]["verdicts"].__setitem__("ppl", "fine"),
               lambda d: d.pop("baseline")):
    bad = copy.deepcopy(doc)
    mutate(bad)
    assert not valid(bad), "a broken report validated"
q8, q4 = doc["models"]
assert q8["name"] == "llamacpp-q8_0-pure.gguf" and q4["name"] == "llamacpp-q4_0-pure.gguf"
assert 0 < q8["kld_mean"] < q4["kld_mean"] and q8["top1_pct"] > q4["top1_pct"] > 60
assert q4["verdicts"]["ppl"] == "flagged" and q8["verdicts"]["ppl"] == "excellent", (q4["verdicts"], q8["verdicts"])
assert q4["size_mib"] < q8["size_mib"] < doc["baseline"]["size_mib"]
EOF
python3 - "$tmp/plot.svg" <<'EOF' && ok || fail "SVG is not well-formed XML with one point per file"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
points = [c for c in root.iter(ns + "circle") if "point" in c.get("class", "").split()]
assert len(points) == 3, len(points)
assert sum("baseline" in c.get("class").split() for c in points) == 1
labels = [t.text for t in root.iter(ns + "text") if t.get("class") == "label"]
for name in ("stories260K-f32.gguf (baseline)", "llamacpp-q8_0-pure.gguf", "llamacpp-q4_0-pure.gguf"):
    assert name in labels, (name, labels)
for c in points:
    x, y = float(c.get("cx")), float(c.get("cy"))
    assert 0 <= x <= float(root.get("width")) and 0 <= y <= float(root.get("height")), (x, y)
assert not any(e.tag.endswith(("script", "image", "use")) for e in root.iter()), "not self-contained"
EOF
grep -q '^| metric | stories260K-f32.gguf (baseline) | llamacpp-q8_0-pure.gguf | change | llamacpp-q4_0-pure.gguf | change |$' "$tmp/report.md" &&
  grep -q '^| PPL verdict (< 5%) |  | excellent |  | flagged |  |$' "$tmp/report.md" && ok || fail "markdown report: $(head -5 "$tmp/report.md")"

# the terminal table, and the perplexity plot
out=$("$bin" eval -m "$q4" --ref "$f32" "${common[@]}" --plot "$tmp/ppl.svg" --plot-y ppl 2>/dev/null)
echo "$out" | grep -Eq '^perplexity +\| +[0-9.]+ ± [0-9.]+ \| +[0-9.]+ ± [0-9.]+ \| +\+[0-9.]+%$' && ok || fail "table: $out"
echo "$out" | grep -q "llamacpp-q4_0-pure.gguf: PPL +.*% -> flagged" && ok || fail "verdict line: $out"
grep -q "<text[^>]*>perplexity</text>" "$tmp/ppl.svg" && ok || fail "--plot-y ppl axis"

# --save-ref, then --ref-logits without the baseline: the same figures as the live run
"$bin" eval -m "$q4" --ref "$f32" "${common[@]}" --save-ref "$tmp/ref.elmref" --json 2>/dev/null > "$tmp/live.json" &&
"$bin" eval -m "$q4" --ref-logits "$tmp/ref.elmref" "${common[@]}" --json 2>/dev/null > "$tmp/cached.json" &&
python3 - "$tmp/live.json" "$tmp/cached.json" <<'EOF' && ok || fail "cached reference differs from the live one"
import json, sys
live, cached = (json.load(open(p)) for p in sys.argv[1:])
for k in ("ppl", "ref_ppl", "kld_mean", "kld_median", "kld_p99", "kld_max", "top1_pct", "top5_overlap_pct", "rms_dp_pct"):
    assert live["models"][0][k] == cached["models"][0][k], k
assert cached["baseline"]["name"] == "stories260K-f32.gguf" and cached["baseline"]["size_mib"] == live["baseline"]["size_mib"]
EOF
"$bin" eval --ref "$f32" "${common[@]}" --save-ref "$tmp/only.elmref" >/dev/null 2>&1 && cmp -s "$tmp/only.elmref" "$tmp/ref.elmref" \
  && ok || fail "--save-ref without -m"

# a broken -m file is reported before the baseline runs (nothing saved by --save-ref)
head -c 1000 "$q4" > "$tmp/cut.gguf"
expect_error "broken -m before the baseline" "cut.gguf:" "$bin" eval --ref "$f32" -m "$tmp/cut.gguf" \
    "${common[@]}" --save-ref "$tmp/early.elmref"
[ ! -e "$tmp/early.elmref" ] && ok || fail "the baseline ran before a broken -m file was reported"

# a model whose vocabulary is not the baseline's (one piece changed, same size) is named before the
# baseline runs; so is a --plot/--markdown folder that does not exist
python3 - "$f32" "$tmp/vocab.gguf" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
i = b.index(b"time")
b[i + 2:i + 3] = b"M"
open(sys.argv[2], "wb").write(b)
EOF
expect_error "other vocabulary" "vocab.gguf: vocabulary (512 tokens) differs from the reference .*stories260K-f32.gguf's" \
    "$bin" eval --ref "$f32" -m "$tmp/vocab.gguf" "${common[@]}" --save-ref "$tmp/early.elmref"
[ ! -e "$tmp/early.elmref" ] && ok || fail "the baseline ran before a foreign vocabulary was reported"
for opt in --plot --markdown; do
    expect_error "$opt into a missing folder" "$tmp/no-such/out: folder '$tmp/no-such' does not exist" \
        "$bin" eval --ref "$f32" -m "$q4" "${common[@]}" --save-ref "$tmp/early.elmref" $opt "$tmp/no-such/out"
    [ ! -e "$tmp/early.elmref" ] && ok || fail "the baseline ran before $opt's missing folder was reported"
done

# rejected reference files
head -c 100000 "$tmp/ref.elmref" > "$tmp/cut.elmref"
expect_error "truncated cache" "cut.elmref: truncated reference file" "$bin" eval -m "$q4" --ref-logits "$tmp/cut.elmref" "${common[@]}"
expect_error "cache for another n_ctx" "made with -c 128, this run uses -c 64" \
  "$bin" eval -m "$q4" --ref-logits "$tmp/ref.elmref" -f "$tmp/text.txt" -c 64 -t 2
expect_error "cache for other tokens" "ref.elmref: reference was made from other tokens" \
  "$bin" eval -m "$q4" --ref-logits "$tmp/ref.elmref" -f "$tmp/other.txt" -c 128 -t 2
expect_error "cache of another baseline" "ref.elmref: reference was made from other tokens" \
  "$bin" eval -m "$q4" --ref "$f32" --ref-logits "$tmp/ref.elmref" -f "$tmp/other.txt" -c 128 -t 2
printf 'not a reference' > "$tmp/junk.elmref"
expect_error "not a cache" "junk.elmref: truncated reference file" "$bin" eval -m "$q4" --ref-logits "$tmp/junk.elmref" "${common[@]}"

# arguments
"$bin" eval --help | grep -q -- "--ref-logits" && ok || fail "eval --help"
expect_error "no text" "-f TEXT is required" "$bin" eval -m "$q4" --ref "$f32"
expect_error "no baseline" "--ref BASELINE or --ref-logits FILE is required" "$bin" eval -m "$q4" -f "$tmp/text.txt"
expect_error "no model" "-m QUANT is required" "$bin" eval --ref "$f32" -f "$tmp/text.txt"
expect_error "bad plot axis" "--plot-y: invalid value 'size'" "$bin" eval -m "$q4" --ref "$f32" -f "$tmp/text.txt" --plot-y size
expect_error "prompts without baseline" "--prompts needs the baseline model" \
  "$bin" eval -m "$q4" --ref-logits "$tmp/ref.elmref" -f "$tmp/text.txt" --prompts "$tmp/prompts.txt"
expect_error "save and load" "exclude each other" \
  "$bin" eval -m "$q4" --ref "$f32" --ref-logits "$tmp/ref.elmref" --save-ref "$tmp/x" -f "$tmp/text.txt"
expect_error "missing model" "no-such.gguf" "$bin" eval -m "$tmp/no-such.gguf" --ref "$f32" "${common[@]}"
expect_error "short text" "prompts.txt: text has .* tokens; need at least 512" "$bin" eval -m "$q4" --ref "$f32" -f "$tmp/prompts.txt" -c 256
printf '\n\n' > "$tmp/empty.txt"
expect_error "empty prompts" "empty.txt: no prompts" "$bin" eval -m "$q4" --ref "$f32" "${common[@]}" --prompts "$tmp/empty.txt"
expect_error "unknown option" "unknown option '--bogus'" "$bin" eval --bogus
[ ! -e "$tmp/x" ] && ok || fail "output written after an argument error"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
