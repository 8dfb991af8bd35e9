#!/usr/bin/env bash
# Interop test of every model family against llama.cpp: for llama, qwen2, qwen3, phi3 (and phi3
# with LongRoPE), gemma, gemma3, gemma4, smollm3, the hybrids lfm2, granitehybrid and qwen35 and
# the mixtures of experts qwen3moe, lfm2moe and gpt-oss, a `synth --tiny` GGUF and its --hf copy
# (theirs with one tensor per expert, Qwen3MoeForCausalLM's and Lfm2MoeForCausalLM's layouts;
# gpt-oss's with each layer's experts fused, GptOssForCausalLM's BF16 layout), and the hybrids
# with experts and a shared expert, qwen35moe and granitehybrid (synth --experts; theirs with
# each layer's experts packed, Qwen3_5MoeForCausalLM's and GraniteMoeHybridForCausalLM's layouts)
# are run greedily for 16 tokens on 3
# prompts by edgelm and by llama.cpp's prebuilt CPU library from npm (node-llama-cpp@3.21.1,
# installed once by scripts/node-llama.sh; tests/interop/greedy.mjs). From the GGUF, with
# --ggml-rounding, prompt ids and generated ids must be equal and the logits within 1e-3 of
# llama.cpp's along the path (tests/lib/logit_delta.py: llama.cpp's 8 most probable tokens per
# step); the HF copy, at edgelm's default rounding, must give the same tokens on the last (the
# longest) prompt. Gemma 3's window is
# 16 positions, and its third prompt is long enough (43 tokens + 16) to go round its local layers'
# ring of 48 rows; so is Gemma 4's (with its own tokenizer, ggml-vocab-gemma-4: 40 tokens + 16),
# whose last 3 layers read the caches of layers 3 and 4; the hybrids' third prompt is that long
# prompt too, longer than any conv kernel
# or recurrent chunk, so their state crosses a prefill and 16 decode steps; so is qwen3moe's,
# lfm2moe's, gpt-oss's and the hybrids' with experts, whose prompts route to each of their 8
# experts in every expert layer
# (tests/test_moe.c counts them; lfm2moe's by its sigmoid router and selection bias, gpt-oss's by
# the top logits of its biased router); gpt-oss's windowed layer 0 sees 16 positions (its
# attention sinks, biases and YaRN RoPE in every layer), so the long prompt crosses it. Phi-3 with LongRoPE
# (synth --longrope: Phi-4-mini's partial RoPE, factors for 4096 tokens extended from 512, its
# attention factor) runs at two context sizes, llama.cpp's (GREEDY_CTX) and edgelm's (-c) alike:
# 512 runs the short factors, 1024 the long ones. Qwen3.5's GGUF is run once
# more with M-RoPE sections that leave some rotated pairs to the fourth position stream, which
# llama.cpp holds at 0 for text. lfm2moe-f16 is lfm2moe 256 wide with every matrix F16 (quantize
# --type f16 --pure; no HF copy). Every float operation of lfm2, lfm2moe and lfm2moe-f16 follows
# llama.cpp's order under --ggml-rounding (the short convolution's taps fused, F16 products as
# ggml_vec_dot_f16 and tinyBLAS add them), so on an AVX-512 CPU (the library's float32 AVX-512
# variants, the ones --ggml-rounding follows) their logits must agree within 1e-6: the same bits
# up to node-llama-cpp's float32 probabilities (measured 1.1e-7; 3e-6 to 8e-6 with the taps
# rounded before they are added, 1e-2 with F16 products in edgelm's own order: on lfm2-8b-a1b
# either moved the logits by 0.04 within 8 layers); elsewhere within 1e-3, as the others.
# Skipped (one line, exit 0) only when node is missing or npm cannot reach the registry. Set
# INTEROP_VERBOSE=1 to print each largest logit difference.
# Usage: bash tests/cli_interop_arch.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
require_node_llama

long="Once upon a time there was a little girl who lived in a village near the forest. Whenever \
she went out, the little girl wore a red riding cloak, so everyone in the village called her"
names=(llama qwen2 qwen3 phi3 gemma gemma3 gemma4 smollm3 lfm2 granitehybrid qwen35 qwen3moe lfm2moe
    gpt-oss qwen35moe granitehybrid-experts phi3-longrope-512 phi3-longrope-1024 lfm2moe-f16)
# the logits' bound of a name: the same bits where --ggml-rounding follows all its arithmetic
# (see the top) and llama.cpp runs float32 AVX-512, else 1e-3
bound() {
    case $1 in
    lfm2 | lfm2moe | lfm2moe-f16) grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo 1e-6 && return ;;
    esac
    echo 1e-3
}

