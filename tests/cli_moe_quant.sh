#!/usr/bin/env bash
# GPTQ and AWQ per expert (src/quant/layerwise_moe.c) on qwen3moe's synth --tiny model at width
# 256 (tests/lib/hybrid.sh; 8 experts, 2 per token, expert width 128), calibrated on
# stories260K's calib.txt:
# - with enough tokens for every expert: no expert falls back; the expert stacks' output error
#   on their calibration inputs is lower than round-to-nearest's (GPTQ every stack, AWQ in sum),
#   and GPTQ's file is closer to the F32 model than RTN's at the same type (mean KLD by `eval`;
#   not in a sanitizer build, where it would double the test's minutes);
# - with a calibration of a few tokens every expert falls back to the importance-weighted rule,
#   and the --json report and the text report name each with the tokens it saw: per stack they
#   add up to 2 (experts per token) times the calibration's tokens.
# Usage: bash tests/cli_moe_quant.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/hybrid.sh"
hybrid_tiny "$bin" "$fix" qwen3moe "$tmp/m.gguf" >/dev/null 2>"$tmp/err" || fail "synth: $(cat "$tmp/err")"
"$bin" calib -m "$tmp/m.gguf" --source "$fix/stories260K/text/calib.txt:1" -n 64 --seq-len 128 \
    --seed 1 -o "$tmp/calib.jsonl" >/dev/null 2>"$tmp/err" || fail "calib: $(cat "$tmp/err")"
"$bin" calib -m "$tmp/m.gguf" --source "$fix/stories260K/text/calib.txt:1" -n 4 --seq-len 24 \
    --min-tokens 8 --seed 1 -o "$tmp/few.jsonl" >/dev/null 2>"$tmp/err" || fail "calib: $(cat "$tmp/err")"

for method in rtn gptq awq; do
    "$bin" quantize -m "$tmp/m.gguf" -o "$tmp/$method.gguf" --type q4_k --pure --method "$method" \
        --calib "$tmp/calib.jsonl" -t 2 --json >"$tmp/$method.json" 2>"$tmp/err" ||
        fail "quantize $method: $(tail -1 "$tmp/err")"
done
for method in gptq awq; do
    python3 - "$tmp/$method.json" "$method" <<'PY' || fail "$method: expert errors not below RTN's"
import json, sys
d, method = json.load(open(sys.argv[1])), sys.argv[2]
assert d["expert_fallback"] == [], d["expert_fallback"]
st = [t for t in d["tensors"] if "_exps" in t["name"]]
assert len(st) == 6 and all("out_err_after" in t for t in st), st
for t in st:
    print(f"  {method} {t['name']}: output error {t['out_err_before']:.3g} (RTN) -> "
          f"{t['out_err_after']:.3g}", file=sys.stderr)
if method == "gptq":
    assert all(t["out_err_after"] < t["out_err_before"] for t in st)
assert sum(t["out_err_after"] for t in st) < sum(t["out_err_before"] for t in st)
PY
done
# the KLD comparison is numerics, not memory: a sanitizer build runs the quantizations above only
if $sanitized; then
    echo "cli_moe_quant: the KLD comparison not run in a sanitizer build"
else
    "$bin" eval --ref "$tmp/m.gguf" -m "$tmp/rtn.gguf" -m "$tmp/gptq.gguf" \
        -f "$fix/stories260K/text/valid.txt" -c 128 -t 2 --json >"$tmp/eval.json" 2>"$tmp/err" ||
        fail "eval: $(tail -1 "$tmp/err")"
    python3 - "$tmp/eval.json" <<'PY' || fail "GPTQ's KLD not below RTN's"
import json, sys
rtn, gptq = (m["kld_mean"] for m in json.load(open(sys.argv[1]))["models"])
print(f"  mean KLD to F32: rtn {rtn:.4f}, gptq {gptq:.4f}", file=sys.stderr)
sys.exit(0 if gptq < rtn else 1)
PY
fi

# every expert falls back with a few tokens
"$bin" quantize -m "$tmp/m.gguf" -o "$tmp/few.gguf" --type q4_k --pure --method gptq \
    --calib "$tmp/few.jsonl" -t 2 --json >"$tmp/few.json" 2>"$tmp/few.err" ||
    fail "quantize gptq, few tokens: $(tail -1 "$tmp/few.err")"
python3 - "$tmp/few.json" <<'PY' || fail "the fallbacks are not reported as expected"
import json, sys
d = json.load(open(sys.argv[1]))
fb = d["expert_fallback"]
assert len(fb) == 2 * 3 * 8, len(fb)  # every expert of every stack of both blocks
per_stack = {}
for f in fb:
    assert f["tokens"] < f["needed"] == (512 if "down" not in f["name"] else 256), f
    per_stack.setdefault(f["name"], []).append(f["expert"])
    per_stack[f["name"] + "#"] = per_stack.get(f["name"] + "#", 0) + f["tokens"]
for name in [n for n in per_stack if not n.endswith("#")]:
    assert sorted(per_stack[name]) == list(range(8)), per_stack[name]
    assert per_stack[name + "#"] == 2 * d["calib_tokens"], (name, per_stack[name + "#"])
PY
grep -q "^blk.1.ffn_down_exps.weight expert 7: [0-9]* calibration tokens (fewer than 256)" \
    <("$bin" quantize -m "$tmp/m.gguf" -o "$tmp/few2.gguf" --type q4_k --pure --method awq \
          --calib "$tmp/few.jsonl" -t 2 2>/dev/null) && ok || fail "text report: no fallback line"
grep -q "expert 3 saw [0-9]* calibration tokens, fewer than 512" "$tmp/few.err" && ok ||
    fail "no fallback warning on stderr"

[ "$failed" -eq 0 ] && echo "cli_moe_quant: all passed"
exit $((failed > 0))
