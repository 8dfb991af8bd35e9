#!/usr/bin/env bash
# Issue 40's bars below 4 bits: wide256 under a size budget (`quantize --method gptq
# --target-size`, 32 samples of stories260K's calib.txt) at the sizes of llama.cpp's imatrix IQ3_M
# and IQ2_M files (tests/data/budget_wide256.json, scripts/budget_golden.sh: llama-quantize with
# the fixture's importance matrix, scored by llama-perplexity):
# - the file is no larger than llama.cpp's, its tensor data within the target;
# - its mean KLD by `edgelm eval` on valid.txt (n_ctx 256) is at most 0.7x llama.cpp's file's;
# - it runs in llama.cpp (node-llama-cpp 3.21.1, tests/interop/greedy.mjs): on 2 prompts of
#   stories260K's golden/greedy.json, 8 greedy tokens equal to edgelm's with --ggml-rounding and
#   the logits within 1e-3 along the way (tests/lib/logit_delta.py).
# Numerics: left out of the clang and ASan runs (the budget runs sanitized in cli_quant_budget).
# Skipped (one line, exit 0) when the fixtures are missing, node is missing or npm cannot reach
# the registry.
# Usage: bash tests/cli_quant_budget_wide256.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1 fix=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/budget.sh"
golden=$(dirname "$0")/data/budget_wide256.json
wide=$fix/wide256/wide-f32.gguf text=$fix/stories260K/text
[ -f "$wide" ] && [ -f "$text/calib.txt" ] || skip "the wide256 and stories260K fixtures are missing"
require_node_llama

prompts=()
mapfile -d '' prompts < <(python3 -c 'import json, sys
print("\0".join(c["prompt"] for c in json.load(open(sys.argv[1]))["cases"][:2]), end="\0")' \
    "$fix/stories260K/golden/greedy.json")
[ "${#prompts[@]}" -eq 2 ] || fail "expected 2 fixture prompts, got ${#prompts[@]}"

for r in IQ3_M IQ2_M; do
    read -r ref_bytes ref_kld < <(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))[sys.argv[2]]; print(d["file_bytes"], d["kld_mean"])' "$golden" "$r")
    target=$(budget_target "$bin" "$wide" "$ref_bytes") || { fail "$r: the budget's target"; continue; }
    f=$tmp/budget-$r.gguf
    "$bin" quantize -m "$wide" -o "$f" --method gptq --target-size "$target" \
        --calib "$text/calib.txt" --calib-samples 32 -t 2 --json >"$tmp/q.json" 2>"$tmp/err" ||
        { fail "$r: quantize: $(tail -1 "$tmp/err")"; continue; }
    "$bin" eval --ref "$wide" -m "$f" -f "$text/valid.txt" -c 256 -t 2 --json \
        >"$tmp/eval.json" 2>"$tmp/err" || { fail "$r: eval: $(tail -1 "$tmp/err")"; continue; }
    python3 - "$tmp/q.json" "$tmp/eval.json" "$f" "$target" "$ref_bytes" "$ref_kld" "$r" <<'PY' && ok ||
import json, os, sys
q, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
target, ref_bytes, ref_kld = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
kld = e["models"][0]["kld_mean"]
print(f"  {sys.argv[7]} size: budget {os.path.getsize(sys.argv[3])} bytes, KLD {kld:.5f}; "
      f"llama.cpp {ref_bytes} bytes, KLD {ref_kld:.5f} ({kld / ref_kld:.2f}x, bar 0.7x)")
assert q["tensor_bytes"] <= target, (q["tensor_bytes"], target)
assert os.path.getsize(sys.argv[3]) <= ref_bytes
assert kld <= 0.7 * ref_kld
PY
        fail "$r: the budget's file misses its size or its KLD bar"
    GREEDY_TOP=16 greedy_ref "$f" 8 "${prompts[@]}" >"$tmp/ref.json" 2>"$tmp/err" ||
        { fail "$r: llama.cpp: $(tail -3 "$tmp/err")"; continue; }
    for i in "${!prompts[@]}"; do
        "$bin" run -m "$f" -p "${prompts[$i]}" -n 8 --temp 0 --ignore-eos -t 2 --ggml-rounding \
            --json --logits 8 >"$tmp/run.json" 2>"$tmp/err" || { fail "$r: run: $(cat "$tmp/err")"; continue; }
        delta=$(python3 tests/lib/logit_delta.py "$tmp/ref.json" "$i" "$tmp/run.json") ||
            { fail "$r: prompt $i: no logits compared"; continue; }
        python3 - "$tmp/ref.json" "$i" "$tmp/run.json" "$delta" <<'PY' && ok ||
import json, sys
ref, got = json.load(open(sys.argv[1]))[int(sys.argv[2])], json.load(open(sys.argv[3]))
d, rows = sys.argv[4].split()
assert got["generated_ids"] == ref["generated_ids"], (got["generated_ids"], ref["generated_ids"])
assert float(d) <= 1e-3 and int(rows) == 8, (d, rows)
PY
            fail "$r: prompt $i: edgelm and llama.cpp differ on the budget's file"
    done
done

echo "cli_quant_budget_wide256: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
