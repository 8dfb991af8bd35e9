#!/usr/bin/env bash
# Writes tests/data/iquant_recipes.json, the reference of tests/cli_iquant_recipes.sh, from
# llama.cpp's own llama-quantize (node-llama-cpp 3.21.1's llama.cpp, built outside the repo; its
# path is an argument): for the sub-4-bit recipes, each model's file as llama-quantize writes it
# with the model's importance matrix,
#   {model: {recipe: {tensor: [ggml type, sha256 of its bytes]}}}
# for wide256 (rows of whole 256-weight super-blocks: the recipes' own choices) and stories260K
# (rows of 64 and 172 weights: their fallbacks, IQ4_NL, Q4_0, Q5_0, Q8_0, F16); and under
# "wide256-pure" the whole wide256 files of `--pure` IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S (the
# IQ2_M file type: llama-quantize's IQ2_S one writes IQ2_XS tensors), IQ3_XXS, IQ3_S, TQ1_0 and
# TQ2_0, with --token-embedding-type q8_0 --output-tensor-type q8_0 for IQ1_S and the IQ2 types
# (their encoders need importance for the token embedding, or llama-quantize's rule does), the
# others' token embedding and output without importance (tests/cli_iquant_write.sh).
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
pure="iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s tq1_0 tq2_0"
for t in $pure; do
    extra=() ft=${t^^}
    case $t in iq1_s | iq2_*) extra=(--token-embedding-type q8_0 --output-tensor-type q8_0) ;; esac
    [ "$t" = iq2_s ] && ft=IQ2_M
    "$lq" --pure "${extra[@]}" --imatrix "$fix/wide256/reference-quants/llamacpp-imatrix-calib.gguf" \
        "$fix/wide256/wide-f32.gguf" "$tmp/pure-$t.gguf" "$ft" 2 >"$tmp/log" 2>&1 ||
        { cat "$tmp/log" >&2; exit 1; }
    python3 "$root/tests/lib/gguf_tensors.py" "$tmp/pure-$t.gguf" >"$tmp/wide256-pure-$t.json"
done
python3 - "$tmp" "$recipes" "$pure" >"$root/tests/data/iquant_recipes.json" <<'PY'
import json, os, sys
tmp, recipes, pure = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
out = {m: {r: json.load(open(os.path.join(tmp, f"{m}-{r}.json"))) for r in recipes}
       for m in ("wide256", "stories260K")}
out["wide256-pure"] = {t: json.load(open(os.path.join(tmp, f"wide256-pure-{t}.json")))
                       for t in pure}
json.dump(out, sys.stdout, indent=1, sort_keys=True)
print()
PY
