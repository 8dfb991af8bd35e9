#!/usr/bin/env bash
# MXFP4's products against llama.cpp's prebuilt CPU library from npm (node-llama-cpp@3.21.1,
# scripts/node-llama.sh; tests/interop/greedy.mjs): the mixtures of experts qwen3moe, lfm2moe and
# gpt-oss (`synth --tiny`, 8 experts) quantized by edgelm with every matrix in MXFP4 (`--type mxfp4
# --pure`: attention, dense and expert products all MXFP4), and qwen3moe by the mxfp4_moe recipe
# (experts MXFP4, the rest Q8_0), run greedily for 16 tokens on 3 prompts, the third long enough
# to route to each expert (tests/test_moe.c). With --ggml-rounding the prompt and generated ids
# must equal llama.cpp's and the logits be within 1e-3 of its along the path
# (tests/lib/logit_delta.py; measured: about 1e-7 for the MXFP4 files, 2e-6 for mxfp4_moe). That
# llama.cpp reads edgelm's files at all is part of the check. lfm2moe's mxfp4_moe file is left
# out: its Q8_0 prefill products on the long prompt follow llama.cpp's tinyBLAS order, which
# --ggml-rounding does not, so its logits differ there by about 0.1 with or without MXFP4; so is
# gpt-oss's (measured with llama-spm's vocabulary: the same ids, logits within 3e-6 on the first and
# third prompts but 2.5e-3 on the second, not investigated), whose MXFP4 file agrees within 1.3e-7.
# Skipped (exit 77) when node is missing or npm cannot reach the registry.
# Usage: bash tests/cli_mxfp4_interop.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
require_node_llama

# the third prompt routes to every expert of both families (tests/test_moe.c)
prompts=("Once upon a time" "The capital of France is"
    "Once upon a time there was a little girl who lived in a village near the forest. Whenever \
she went out, the little girl wore a red riding cloak, so everyone in the village called her")
names=(qwen3moe-mxfp4 lfm2moe-mxfp4 gpt-oss-mxfp4 qwen3moe-mxfp4_moe)
# every file first, so that llama.cpp runs them all in one process (greedy_prefetch)
for name in "${names[@]}"; do
    arch=${name%-*} type=${name##*-}
    case $arch in lfm2moe | gpt-oss) vocab=llama-bpe ;; qwen3moe) vocab=qwen2 ;; esac
    pure=()
    [ "$type" = mxfp4 ] && pure=(--pure)
    "$bin" synth --arch "$arch" --tiny -o "$tmp/$arch.gguf" \
        --vocab "$fix/vocab/ggml-vocab-$vocab.gguf" -s 7 >/dev/null 2>"$tmp/err" ||
        { fail "$name: synth: $(cat "$tmp/err")"; continue; }
    "$bin" quantize -m "$tmp/$arch.gguf" -o "$tmp/$name.gguf" --type "$type" "${pure[@]}" >/dev/null \
        2>"$tmp/err" || { fail "$name: quantize: $(tail -1 "$tmp/err")"; continue; }
    GREEDY_TOP=8 GREEDY_CTX=256 greedy_queue "$tmp/$name.gguf" 16 "${prompts[@]}"
done
greedy_prefetch

for name in "${names[@]}"; do
    gguf=$tmp/$name.gguf
    [ -f "$gguf" ] || continue
    GREEDY_TOP=8 GREEDY_CTX=256 greedy_ref "$gguf" 16 "${prompts[@]}" >"$tmp/$name.ref.json" \
        2>"$tmp/err" || { fail "$name: llama.cpp: $(tail -3 "$tmp/err")"; continue; }
    runs=()
    for i in "${!prompts[@]}"; do
        "$bin" run -m "$gguf" -p "${prompts[$i]}" -n 16 --temp 0 --ignore-eos -t 2 --json \
            --ggml-rounding --logits 16 --logits-top 32 >"$tmp/$name.$i.json" 2>"$tmp/err" &&
            runs+=("$tmp/$name.$i.json") || fail "$name: run: $(cat "$tmp/err")"
    done
    # the prompt and generated ids equal llama.cpp's, the logits within 1e-3 of its on every row
    python3 tests/lib/logit_delta.py --agree 1e-3 "$tmp/$name.ref.json" "${runs[@]}" 2>"$tmp/err" ||
        fail "$name differs from llama.cpp: $(cat "$tmp/err")"
done

[ "$failed" -eq 0 ] && echo "cli_mxfp4_interop: all passed"
exit $((failed > 0))
