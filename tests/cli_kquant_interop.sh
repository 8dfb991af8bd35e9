#!/usr/bin/env bash
# Interop test of the k-quant and i-quant kernels and encoders against llama.cpp: each file below is
# run greedily for 8 tokens on 4 prompts of stories260K's golden/greedy.json by llama.cpp's prebuilt
# CPU library from npm (node-llama-cpp 3.21.1, installed once by scripts/node-llama.sh;
# tests/interop/greedy.mjs) and by edgelm with --ggml-rounding (llama.cpp's activation codes and
# its float arithmetic, kernels/ggml_exact.h): prompt ids and generated ids must be equal, and
# every row's logits must equal llama.cpp's within MAX_DELTA over its 16 most probable tokens
# (tests/lib/logit_delta.py: l_i - l_top against log(p_i / p_top)). On an AVX-512 machine the two
# compute the same bits (with AVX512-FP16, once scripts/node-llama.sh has set aside the library's
# variant that adds F16 products in half precision); what is left is node-llama-cpp's float32
# probabilities (~3e-7). The files are llama.cpp's wide256 reference quantizations and two that
# edgelm writes with codes of its own: GPTQ with every k-quant and i-quant type on some tensor,
# and AWQ's q4_k_m recipe. Skipped (one line, exit 0) only when node is missing or npm cannot
# reach the registry.
# Usage: bash tests/cli_kquant_interop.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
refq=$fix/wide256/reference-quants
FILES=(
    "$refq/llamacpp-q2_k-pure.gguf"
    "$refq/llamacpp-q3_k-pure.gguf"
    "$refq/llamacpp-q4_k-pure.gguf"
    "$refq/llamacpp-q5_k-pure.gguf"
    "$refq/llamacpp-q6_k-pure.gguf"
    "$refq/llamacpp-iq4_nl-pure.gguf"
    "$refq/llamacpp-iq4_xs-pure.gguf"
    "$refq/llamacpp-q4_k_m.gguf"
    "$refq/llamacpp-q3_k_m.gguf"
)
MAX_DELTA=1e-3
[ -f "${FILES[0]}" ] || skip "the wide256 fixtures are missing"
require_node_llama

# edgelm's own files, calibrated on 8 samples (the codes, not their quality, are under test)
wide=$fix/wide256/wide-f32.gguf
calib=(--calib "$fix/stories260K/text/calib.txt" --calib-samples 8 --seq-len 64 -t 2)
mixed=(--tensor-type token_embd=q6_k --tensor-type blk.0.attn_q=q2_k --tensor-type blk.1.attn_k=q3_k
       --tensor-type blk.0.attn_v=q5_k --tensor-type blk.1.attn_output=iq4_nl
       --tensor-type blk.0.ffn_gate=iq4_xs --tensor-type blk.1.ffn_up=q6_k --tensor-type output=iq4_xs)
"$bin" quantize -m "$wide" -o "$tmp/gptq-mixed.gguf" --type q4_k --pure --method gptq "${calib[@]}" \
    "${mixed[@]}" >/dev/null 2>"$tmp/err" &&
    "$bin" quantize -m "$wide" -o "$tmp/awq-q4_k_m.gguf" --type q4_k_m --method awq "${calib[@]}" \
        >/dev/null 2>>"$tmp/err" || fail "quantize: $(tail -1 "$tmp/err")"
FILES+=("$tmp/gptq-mixed.gguf" "$tmp/awq-q4_k_m.gguf")

prompts=()
mapfile -d '' prompts < <(python3 -c 'import json, sys
print("\0".join(c["prompt"] for c in json.load(open(sys.argv[1]))["cases"][:4]), end="\0")' \
    "$fix/stories260K/golden/greedy.json")
[ "${#prompts[@]}" -eq 4 ] || fail "expected 4 fixture prompts, got ${#prompts[@]}"
for f in "${FILES[@]}"; do GREEDY_TOP=16 greedy_queue "$f" 8 "${prompts[@]}"; done
greedy_prefetch
for f in "${FILES[@]}"; do
    name=$(basename "$f" .gguf)
    GREEDY_TOP=16 greedy_ref "$f" 8 "${prompts[@]}" \
        >"$tmp/ref.json" 2>"$tmp/node.err" || { fail "llama.cpp on $name: $(tail -3 "$tmp/node.err")"; continue; }
    for i in "${!prompts[@]}"; do
        "$bin" run -m "$f" -p "${prompts[$i]}" -n 8 --temp 0 --ignore-eos -t 2 --ggml-rounding --json \
            --logits 8 >"$tmp/run.json" 2>"$tmp/err" || { fail "run $name: $(cat "$tmp/err")"; continue; }
        read -r -a deltas < <(python3 tests/lib/logit_delta.py "$tmp/ref.json" "$i" "$tmp/run.json" --per-row)
        echo "  $name prompt $i: |logit delta| per row: ${deltas[*]:-?}"
        python3 - "$tmp/ref.json" "$i" "$tmp/run.json" "$MAX_DELTA" "${deltas[@]}" <<'PY' && ok ||
import json, sys
ref = json.load(open(sys.argv[1]))[int(sys.argv[2])]
got = json.load(open(sys.argv[3]))
bound = float(sys.argv[4])
rows = [float(d) for d in sys.argv[5:]]
if len(rows) != len(ref["generated_ids"]):
    sys.exit(f"  {len(rows)} logit rows compared of {len(ref['generated_ids'])}")
if max(rows) > bound:
    sys.exit(f"  a row differs by {max(rows)} (bound {bound})")
if got["generated_ids"] != ref["generated_ids"]:
    sys.exit(f"  ids differ: llama.cpp {ref['generated_ids']} edgelm {got['generated_ids']}")
PY
            fail "$name, prompt $i: edgelm and llama.cpp differ (above)"
    done
done

echo "cli_kquant_interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
