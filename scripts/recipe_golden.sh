#!/usr/bin/env bash
# Writes tests/data/hybrid_recipes.json, the reference of tests/cli_hybrid_recipes.sh: for each
# hybrid family, the synth --tiny model at width 256 (stories260K's vocabulary, seed 3) quantized
# by llama-quantize to each recipe, as {arch: {recipe: {tensor: [ggml type, sha256]}}}.
# Usage: bash scripts/recipe_golden.sh EDGELM_BINARY LLAMA_QUANTIZE FIXTURES_DIR ARCH...
set -eu
bin=$1 lq=$2 fix=$3
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$root/tests/lib/recipes.sh"
for arch in "$@"; do
    "$bin" synth --arch "$arch" --tiny --width 256 -s 3 \
        --vocab "$fix/stories260K/stories260K-f32.gguf" -o "$tmp/$arch.gguf" >/dev/null
    for r in $RECIPES; do
        "$lq" "$tmp/$arch.gguf" "$tmp/$arch-$r.gguf" "${r^^}" 2 >/dev/null 2>&1
        python3 "$root/tests/lib/gguf_tensors.py" "$tmp/$arch-$r.gguf" >"$tmp/$arch-$r.json"
    done
done
python3 - "$tmp" "$RECIPES" "$@" >"$root/tests/data/hybrid_recipes.json" <<'PY'
import json, os, sys
tmp, recipes, archs = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
out = {a: {r: json.load(open(os.path.join(tmp, f"{a}-{r}.json"))) for r in recipes} for a in archs}
json.dump(out, sys.stdout, indent=1, sort_keys=True)
print()
PY
