#!/usr/bin/env bash
# The sub-4-bit recipes (q2_k_s, iq1_s .. iq3_m) byte for byte against llama-quantize: `quantize
# --type RECIPE --imatrix` of wide256 and stories260K with their importance matrices, every
# tensor's type and bytes as llama-quantize wrote them (tests/data/iquant_recipes.json,
# scripts/iquant_recipes_golden.sh); and without the importance matrix llama-quantize requires, one
# line naming the type, the first tensor that needs it and the recipe. The type choice of every
# tensor is also test_iquant_recipes'.
# Usage: bash tests/cli_iquant_recipes.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1 fix=$2
. "$(dirname "$0")/lib/cli.sh"
golden=$(dirname "$0")/data/iquant_recipes.json
[ -f "$fix/wide256/wide-f32.gguf" ] && [ -f "$fix/stories260K/stories260K-f32.gguf" ] ||
    skip "the wide256 or stories260K fixtures are missing"

for model in wide256:wide256/wide-f32.gguf stories260K:stories260K/stories260K-f32.gguf; do
    name=${model%%:*} path=$fix/${model#*:}
    im=$fix/$name/reference-quants/llamacpp-imatrix-calib.gguf
    for r in $(python3 -c 'import json, sys; print(*json.load(open(sys.argv[1]))[sys.argv[2]])' "$golden" "$name"); do
        "$bin" quantize -m "$path" -o "$tmp/q.gguf" --type "$r" --imatrix "$im" -t 2 \
            >/dev/null 2>"$tmp/err" || { fail "$name $r: quantize: $(tail -1 "$tmp/err")"; continue; }
        python3 tests/lib/gguf_tensors.py "$tmp/q.gguf" >"$tmp/q.json"
        python3 - "$golden" "$name" "$r" "$tmp/q.json" <<'PY' && ok || fail "$name $r differs from llama-quantize"
import json, sys
want = json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]]
got = json.load(open(sys.argv[4]))
bad = [n for n in want if got.get(n) != want[n]] + [n for n in got if n not in want]
for n in bad[:5]:
    print(f"  {n}: llama-quantize {want.get(n, ['-'])[0]}, edgelm {got.get(n, ['-'])[0]}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    done
done

# without the importance matrix llama-quantize requires: one line naming the type and the recipe
wide=$fix/wide256/wide-f32.gguf
expect_error "iq1_s without an imatrix" "iq1_s needs an importance matrix (--imatrix FILE).*'blk.0.attn_q.weight', iq1_s)" \
    "$bin" quantize -m "$wide" -o "$tmp/no.gguf" --type iq1_s
expect_error "q2_k_s without an imatrix" "q2_k needs an importance matrix (--imatrix FILE).*'blk.0.attn_q.weight', q2_k_s)" \
    "$bin" quantize -m "$wide" -o "$tmp/no.gguf" --type q2_k_s
[ -e "$tmp/no.gguf" ] && fail "a refused quantize left its output"

[ "$failed" -eq 0 ] && echo "cli_iquant_recipes: all $passed passed (every tensor of the 22 recipe files equal to llama-quantize's)"
exit $((failed > 0))
