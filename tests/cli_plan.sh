#!/usr/bin/env bash
# CLI test of `edgelm plan`: the KV-cache arithmetic of deployment guides (Llama-2-7B shape at 2048
# tokens, 1-byte elements: 512 MiB; with 8 KV heads: 128 MiB), weight bytes equal to the tensor
# bytes of a `synth --preset` file (from the preset and from the file), the speed bound and the
# verdicts against a device profile and custom figures, the recipe rows against the tensor bytes of
# llama-quantize's files of those recipes (wide256), and one-line errors.
# Usage: bash tests/cli_plan.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
. "$(dirname "$0")/lib/cli.sh"

# check FILE PYTHON_EXPR MESSAGE: the expression, on the JSON object d of FILE, must be true
check() {
    python3 -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" \
        "$1" || fail "$3: $(tr -d '\n\t' <"$1" | head -c 400)"
}

# Llama-2-7B's config.json (the keys plan reads), and the same with 8 KV heads (GQA)
cat >"$tmp/llama2-7b.json" <<'EOF'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
 "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
 "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
 "rms_norm_eps": 1e-05, "tie_word_embeddings": false}
EOF
sed 's/"num_key_value_heads": 32/"num_key_value_heads": 8/' "$tmp/llama2-7b.json" >"$tmp/gqa.json"

"$bin" plan -t 4 --config "$tmp/llama2-7b.json" -c 2048 --device 8-gen3 --json >"$tmp/p.json" ||
    fail "plan --config: exit status $?"
check "$tmp/p.json" 'd["kv_cache_bytes"]["int8"] == 512 * 2**20' "7B at 2048 tokens, int8: 512 MiB"
check "$tmp/p.json" 'd["kv_cache_bytes"]["f16"] == 1024 * 2**20' "7B at 2048 tokens, f16: 1 GiB"
check "$tmp/p.json" 'd["kv_cache_bytes"]["q8_0"] == 544 * 2**20' "7B at 2048 tokens, q8_0 blocks"
check "$tmp/p.json" 'abs(d["model"]["n_params"] - 6738415616) < 1' "7B parameter count"
# 12 GiB phone: f16 weights (12.55 GiB) do not fit, q4_0 does; bound = 68 GB/s / bytes per token
check "$tmp/p.json" '[r["fits"] for r in d["rows"][:5]] == [False, True, True, True, True]' "verdicts"
check "$tmp/p.json" 'all(abs(r["max_tokens_per_s"] - 68e9 / r["read_bytes_per_token"]) < 1e-6 * r["max_tokens_per_s"] for r in d["rows"])' "speed bound"
check "$tmp/p.json" 'all(r["peak_bytes"] == r["weight_bytes"] + r["kv_bytes"] + d["compute_bytes"] and r["headroom_bytes"] == 12 * 2**30 - r["peak_bytes"] for r in d["rows"])' "peak and headroom"
"$bin" plan -t 4 --config "$tmp/gqa.json" -c 2048 --json >"$tmp/g.json" || fail "plan gqa: exit status $?"
check "$tmp/g.json" 'd["kv_cache_bytes"]["int8"] == 128 * 2**20' "7B with 8 KV heads, int8: 128 MiB"
check "$tmp/g.json" '"fits" not in d["rows"][0] and "max_tokens_per_s" not in d["rows"][0]' "no device, no verdict"
"$bin" plan -t 4 --config "$tmp/gqa.json" --bandwidth 100 --ram 3.5 --cache-type q8_0 --json >"$tmp/c.json" ||
    fail "plan custom device: exit status $?"
check "$tmp/c.json" 'd["kv_cache_type"] == "q8_0" and d["rows"][2]["kv_bytes"] == d["kv_cache_bytes"]["q8_0"] and abs(d["rows"][2]["max_tokens_per_s"] - 100e9 / d["rows"][2]["read_bytes_per_token"]) < 1e-3 and [r["fits"] for r in d["rows"][:5]] == [False, False, True, False, True]' "custom bandwidth and RAM"
"$bin" plan -t 4 --config "$tmp/llama2-7b.json" --device x2-elite >"$tmp/text" || fail "plan text: exit status $?"
grep -q "^q4_0 .* fits (" "$tmp/text" || fail "text output lacks a q4_0 verdict: $(cat "$tmp/text")"

