#!/usr/bin/env bash
# Interop test of the k-quant and i-quant kernels against llama.cpp: each file below is run
# greedily for 8 tokens on 4 prompts of stories260K's golden/greedy.json by llama.cpp's prebuilt
# CPU library from npm (node-llama-cpp 3.21.1, installed once by scripts/node-llama.sh;
# tests/interop/greedy.mjs) and by edgelm with --ggml-rounding (llama.cpp's q8_K/q8_0 activation
# scheme is edgelm's for these types); prompt ids and generated ids must be equal. A file to check
# is one line of FILES. Skipped (one line, exit 0) only when node is missing or npm cannot reach
# the registry.
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
[ -f "${FILES[0]}" ] || skip "the wide256 fixtures are missing"
require_node_llama

prompts=()
mapfile -d '' prompts < <(python3 -c 'import json, sys
print("\0".join(c["prompt"] for c in json.load(open(sys.argv[1]))["cases"][:4]), end="\0")' \
    "$fix/stories260K/golden/greedy.json")
[ "${#prompts[@]}" -eq 4 ] || fail "expected 4 fixture prompts, got ${#prompts[@]}"
for f in "${FILES[@]}"; do
    name=$(basename "$f" .gguf)
    node tests/interop/greedy.mjs "$npm_dir/node_modules/node-llama-cpp" "$f" 8 "${prompts[@]}" \
        >"$tmp/ref.json" 2>"$tmp/node.err" || { fail "llama.cpp on $name: $(tail -3 "$tmp/node.err")"; continue; }
    for i in "${!prompts[@]}"; do
        "$bin" run -m "$f" -p "${prompts[$i]}" -n 8 --temp 0 --ignore-eos -t 2 --ggml-rounding --json \
            >"$tmp/run.json" 2>"$tmp/err" || { fail "run $name: $(cat "$tmp/err")"; continue; }
        python3 - "$tmp/ref.json" "$i" "$tmp/run.json" "$name" <<'PY' && ok || fail "$name, prompt $i: edgelm and llama.cpp differ"
import json, sys
ref = json.load(open(sys.argv[1]))[int(sys.argv[2])]
got = json.load(open(sys.argv[3]))
if got["prompt_ids"] != ref["prompt_ids"] or got["generated_ids"] != ref["generated_ids"]:
    print(f"  {sys.argv[4]} {ref['prompt']!r}: llama.cpp {ref['prompt_ids']} -> {ref['generated_ids']} "
          f"(top {ref['top']})\n  edgelm {got['prompt_ids']} -> {got['generated_ids']}", file=sys.stderr)
    sys.exit(1)
PY
    done
done

echo "cli_kquant_interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
