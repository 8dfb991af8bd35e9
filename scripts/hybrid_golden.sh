#!/usr/bin/env bash
# Writes tests/data/hybrid_llamacpp.json, the reference of tests/cli_hybrid_llamacpp.sh, from
# llama.cpp's own tools (node-llama-cpp 3.21.1's llama.cpp, built outside the repo; their paths are
# arguments). For each hybrid family (and the mixtures of experts qwen3moe, lfm2moe and gpt-oss: the
# 8-expert recipe rules, the expert stacks quantized, mxfp4_moe), its synth --tiny model at width 256 (stories260K's
# vocabulary, seed 3, weights N(0, 0.05²), Gemma 4's N(0, 0.02²): tests/lib/hybrid.sh):
#   recipes: {recipe: {tensor: [ggml type, sha256]}} as llama-quantize wrote them;
#   eval: llama-perplexity -c 128 on stories260K's valid.txt: the F32 model's PPL, and its Q4_K_M
#         file's PPL and mean KLD against the F32 logits.
# The families named are (re)written; the file's other families are kept as they are (each takes
# minutes of llama-perplexity on 2 cores), so a family is added without re-measuring the others.
# Usage: bash scripts/hybrid_golden.sh EDGELM LLAMA_QUANTIZE LLAMA_PERPLEXITY FIXTURES_DIR ARCH...
set -eu
bin=$1 lq=$2 lp=$3 fix=$4
shift 4
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$root/tests/lib/hybrid.sh"
for arch in "$@"; do
    hybrid_tiny "$bin" "$fix" "$arch" "$tmp/$arch.gguf" >/dev/null
    for r in $(recipes_of "$arch"); do
        "$lq" "$tmp/$arch.gguf" "$tmp/$arch-$r.gguf" "${r^^}" 2 >/dev/null 2>&1
        python3 "$root/tests/lib/gguf_tensors.py" "$tmp/$arch-$r.gguf" >"$tmp/$arch-$r.json"
    done
    ppl() { grep -o "$2 *: *[0-9.]*" "$1" | head -1 | grep -o '[0-9.]*$'; }
    "$lp" -m "$tmp/$arch.gguf" -f "$fix/$EVAL_TEXT" -c 128 -b 128 -t 2 \
        --kl-divergence-base "$tmp/base.kld" >"$tmp/f32.log" 2>&1
    "$lp" -m "$tmp/$arch-q4_k_m.gguf" -f "$fix/$EVAL_TEXT" -c 128 -b 128 -t 2 \
        --kl-divergence-base "$tmp/base.kld" --kl-divergence >"$tmp/q.log" 2>&1
    printf '{"ppl_f32": %s, "ppl_q4_k_m": %s, "kld_q4_k_m": %s}\n' \
        "$(ppl "$tmp/q.log" 'Mean PPL(base)')" "$(ppl "$tmp/q.log" 'Mean PPL(Q)')" \
        "$(ppl "$tmp/q.log" 'Mean    KLD')" >"$tmp/$arch-eval.json"
done
for arch in "$@"; do recipes_of "$arch"; done >"$tmp/recipes"
golden=$root/tests/data/hybrid_llamacpp.json
python3 - "$tmp" "$golden" "$@" >"$golden.tmp" <<'PY'
import json, os, sys
tmp, golden, archs = sys.argv[1], sys.argv[2], sys.argv[3:]
recipes = dict(zip(archs, (line.split() for line in open(os.path.join(tmp, "recipes")))))
out = json.load(open(golden)) if os.path.exists(golden) else {}
out.update({a: {"recipes": {r: json.load(open(os.path.join(tmp, f"{a}-{r}.json")))
                            for r in recipes[a]},
                "eval": json.load(open(os.path.join(tmp, f"{a}-eval.json")))} for a in archs})
json.dump(out, sys.stdout, indent=1, sort_keys=True)
print()
PY
mv "$golden.tmp" "$golden"