# a synth --preset file: plan's weight bytes (from the preset's shapes, and from the file) equal
# the file's tensor bytes (within 1%, the issue's bound; they are equal)
preset=qwen2-0.5b
if "$bin" synth --preset "$preset" --type q4_0 -o "$tmp/preset.gguf" >/dev/null 2>"$tmp/err"; then
    "$bin" inspect -m "$tmp/preset.gguf" --json >"$tmp/inspect.json" || fail "inspect preset file"
    "$bin" plan --preset "$preset" --json >"$tmp/pp.json" || fail "plan --preset: exit status $?"
    "$bin" plan -m "$tmp/preset.gguf" --json >"$tmp/pm.json" || fail "plan -m: exit status $?"
    for f in pp pm; do
        python3 - "$tmp/inspect.json" "$tmp/$f.json" <<'EOF' || fail "$f: q4_0 weight bytes differ from the file's"
import json, sys
file_bytes = sum(t["bytes"] for t in json.load(open(sys.argv[1]))["tensors"])
plan = json.load(open(sys.argv[2]))["rows"][2]
assert plan["weights"] == "q4_0"
sys.exit(0 if abs(plan["weight_bytes"] - file_bytes) <= 0.01 * file_bytes else 1)
EOF
    done
else
    fail "synth --preset $preset: $(cat "$tmp/err")"
fi

# the hybrids' presets: the recurrent state of one sequence (a multiple, with its rollback
# checkpoints, of one state) in the peak, nothing for Gemma 4's attention only (its parameters
# with the 256 of rope_freqs). Per recurrent layer, floats: Qwen3.5 0.8B's DeltaNet 3 conv inputs
# of 6144 channels (q, k, v) and 16 value heads of 128 x 128; Granite-4.0-H-micro's Mamba-2 3 of
# 4352 (x, B, C) and 4096 x 128; LFM2's short conv 2 of 2048
for spec in "qwen3.5-0.8b 752393024 18*(3*6144+16*128*128)" \
            "granite-4.0-h-micro 3191396096 36*(3*4352+4096*128)" \
            "lfm2-2.6b 2569272320 22*2*2048" "gemma-4-e2b 4647450147 0"; do
    read -r name params floats <<<"$spec"
    "$bin" plan --preset "$name" -c 4096 --json >"$tmp/h.json" || { fail "plan --preset $name: exit status $?"; continue; }
    check "$tmp/h.json" 'd["model"]["n_params"] == '"$params"' and all(r["peak_bytes"] == r["weight_bytes"] + r["kv_bytes"] + d["compute_bytes"] + d["state_bytes"] for r in d["rows"])' "plan --preset $name: parameters and peak"
    check "$tmp/h.json" '(d["state_bytes"] == 0) if '"$floats"' == 0 else (d["state_bytes"] >= 2 * 4 * '"$floats"' and d["state_bytes"] % (4 * '"$floats"') == 0)' "plan --preset $name: recurrent state"
done
# a mixture of experts: decode reads the routed experts only. Qwen3-30B-A3B: of each layer's
# 3 stacks of 128 experts of 768 x 2048, 8 are read a token (3,353,032,704 of 30,532,122,624
# parameters); the f16 row reads its weights but the embedding's other rows and the unrouted
# experts' (2 bytes a parameter), and the KV cache
"$bin" plan --preset qwen3-30b-a3b -c 4096 --json >"$tmp/moe.json" || fail "plan --preset qwen3-30b-a3b: exit status $?"
check "$tmp/moe.json" 'd["model"]["n_params"] == 30532122624 and d["model"]["n_active_params"] == 3353032704' "plan --preset qwen3-30b-a3b: active parameters"
check "$tmp/moe.json" 'all(r["read_bytes_per_token"] < r["weight_bytes"] * 0.2 for r in d["rows"]) and [r["read_bytes_per_token"] - r["weight_bytes"] for r in d["rows"] if r["weights"] == "f16"] == [-2 * (151936 - 1) * 2048 - 2 * (30532122624 - 3353032704) + d["kv_cache_bytes"]["f16"]]' "plan --preset qwen3-30b-a3b: read bytes a token"
"$bin" plan --preset qwen3-30b-a3b >"$tmp/text" || fail "plan --preset qwen3-30b-a3b (text): exit status $?"
grep -q "^experts: 128 a layer, 8 per token: 3.353 B parameters read a token$" "$tmp/text" ||
    fail "plan text lacks the active parameters: $(cat "$tmp/text")"
