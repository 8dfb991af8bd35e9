#!/usr/bin/env bash
# The hybrid families (and the mixtures of experts qwen3moe, lfm2moe and gpt-oss) against what llama.cpp's own tools
# (node-llama-cpp 3.21.1's llama.cpp) wrote and measured on the same files, recorded in tests/data/hybrid_llamacpp.json by
# scripts/hybrid_golden.sh. On each family's synth --tiny model at width 256 (rows of whole
# super-blocks):
# - llama-quantize's recipes byte for byte: every tensor's type and bytes (which tensors stay f32,
#   such as the convolution kernels and the router; how a recipe counts a hybrid's attention
#   layers; the rules of a model of 8 experts and its 3-D expert stacks; mxfp4_moe's MXFP4
#   experts);
# - `eval` agrees with llama-perplexity: PPL of the F32 and Q4_K_M files within 0.1%, the Q4_K_M
#   file's mean KLD within 2%.
# Usage: bash tests/cli_hybrid_llamacpp.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/hybrid.sh"
golden=$(dirname "$0")/data/hybrid_llamacpp.json

for arch in $(python3 -c 'import json, sys; print(*json.load(open(sys.argv[1])))' "$golden"); do
    hybrid_tiny "$bin" "$fix" "$arch" "$tmp/$arch.gguf" >/dev/null 2>"$tmp/err" ||
        { fail "$arch: synth: $(cat "$tmp/err")"; continue; }
    written=()
    for r in $(recipes_of "$arch"); do
        "$bin" quantize -m "$tmp/$arch.gguf" -o "$tmp/$r.gguf" --type "$r" -t 2 >/dev/null \
            2>"$tmp/err" && written+=("$r") || fail "$arch $r: quantize: $(tail -1 "$tmp/err")"
    done
    "$bin" eval --ref "$tmp/$arch.gguf" -m "$tmp/q4_k_m.gguf" -f "$fix/$EVAL_TEXT" -c 128 -t 2 \
        --json >"$tmp/eval.json" 2>"$tmp/err" || { fail "$arch: eval: $(tail -1 "$tmp/err")"; continue; }
    # one interpreter a family: each recipe's tensors against llama-quantize's, then the eval
    PYTHONPATH=tests/lib python3 - "$golden" "$arch" "$tmp" "$tmp/eval.json" "${written[@]}" <<'PY' ||
import json, sys
from gguf_tensors import tensors
golden, arch, tmp, eval_json, recipes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
ref = json.load(open(golden))[arch]
ok = True
for r in recipes:
    want, got = ref["recipes"][r], tensors(f"{tmp}/{r}.gguf")
    bad = [n for n in want if got.get(n) != want[n]] + [n for n in got if n not in want]
    if bad:
        print(f"{arch} {r} differs from llama-quantize:", file=sys.stderr)
    for n in bad[:5]:
        print(f"  {n}: llama-quantize {want.get(n, ['-'])[0]}, edgelm {got.get(n, ['-'])[0]}",
              file=sys.stderr)
    ok &= not bad
q = json.load(open(eval_json))["models"][0]
got = {"ppl_f32": q["ref_ppl"], "ppl_q4_k_m": q["ppl"], "kld_q4_k_m": q["kld_mean"]}
for k, tol in (("ppl_f32", 1e-3), ("ppl_q4_k_m", 1e-3), ("kld_q4_k_m", 0.02)):
    rel = abs(got[k] / ref["eval"][k] - 1)
    print(f"  {arch} {k}: edgelm {got[k]:.6g}, llama.cpp {ref['eval'][k]:.6g} ({rel:.2e})",
          file=sys.stderr)
    ok &= rel <= tol
sys.exit(0 if ok else 1)
PY
        fail "$arch: recipes or eval differ from llama.cpp's (above)"
done

[ "$failed" -eq 0 ] && echo "cli_hybrid_llamacpp: all passed"
exit $((failed > 0))
