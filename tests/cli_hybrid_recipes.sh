#!/usr/bin/env bash
# llama-quantize's recipes on the hybrid families, byte for byte: each family's synth --tiny model
# at width 256 (rows of whole super-blocks) quantized by edgelm to each recipe has the tensor types
# and bytes llama-quantize (node-llama-cpp 3.21.1's llama.cpp) wrote for the same file, recorded
# in tests/data/hybrid_recipes.json by scripts/recipe_golden.sh: which tensors stay f32 (the
# convolution kernels), how the recipe counts the attention layers of a hybrid.
# Usage: bash tests/cli_hybrid_recipes.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/recipes.sh"
golden=$(dirname "$0")/data/hybrid_recipes.json

for arch in $(python3 -c 'import json, sys; print(*json.load(open(sys.argv[1])))' "$golden"); do
    "$bin" synth --arch "$arch" --tiny --width 256 -s 3 \
        --vocab "$fix/stories260K/stories260K-f32.gguf" -o "$tmp/$arch.gguf" >/dev/null \
        2>"$tmp/err" || { fail "$arch: synth: $(cat "$tmp/err")"; continue; }
    for r in $RECIPES; do
        "$bin" quantize -m "$tmp/$arch.gguf" -o "$tmp/q.gguf" --type "$r" -t 2 >/dev/null \
            2>"$tmp/err" || { fail "$arch $r: quantize: $(tail -1 "$tmp/err")"; continue; }
        python3 tests/lib/gguf_tensors.py "$tmp/q.gguf" >"$tmp/q.json"
        python3 - "$golden" "$arch" "$r" "$tmp/q.json" <<'PY' || fail "$arch $r differs from llama-quantize"
import json, sys
want = json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]]
got = json.load(open(sys.argv[4]))
bad = [n for n in want if got.get(n) != want[n]] + [n for n in got if n not in want]
for n in bad[:5]:
    print(f"  {n}: llama-quantize {want.get(n, ['-'])[0]}, edgelm {got.get(n, ['-'])[0]}",
          file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    done
done

[ "$failed" -eq 0 ] && echo "cli_hybrid_recipes: all passed"
exit $((failed > 0))
