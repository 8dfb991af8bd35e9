#!/usr/bin/env bash
# Writes tests/data/iquant_recipes.json, the reference of tests/cli_iquant_recipes.sh, from
# llama.cpp's own llama-quantize (node-llama-cpp 3.21.1's llama.cpp, built outside the repo; its
# path is an argument): for the sub-4-bit recipes, each model's file as llama-quantize writes it
# with the model's importance matrix,
#   {model: {recipe: {tensor: [ggml type, sha256 of its bytes]}}}
# for wide256 (rows of whole 256-weight super-blocks: the recipes' own choices) and stories260K
# (rows of 64 and 172 weights: their fallbacks, IQ4_NL, Q4_0, Q5_0, Q8_0, F16); and under
# "wide256-pure" the whole wide256 files of `--pure` IQ1_S (with --token-embedding-type q8_0
# --output-tensor-type q8_0, as llama-quantize's IQ1_S encoder needs importance for every tensor),
# IQ1_M (its token embedding and output without importance), TQ1_0 and TQ2_0
# (tests/cli_iquant_write.sh).
# Usage: bash scripts/iquant_recipes_golden.sh LLAMA_QUANTIZE FIXTURES_DIR
set -eu
lq=$1 fix=$2
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
recipes="iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq2_m iq3_xxs iq3_xs iq3_s iq3_m q2_k_s"
for model in wide256:wide256/wide-f32.gguf stories260K:stories260K/stories260K-f32.gguf; do
    name=${model%%:*} path=$fix/${model#*:}
    for r in $recipes; do
        "$lq" --imatrix "$fix/$name/reference-quants/llamacpp-imatrix-calib.gguf" "$path" \
            "$tmp/$name-$r.gguf" "${r^^}" 2 >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
        python3 "$root/tests/lib/gguf_tensors.py" "$tmp/$name-$r.gguf" >"$tmp/$name-$r.json"
    done
done
for t in iq1_s iq1_m tq1_0 tq2_0; do
    extra=()
    [ "$t" = iq1_s ] && extra=(--token-embedding-type q8_0 --output-tensor-type q8_0)
    "$lq" --pure "${extra[@]}" --imatrix "$fix/wide256/reference-quants/llamacpp-imatrix-calib.gguf" \
        "$fix/wide256/wide-f32.gguf" "$tmp/pure-$t.gguf" "${t^^}" 2 >"$tmp/log" 2>&1 ||
        { cat "$tmp/log" >&2; exit 1; }
    python3 "$root/tests/lib/gguf_tensors.py" "$tmp/pure-$t.gguf" >"$tmp/wide256-pure-$t.json"
done
python3 - "$tmp" $recipes >"$root/tests/data/iquant_recipes.json" <<'PY'
import json, os, sys
tmp, recipes = sys.argv[1], sys.argv[2:]
out = {m: {r: json.load(open(os.path.join(tmp, f"{m}-{r}.json"))) for r in recipes}
       for m in ("wide256", "stories260K")}
out["wide256-pure"] = {t: json.load(open(os.path.join(tmp, f"wide256-pure-{t}.json")))
                       for t in ("iq1_s", "iq1_m", "tq1_0", "tq2_0")}
json.dump(out, sys.stdout, indent=1, sort_keys=True)
print()
PY
