#!/usr/bin/env bash
# Interop test of every model family against llama.cpp: for llama, qwen2, qwen3, phi3, gemma and smollm3, a
# `synth --tiny` GGUF (and its --hf copy) is run greedily for 16 tokens on 3 prompts by edgelm and
# by llama.cpp's prebuilt CPU library from npm (node-llama-cpp@3.21.1, installed once by
# scripts/node-llama.sh; tests/interop/greedy.mjs); prompt ids and generated ids must be equal, and
# the HF copy must give the GGUF's tokens. Skipped (one line, exit 0) only when node is missing or
# npm cannot reach the registry. Usage: bash tests/cli_interop_arch.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
require_node_llama
pkg=$npm_dir/node_modules/node-llama-cpp

prompts=("Once upon a time" "The capital of France is" $'def fib(n):\n    return')
for arch in llama qwen2 qwen3 phi3 gemma smollm3; do
    case $arch in
    llama | smollm3) vocab=llama-bpe ;; qwen2 | qwen3) vocab=qwen2 ;; phi3) vocab=phi-3 ;; gemma) vocab=llama-spm ;;
    esac
    gguf=$tmp/$arch.gguf
    "$bin" synth --arch "$arch" --tiny -o "$gguf" --hf "$tmp/$arch-hf" \
        --vocab "$fix/vocab/ggml-vocab-$vocab.gguf" -s 7 >/dev/null 2>"$tmp/err" ||
        { fail "$arch: synth: $(cat "$tmp/err")"; continue; }
    node tests/interop/greedy.mjs "$pkg" "$gguf" 16 "${prompts[@]}" >"$tmp/$arch.ref.json" \
        2>"$tmp/err" || { fail "$arch: llama.cpp: $(tail -3 "$tmp/err")"; continue; }
    for i in 0 1 2; do
        for model in "$gguf" "$tmp/$arch-hf"; do
            "$bin" run -m "$model" -p "${prompts[$i]}" -n 16 --temp 0 --ignore-eos -t 2 --json \
                >"$tmp/out.json" 2>"$tmp/err" || { fail "$arch: run $model: $(cat "$tmp/err")"; continue; }
            python3 - "$tmp/$arch.ref.json" "$i" "$tmp/out.json" <<'EOF' || fail "$arch: $model: prompt $i differs from llama.cpp"
import json, sys
ref = json.load(open(sys.argv[1]))[int(sys.argv[2])]
got = json.load(open(sys.argv[3]))
same = got["prompt_ids"] == ref["prompt_ids"] and got["generated_ids"] == ref["generated_ids"]
if not same:
    print(f"  prompt {ref['prompt']!r}\n  llama.cpp {ref['prompt_ids']} -> {ref['generated_ids']}\n"
          f"  edgelm    {got['prompt_ids']} -> {got['generated_ids']}", file=sys.stderr)
sys.exit(0 if same else 1)
EOF
        done
    done
done

[ "$failed" -eq 0 ] && echo "cli_interop_arch: all passed"
exit $((failed > 0))
