#!/usr/bin/env bash
# CLI test of `edgelm calib` and `edgelm quantize --method rtn|gptq|awq`: a calibration set mixed
# from two sources by weight (counts, truncation, same seed -> same file, --split, --template, bad
# input); quantize with each method (JSON report: bits/weight, file size, peak memory, per-tensor
# type, reason and output error before/after; progress with layer i/N and ETA on stderr), the
# default policy (q8_0 embedding/output, f16 fallback), --keep-sensitive, --tensor-type,
# determinism and the errors (no/missing/empty calibration). Usage: bash tests/cli_quant_methods.sh
# EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
f32=$fix/stories260K/stories260K-f32.gguf
text=$fix/stories260K/text
. "$(dirname "$0")/lib/cli.sh"

# ------------------------------------------------------------------------------- calib
calib() { "$bin" calib -m "$f32" --source "$text/calib.txt:3" --source "$text/calib.jsonl:1" \
                 -n 40 --seq-len 64 "$@"; }
calib -o "$tmp/c1.jsonl" --seed 7 --json >"$tmp/c1.json" 2>"$tmp/err" || fail "calib: $(cat "$tmp/err")"
python3 - "$tmp/c1.json" "$tmp/c1.jsonl" <<'PY' || fail "calib: summary or file not as expected"
import json, sys
s = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
assert s["count"] == 40 == len(lines), s
assert [x["count"] for x in s["sources"]] == [30, 10], s["sources"]
assert s["max_tokens"] <= 64 and s["min_tokens"] >= 16 and s["min_tokens"] <= s["mean_tokens"] <= s["max_tokens"], s
assert sum(l["n_tokens"] for l in lines) == s["total_tokens"], s
assert sum(l["source"].endswith("calib.jsonl") for l in lines) == 10
assert all(l["text"] and 16 <= l["n_tokens"] <= 64 for l in lines)
PY
calib -o "$tmp/c2.jsonl" --seed 7 >/dev/null 2>&1 && cmp -s "$tmp/c1.jsonl" "$tmp/c2.jsonl" ||
    fail "calib: same seed, different file"
calib -o "$tmp/c3.jsonl" --seed 8 >/dev/null 2>&1 && ! cmp -s "$tmp/c1.jsonl" "$tmp/c3.jsonl" ||
    fail "calib: another seed, same file"
printf 'Tom had a red ball.\nHe played all day.\n\nSue had a blue kite and she flew it high.\n' >"$tmp/p.txt"
"$bin" calib -m "$f32" -i "$tmp/p.txt" -o "$tmp/p.jsonl" --split paragraph --min-tokens 2 \
    >/dev/null 2>&1 && [ "$(wc -l <"$tmp/p.jsonl")" -eq 2 ] || fail "calib --split paragraph"
printf '{"q": "Who had a ball?", "a": "Tom"}\n' >"$tmp/qa.jsonl"
"$bin" calib -m "$f32" -i "$tmp/qa.jsonl" -o "$tmp/qa.out" --template 'Q: {q}\nA: {a}' \
    --min-tokens 2 >/dev/null 2>&1 &&
    python3 -c 'import json,sys; t=json.loads(open(sys.argv[1]).readline())["text"]; sys.exit(t != "Q: Who had a ball?\nA: Tom")' \
        "$tmp/qa.out" || fail "calib --template"
expect_error "calib missing source" "$tmp/none.txt" "$bin" calib -m "$f32" -i "$tmp/none.txt" -o "$tmp/x.jsonl"
expect_error "calib weight 0" "positive" "$bin" calib -m "$f32" --source "$text/calib.txt:0" -o "$tmp/x.jsonl"
expect_error "calib missing -o" "required" "$bin" calib -m "$f32" -i "$text/calib.txt"
expect_error "--keep-sensitive with --pure" "--keep-sensitive has no effect with --pure" \
    "$bin" quantize -m "$f32" --type q4_0 --pure --keep-sensitive f16 -o "$tmp/x.gguf"
expect_error "calib template field" "qa.jsonl:1" "$bin" calib -m "$f32" -i "$tmp/qa.jsonl" \
    -o "$tmp/x.jsonl" --template '{question}'
[ -e "$tmp/x.jsonl" ] && fail "a failed calib left its output"
"$bin" calib --help | grep -q "usage: edgelm calib" || fail "calib --help"

# ---------------------------------------------------------------------------- quantize
q4() { "$bin" quantize -m "$f32" --type q4_0 --calib "$tmp/c1.jsonl" -t 2 "$@"; }
for method in rtn gptq awq; do
    q4 --pure --method "$method" -o "$tmp/$method.gguf" --json >"$tmp/$method.json" 2>"$tmp/$method.err" ||
        { fail "quantize $method: $(cat "$tmp/$method.err")"; continue; }
    python3 - "$tmp/$method.json" "$tmp/$method.gguf" "$method" <<'PY' || fail "quantize $method --json"