# family NAME: sets arch, vocab, prompts, ctx, synth_opts and ctx_opts of a name of the list
family() {
    arch=${1%-longrope-*} arch=${arch%-experts} arch=${arch%-f16}
    ctx=256 synth_opts=() ctx_opts=()
    case $1 in
    phi3-longrope-*) ctx=${1##*-} synth_opts=(--longrope) ctx_opts=(-c "$ctx") ;;
    *-experts) synth_opts=(--experts) ;;
    *-f16) synth_opts=(--width 256) ;;
    esac
    case $arch in
    llama | smollm3 | lfm2 | lfm2moe | granitehybrid | gpt-oss) vocab=llama-bpe ;; qwen2 | qwen3 | qwen3moe) vocab=qwen2 ;; phi3) vocab=phi-3 ;;
    gemma | gemma3) vocab=llama-spm ;; gemma4) vocab=gemma-4 ;; qwen35 | qwen35moe) vocab=qwen35 ;;
    esac
    prompts=("Once upon a time" "The capital of France is" $'def fib(n):\n    return')
    case $arch in gemma3 | gemma4 | lfm2 | lfm2moe | granitehybrid | qwen35 | qwen35moe | qwen3moe | gpt-oss) prompts[2]=$long ;; esac
}

# Every model first, so that llama.cpp runs them all in one process (greedy_prefetch).
for name in "${names[@]}"; do
    family "$name"
    "$bin" synth --arch "$arch" --tiny "${synth_opts[@]}" -o "$tmp/$name.gguf" --hf "$tmp/$name-hf" \
        --vocab "$fix/vocab/ggml-vocab-$vocab.gguf" -s 7 >/dev/null 2>"$tmp/err" ||
        { fail "$name: synth: $(cat "$tmp/err")"; continue; }
    if [ "${name%-f16}" != "$name" ]; then
        mv "$tmp/$name.gguf" "$tmp/$name-f32.gguf" && rm -r "$tmp/$name-hf" &&
            "$bin" quantize -m "$tmp/$name-f32.gguf" -o "$tmp/$name.gguf" --type f16 --pure \
                >/dev/null 2>"$tmp/err" || { fail "$name: quantize: $(tail -1 "$tmp/err")"; continue; }
    fi
    GREEDY_TOP=8 GREEDY_CTX=$ctx greedy_queue "$tmp/$name.gguf" 16 "${prompts[@]}"
done
# Qwen3.5 with rope.dimension_sections 2, 2, 0, 0 over its 4 rotated pairs: pair 2 is in the fourth
# stream (ggml_mrope_cache_init), still for text
if [ -f "$tmp/qwen35.gguf" ]; then
    python3 - "$tmp/qwen35.gguf" "$tmp/still.gguf" <<'EOF' || fail "qwen35: cannot patch the sections"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
at = b.find(b"qwen35.rope.dimension_sections") + len(b"qwen35.rope.dimension_sections")
assert struct.unpack_from("<IIQ", b, at) == (9, 5, 4)  # an array of 4 int32
struct.pack_into("<4i", b, at + 16, 2, 2, 0, 0)
open(sys.argv[2], "wb").write(b)
EOF
    GREEDY_TOP=8 GREEDY_CTX=256 greedy_queue "$tmp/still.gguf" 16 "$long"
fi
greedy_prefetch

for name in "${names[@]}" still; do
    [ -f "$tmp/$name.gguf" ] || continue
    if [ "$name" = still ]; then
        ctx=256 prompts=("$long") ctx_opts=() models=("$tmp/still.gguf")
    else
        family "$name"
        models=("$tmp/$name.gguf")
        [ -d "$tmp/$name-hf" ] && models+=("$tmp/$name-hf")
    fi
    GREEDY_TOP=8 GREEDY_CTX=$ctx greedy_ref "$tmp/$name.gguf" 16 "${prompts[@]}" \
        >"$tmp/$name.ref.json" 2>"$tmp/err" || { fail "$name: llama.cpp: $(tail -3 "$tmp/err")"; continue; }
    runs=()
    for model in "${models[@]}"; do
        first=0
        [ "$model" = "$tmp/$name-hf" ] && runs+=(--tokens) first=$((${#prompts[@]} - 1))
        for ((i = first; i < ${#prompts[@]}; i++)); do
            opts=("${ctx_opts[@]}")
            [ "$model" = "$tmp/$name.gguf" ] && opts+=(--ggml-rounding --logits 16 --logits-top 32)
            out=$tmp/$name.$i.${model##*/}.json
            if "$bin" run -m "$model" -p "${prompts[$i]}" -n 16 --temp 0 --ignore-eos -t 2 --json \
                "${opts[@]}" >"$out" 2>"$tmp/err"; then
                runs+=("$out")
            else
                fail "$name: run $model: $(cat "$tmp/err")"
            fi
        done
    done
    python3 tests/lib/logit_delta.py --agree "$(bound "$name")" "$tmp/$name.ref.json" "${runs[@]}" \
        2>"$tmp/err" ||
        fail "$name differs from llama.cpp: $(cat "$tmp/err")"
done

# the two context sizes ran different factors: llama.cpp's own continuations differ
if [ -s "$tmp/phi3-longrope-512.ref.json" ] && [ -s "$tmp/phi3-longrope-1024.ref.json" ]; then
    python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(not any(x["generated_ids"] != y["generated_ids"] for x, y in zip(a, b)))
' "$tmp/phi3-longrope-512.ref.json" "$tmp/phi3-longrope-1024.ref.json" ||
        fail "phi3-longrope: llama.cpp continues alike at 512 and 1024 tokens of context (short and long factors)"
fi

[ "$failed" -eq 0 ] && echo "cli_interop_arch: all passed"
exit $((failed > 0))