# gpt-oss-20b (openai/gpt-oss-20b's config.json): per layer q, k, v, o of 64 heads and 8 KV heads
# of 64 over 2880 with their biases, 64 sinks, 2 norms, a router of 32 with its bias, 32 experts'
# three 2880 x 2880 matrices and their biases; untied embeddings of 201088; a token reads 4 of the
# 32 experts and their biases
"$bin" plan --preset gpt-oss-20b -c 4096 --json >"$tmp/oss.json" || fail "plan --preset gpt-oss-20b: exit status $?"
check "$tmp/oss.json" '(lambda d_, h, q, kv, E, ff, L, V: d["model"]["n_params"] == L * (h * (q + 2 * kv) + q * h + q + 2 * kv + h + 64 + 2 * h + (h + 1) * E + E * 3 * h * ff + E * (2 * ff + h)) + 2 * V * h + h and d["model"]["n_active_params"] == d["model"]["n_params"] - L * (E - 4) * (3 * h * ff + 2 * ff + h))(d, 2880, 64 * 64, 8 * 64, 32, 2880, 24, 201088)' "plan --preset gpt-oss-20b: parameters and active parameters"
"$bin" plan --preset gpt-oss-20b >"$tmp/text" || fail "plan --preset gpt-oss-20b (text): exit status $?"
grep -q "^experts: 32 a layer, 4 per token: 4.187 B parameters read a token$" "$tmp/text" ||
    fail "plan text lacks gpt-oss-20b's active parameters: $(cat "$tmp/text")"