import json, os, sys
d = json.load(open(sys.argv[1]))
method = sys.argv[3]
assert d["method"] == method and d["type"] == "q4_0" and d["pure"] is True, d
assert d["file_bytes"] == os.path.getsize(sys.argv[2]) and d["seconds"] > 0, d
# the process's peak resident set and the largest anonymous part of it seen (/proc/self/status)
assert 0 < d["peak_anon_mib"] <= d["peak_rss_mib"] < 1024, d
assert abs(d["bits_per_weight"] - 6.7) < 0.1, d["bits_per_weight"]  # q4_0 + f16 ffn_down
t = {x["name"]: x for x in d["tensors"]}
assert len(t) == 48 and t["blk.0.ffn_down.weight"]["type"] == "f16", t["blk.0.ffn_down.weight"]
assert t["blk.0.attn_norm.weight"]["type"] == "f32" and t["token_embd.weight"]["type"] == "q4_0"
measured = [x for x in t.values() if "out_err_after" in x]
if method == "rtn":
    assert not measured
else:
    assert len(measured) == 31, len(measured)  # 6 linears x 5 blocks + output
    # GPTQ lowers every layer's error on its calibration inputs; AWQ's scales serve a whole group
    # (q/k/v, gate/up), so one member may lose a little while the group gains
    better = [x["out_err_after"] < x["out_err_before"] for x in measured]
    assert all(better) if method == "gptq" else sum(better) >= 28, measured
    assert sum(x["out_err_after"] for x in measured) < sum(x["out_err_before"] for x in measured)
PY
    if [ "$method" != rtn ]; then
        grep -q "blk.4" "$tmp/$method.err" && grep -q "ETA" "$tmp/$method.err" &&
            grep -q "^\[7/7\]" "$tmp/$method.err" || fail "$method: no per-layer progress: $(cat "$tmp/$method.err")"
    fi
done
q4 --method gptq --calib "$tmp/c1.jsonl" -o "$tmp/again.gguf" >/dev/null 2>&1 &&
    q4 --method gptq --pure --calib "$tmp/c1.jsonl" -o "$tmp/again.gguf" >/dev/null 2>&1 &&
    cmp -s "$tmp/gptq.gguf" "$tmp/again.gguf" || fail "gptq: same inputs, different file"
# the default policy, --keep-sensitive and --tensor-type
q4 --method awq -o "$tmp/mixed.gguf" --tensor-type 'blk.*.attn_v=q8_0' --json >"$tmp/mixed.json" 2>/dev/null &&
    q4 --method rtn -o "$tmp/f16.gguf" --keep-sensitive f16 --json >"$tmp/f16.json" 2>/dev/null &&
    python3 - "$tmp/mixed.json" "$tmp/f16.json" <<'PY' || fail "policy: types or reasons not as expected"
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tensors"]}
assert t["token_embd.weight"]["type"] == "q8_0" and "sensitive" in t["token_embd.weight"]["reason"]
assert t["output.weight"]["type"] == "q8_0" and "out_err_after" in t["output.weight"]
assert t["blk.2.attn_v.weight"]["type"] == "q8_0" and "override" in t["blk.2.attn_v.weight"]["reason"]
assert t["blk.2.attn_q.weight"]["type"] == "q4_0"
assert t["blk.3.ffn_down.weight"]["type"] == "f16" and "172" in t["blk.3.ffn_down.weight"]["reason"]
assert t["output_norm.weight"]["type"] == "f32"
f = {x["name"]: x for x in json.load(open(sys.argv[2]))["tensors"]}
assert f["token_embd.weight"]["type"] == "f16" and f["blk.0.attn_k.weight"]["type"] == "q4_0"
PY
"$bin" inspect "$tmp/mixed.gguf" | grep -q "token_embd.weight  *\[512, 64\]  *q8_0" || fail "inspect of the mixed file"
: >"$tmp/empty.txt"
expect_error "gptq without --calib" "--calib" "$bin" quantize -m "$f32" -o "$tmp/y.gguf" --type q4_0 --method gptq
# a FIFO as calibration file: refused at once (opening it for reading would wait for a writer)
mkfifo "$tmp/fifo.txt"
expect_error "gptq --calib FIFO" "fifo.txt: not a regular file" timeout 20 "$bin" quantize -m "$f32" \
    -o "$tmp/y.gguf" --type q4_0 --method gptq --calib "$tmp/fifo.txt"
expect_error "missing --calib file" "$tmp/nofile.txt" "$bin" quantize -m "$f32" -o "$tmp/y.gguf" \
    --type q4_0 --method awq --calib "$tmp/nofile.txt"
expect_error "empty --calib file" "no calibration samples" "$bin" quantize -m "$f32" -o "$tmp/y.gguf" \
    --type q4_0 --method gptq --calib "$tmp/empty.txt"
expect_error "unknown method" "unknown --method 'spqr'" "$bin" quantize -m "$f32" -o "$tmp/y.gguf" \
    --type q4_0 --method spqr
expect_error "bad --tensor-type" "expected PATTERN=TYPE" "$bin" quantize -m "$f32" -o "$tmp/y.gguf" \
    --type q4_0 --tensor-type q8_0
[ -e "$tmp/y.gguf" ] && fail "a failed quantize left its output"
"$bin" quantize --help | grep -q -- "--method" || fail "quantize --help"

[ "$failed" -eq 0 ] && echo "cli_quant_methods: all passed"
exit $((failed > 0))