# Granite-4.0-H-Tiny: per layer 64 experts' three 512 x 1536 matrices, a router of 64, a shared
# expert's three 1024 x 1536, 2 norms; 36 Mamba-2 layers (in_proj to x, z of 3072, B and C of 128,
# dt of 48 heads; a conv of 4 taps and its bias over 3328 channels; dt bias, A, D; a norm of 3072;
# out_proj), 4 attention layers (q, o 1536 x 1536; k, v 512 x 1536); tied embeddings of 100352;
# a token reads 6 of the 64 experts and the recurrent state holds the micro's per-layer floats
"$bin" plan --preset granite-4.0-h-tiny -c 4096 --json >"$tmp/tiny.json" || fail "plan --preset granite-4.0-h-tiny: exit status $?"
check "$tmp/tiny.json" '(lambda h, L, E, ff, sff, V, inner, cw: d["model"]["n_params"] == L * (E * 3 * h * ff + h * E + 3 * h * sff + 2 * h) + 36 * (h * (inner + cw + 48) + 5 * cw + 3 * 48 + inner + inner * h) + 4 * (2 * h * h + 2 * h * 512) + V * h + h and d["model"]["n_active_params"] == d["model"]["n_params"] - L * (E - 6) * 3 * h * ff and d["state_bytes"] % (4 * 36 * (3 * cw + inner * 128)) == 0)(1536, 40, 64, 512, 1024, 100352, 3072, 3072 + 256)' "plan --preset granite-4.0-h-tiny: parameters, active parameters, state"
# LFM2-8B-A1B (layer_types, num_dense_layers, moe_intermediate_size of its config.json): 18 short-conv
# layers (in_proj to 3 x 2048, a conv of 3 taps, out_proj), 6 attention layers (q, o 2048 x 2048;
# k, v 512 x 2048; q and k norms of 64), 2 norms a layer; the first 2 FFNs dense of 7168, the other
# 22 a router of 32 with its expert bias and 32 experts' three 1792 x 2048; tied embeddings of
# 65536; a token reads 4 of the 32 experts (tied: the embedding whole, as the output); the state
# holds 2 of 3 conv inputs of 2048 a conv layer
"$bin" plan --preset lfm2-8b-a1b -c 4096 --json >"$tmp/lfm.json" || fail "plan --preset lfm2-8b-a1b: exit status $?"
check "$tmp/lfm.json" '(lambda h, L, Ld, E, k, ff, eff, V, conv, att, kv: d["model"]["n_params"] == V * h + h + L * 2 * h + conv * (4 * h * h + 3 * h) + att * (2 * h * h + 2 * h * kv + 2 * 64) + Ld * 3 * h * ff + (L - Ld) * (E * 3 * h * eff + h * E + E) and d["model"]["n_active_params"] == d["model"]["n_params"] - (L - Ld) * (E - k) * 3 * h * eff and [r["read_bytes_per_token"] - r["weight_bytes"] for r in d["rows"] if r["weights"] == "f16"] == [-2 * (L - Ld) * (E - k) * 3 * h * eff + d["kv_cache_bytes"]["f16"]] and d["state_bytes"] % (4 * conv * 2 * h) == 0 and d["state_bytes"] >= 2 * 4 * conv * 2 * h)(2048, 24, 2, 32, 4, 7168, 1792, 65536, 18, 6, 512)' "plan --preset lfm2-8b-a1b: parameters, active parameters, read bytes a token, state"
"$bin" plan --preset lfm2-8b-a1b >"$tmp/text" || fail "plan --preset lfm2-8b-a1b (text): exit status $?"
grep -q "^experts: 32 a layer, 4 per token: 1.558 B parameters read a token$" "$tmp/text" ||
    fail "plan text lacks lfm2-8b-a1b's active parameters: $(cat "$tmp/text")"
"$bin" plan --preset qwen3.5-2b >"$tmp/text" || fail "plan --preset qwen3.5-2b: exit status $?"
grep -q "^recurrent state (one sequence, with its rollback checkpoints): [0-9.]* MiB$" "$tmp/text" ||
    fail "plan text lacks the recurrent state: $(cat "$tmp/text")"

# the recipe rows: the tensor bytes of llama-quantize's file of each recipe (wide256)
"$bin" plan -m "$2/wide256/wide-f32.gguf" --json >"$tmp/w.json" || fail "plan wide256: exit status $?"
for r in q2_k q3_k_m q4_k_s q4_k_m q5_k_m q6_k; do
    "$bin" inspect -m "$2/wide256/reference-quants/llamacpp-$r.gguf" --json >"$tmp/i.json" ||
        fail "inspect llamacpp-$r.gguf"
    python3 - "$tmp/i.json" "$tmp/w.json" "$r" <<'EOF' || fail "plan's $r weight bytes differ from llama-quantize's file"
import json, sys
file_bytes = sum(t["bytes"] for t in json.load(open(sys.argv[1]))["tensors"])
row = [r for r in json.load(open(sys.argv[2]))["rows"] if r["weights"] == sys.argv[3]]
sys.exit(0 if len(row) == 1 and row[0]["weight_bytes"] == file_bytes else 1)
EOF
done
check "$tmp/w.json" '"iq4_xs" in [r["weights"] for r in d["rows"]]' "iq4_xs row"
# --quantize: the estimate of a GPTQ/AWQ run from a GEMM rate measured now; its memory against a
# measured run is tests/test_quant_memory.c's. Here: its shape, its arithmetic, and the issue's
# memory targets for the 7B and 13B shapes at 16 x 512 calibration tokens
for m in gptq awq; do
    "$bin" plan --preset llama-2-7b --quantize "$m" -t 1 --calib-samples 16 --seq-len 512 --json \
        >"$tmp/q-$m.json" || { fail "plan --quantize $m: exit status $?"; continue; }
    check "$tmp/q-$m.json" 'd["method"] == "'$m'" and d["n_layers"] == 32 and d["calib_tokens"] == 8192 and d["gemm_gflops"] > 0 and d["scalar_ns_per_weight"] > 0' "plan --quantize $m: fields"
    check "$tmp/q-$m.json" 'd["block_bytes"] == 4 * (4 * 4096**2 + 3 * 4096 * 11008) < d["peak_anon_bytes"] <= 6 * 2**30' "plan --quantize $m: one block's float32 matrices < peak <= 6 GiB"
    check "$tmp/q-$m.json" 'd["seconds"] >= 32 * d["seconds_per_block"] > 0 and abs(d["forward_flop"] - 32 * 4 * 8192 * (4 * 4096**2 + 3 * 4096 * 11008) - 2 * 8192 * 32000 * 4096) < 1e9' "plan --quantize $m: time and calibration passes"
done
# a mixture of experts: every expert's float32 matrices and Hessians in the block, a token's pass
# through its 8 experts of 128 only (qwen3-30b-a3b: attention 2048 -> 32 x 128 / 4 x 128, router
# 128 x 2048, experts 3 x 2048 x 768)
"$bin" plan --preset qwen3-30b-a3b --quantize gptq -t 1 --calib-samples 16 --seq-len 512 --json \
    >"$tmp/qmoe.json" || fail "plan --quantize qwen3-30b-a3b: exit status $?"
check "$tmp/qmoe.json" 'd["block_bytes"] == 4 * (2 * 2048 * 4096 + 2 * 2048 * 512 + 128 * 2048 + 128 * 3 * 2048 * 768) < d["peak_anon_bytes"] - 4 * 128 * (2048**2 + 768**2)' "plan --quantize qwen3-30b-a3b: the experts' matrices and Hessians"
check "$tmp/qmoe.json" 'abs(d["forward_flop"] - 48 * 4 * 8192 * (2 * 2048 * 4096 + 2 * 2048 * 512 + 128 * 2048 + 8 * 3 * 2048 * 768) - 2 * 8192 * 151936 * 2048) < 1e9' "plan --quantize qwen3-30b-a3b: passes through the chosen experts"
"$bin" plan --preset qwen3-30b-a3b --quantize awq -t 1 | grep -q "^mixture of experts: 128 experts per block, 8 per token: each calibrated on about 4096 tokens" ||
    fail "plan --quantize qwen3-30b-a3b: no experts line"
"$bin" plan --preset llama-2-13b --quantize gptq -t 1 --calib-samples 16 --json >"$tmp/q13.json" ||
    fail "plan --quantize 13b: exit status $?"
check "$tmp/q13.json" 'd["peak_anon_bytes"] <= 8 * 2**30' "plan --quantize: 13B within 8 GiB"
"$bin" plan --preset tinyllama-1.1b --quantize gptq -t 1 >"$tmp/qtext" || fail "plan --quantize text: exit status $?"
for line in "^quantize --method gptq --type q4_0 of .*: 22 blocks, 65536 calibration tokens (128 x 512), 1 threads$" \
            "^measured now: float32 GEMM [0-9.]* GFLOP/s" "^peak anonymous memory [0-9.]* GiB" "^time [0-9]* s ("; do
    grep -q "$line" "$tmp/qtext" || fail "plan --quantize text lacks '$line': $(cat "$tmp/qtext")"
done
expect_error "plan --quantize rtn" "gptq or awq" "$bin" plan --preset "$preset" --quantize rtn

expect_error "plan --device moon" "unknown device 'moon'" "$bin" plan --config "$tmp/gqa.json" --device moon
expect_error "plan --config --preset" "exactly one of" "$bin" plan --config "$tmp/gqa.json" --preset "$preset"
expect_error "plan --preset nope" "unknown preset 'nope'" "$bin" plan --preset nope
expect_error "plan --cache-type q4_0" "cache-type" "$bin" plan --preset "$preset" --cache-type q4_0

[ "$failed" -eq 0 ] && echo "cli_plan: all passed"
exit $((failed > 0))
