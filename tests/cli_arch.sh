#!/usr/bin/env bash
# CLI test of the model families (llama, qwen2, qwen3, phi3, gemma, gemma3, gemma4, gemma-embedding, smollm3, lfm2, granitehybrid, qwen35, qwen3moe, lfm2moe, gpt-oss) on `synth --tiny` models: quantize
# (q4_0, mixed policy) writes a GGUF of the same architecture that runs, perplexity and eval work on it
# (Phi-3 with LongRoPE too, its factors kept, run at a short and a long context); and the
# refusals are one clear line each: a GGUF of an unsupported architecture, an unknown
# tokenizer.ggml.pre, an HF config with an unknown rope_scaling (proportional, dynamic), a Gemma 3
# config without its sliding_window. Gemma 3 also loads as a multimodal checkpoint (config in
# text_config with rope_parameters, tensors under language_model.) and runs as its plain copy;
# so does Qwen3.5's (Qwen3_5ForConditionalGeneration: tensors under model.language_model., its
# tie_word_embeddings outside text_config, a vision tower and an MTP block ignored), and
# Qwen3.5-MoE's (Qwen3_5MoeForConditionalGeneration).
# and Gemma 4 (Gemma4ForConditionalGeneration, tensors under model.language_model. beside a
# vision tower's), and its context shift is refused in one line unless --swa-full keeps every
# position. qwen3moe's refusals: GPTQ, AWQ and ONNX export; its HF copy runs as its GGUF, and an
# expert missing from it or num_experts_per_tok above num_experts is one line naming the file.
# lfm2moe: the same greedy tokens with the prompt prefilled at once and a token at a time, and
# from its HF copy (Lfm2MoeForCausalLM); its router and selection bias kept f32 by quantize; an
# expert stack missing from its GGUF, an expert missing from its safetensors and use_expert_bias
# false each one line naming the file (and the tensor).
# gpt-oss: its HF copy (GptOssForCausalLM: each layer's experts fused, gate and up interleaved)
# gives the GGUF's first 16 greedy tokens; quantize keeps its sinks and biases f32; a top-k above
# the experts (GGUF, config.json), an expert count the tensors do not have, a router of the
# wrong shape and a quantization_config other than mxfp4 are each one line naming the file (the
# original checkpoint's MXFP4 experts: cli_hf_mxfp4.sh).
# The hybrids' experts, qwen35moe and granitehybrid (synth --experts): their HF copies (experts
# packed, [gate; up] per expert) give the GGUF's first 16 greedy tokens, and a packed expert
# tensor of the wrong shape is one line naming the file and the tensor; Qwen3.5-MoE's experts one
# tensor each run alike, one of them missing named with its file.
# Usage: bash tests/cli_arch.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"

# json_get FILE EXPR: prints EXPR evaluated on the JSON object d of FILE
json_get() {
    python3 -c "import json, math, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"
}

# 4 chunks of 64 tokens; 2 in a sanitizer build, where perplexity and eval over 152k- and
# 262k-entry vocabularies are slow (qwen3's: 6 of its 9 s of CPU; their numbers: the release run)
text_bytes=1200
$sanitized && text_bytes=600
head -c $text_bytes "$fix/stories260K/text/valid.txt" >"$tmp/text.txt"
for arch in llama qwen2 qwen3 phi3 gemma gemma3 gemma4 gemma-embedding smollm3 lfm2 granitehybrid qwen35 qwen3moe lfm2moe gpt-oss; do
    case $arch in
    llama | smollm3 | lfm2 | lfm2moe | granitehybrid | gpt-oss) vocab=llama-spm ;; qwen2 | qwen3 | qwen3moe) vocab=qwen2 ;; phi3) vocab=phi-3 ;; gemma | gemma3 | gemma4 | gemma-embedding) vocab=llama-spm ;;
    qwen35) vocab=qwen35 ;;
    esac
    f32=$tmp/$arch.gguf
    "$bin" synth --arch "$arch" --tiny -o "$f32" --vocab "$fix/vocab/ggml-vocab-$vocab.gguf" \
        >/dev/null 2>"$tmp/err" || { fail "$arch: synth: $(cat "$tmp/err")"; continue; }
    type=q4_0
    q=$tmp/$arch-$type.gguf
    "$bin" quantize -m "$f32" -o "$q" --type "$type" >/dev/null 2>"$tmp/err" ||
        { fail "$arch: quantize: $(cat "$tmp/err")"; continue; }
    "$bin" inspect -m "$q" --json >"$tmp/inspect.json" 2>"$tmp/err" ||
        fail "$arch: inspect $type: $(cat "$tmp/err")"
    [ "$(json_get "$tmp/inspect.json" 'd["architecture"]')" = "$arch" ] ||
        fail "$arch: quantized $type file is not architecture $arch"
    "$bin" run -m "$q" -p "Once upon a time" -n 8 --temp 0 --ignore-eos -t 2 --json \
        >"$tmp/run.json" 2>"$tmp/err" || fail "$arch: run $type: $(cat "$tmp/err")"
    [ "$(json_get "$tmp/run.json" 'len(d["generated_ids"])')" = 8 ] ||
        fail "$arch: run $type did not generate 8 tokens"
    "$bin" perplexity -m "$f32" -f "$tmp/text.txt" -c 64 -t 2 --json >"$tmp/ppl.json" \
        2>"$tmp/err" || fail "$arch: perplexity: $(cat "$tmp/err")"
    [ "$(json_get "$tmp/ppl.json" 'd["ppl"] > 1 and math.isfinite(d["ppl"])')" = True ] ||
        fail "$arch: perplexity is not a finite number above 1"
    "$bin" eval -m "$tmp/$arch-q4_0.gguf" --ref "$f32" -f "$tmp/text.txt" -c 64 -t 2 --json \
        >"$tmp/eval.json" 2>"$tmp/err" || fail "$arch: eval: $(cat "$tmp/err")"
done

# a mixture of experts: what does not handle experts says so in one line, writing nothing (GPTQ
# and AWQ calibrate each expert: tests/cli_moe_quant.sh)
moe=$tmp/qwen3moe.gguf
expect_error "qwen3moe onnx" "mixtures of experts are not supported by the ONNX export" \
    "$bin" export onnx -m "$moe" -o "$tmp/moe-onnx"
# its HF copy (Qwen3MoeForCausalLM: a router and one tensor per expert) runs greedily as the GGUF
# does; an expert missing from the safetensors and more experts per token than experts are one
# line naming the file
"$bin" synth --arch qwen3moe --tiny -o "$tmp/moe2.gguf" --hf "$tmp/moe-hf" \
    --vocab "$fix/vocab/ggml-vocab-qwen2.gguf" >/dev/null 2>"$tmp/err" ||
    fail "qwen3moe: synth --hf: $(cat "$tmp/err")"
for model in "$tmp/moe2.gguf" "$tmp/moe-hf"; do
    "$bin" run -m "$model" -p "Once upon a time" -n 8 --temp 0 --ignore-eos -t 2 --json \
        >"$model.run.json" 2>"$tmp/err" || fail "qwen3moe: run $model: $(cat "$tmp/err")"
done
[ "$(json_get "$tmp/moe2.gguf.run.json" 'd["generated_ids"]')" = \
    "$(json_get "$tmp/moe-hf.run.json" 'd["generated_ids"]')" ] ||
    fail "qwen3moe: the HF copy's greedy tokens differ from the GGUF's"
cp -r "$tmp/moe-hf" "$tmp/moe-noexpert" && cp -r "$tmp/moe-hf" "$tmp/moe-topk"
python3 - "$tmp/moe-noexpert/model.safetensors" "$tmp/moe-topk/config.json" <<'EOF'
import json, sys
data = open(sys.argv[1], "rb").read()
name = b'"model.layers.1.mlp.experts.7.up_proj.weight"'
assert data.count(name) == 1
open(sys.argv[1], "wb").write(data.replace(name, name[:-2] + b'X"'))  # same length: unknown
c = json.load(open(sys.argv[2]))
c["num_experts_per_tok"] = c["num_experts"] + 1
json.dump(c, open(sys.argv[2], "w"))
EOF
expect_error "qwen3moe missing expert" \
    "moe-noexpert/model.safetensors: missing tensor 'model.layers.1.mlp.experts.7.up_proj.weight'" \
    "$bin" run -m "$tmp/moe-noexpert" -p "Hi" -n 1
expect_error "qwen3moe top-k" \
    "moe-topk/config.json: num_experts_per_tok 9 is more than num_experts 8" \
    "$bin" run -m "$tmp/moe-topk" -p "Hi" -n 1

# lfm2moe: greedy tokens by either prefill and from its HF copy; the router and its bias f32 after
# quantize; a missing expert stack or expert, and a config without the expert bias, refused in
# one line
lm=$tmp/lfm2moe.gguf
"$bin" synth --arch lfm2moe --tiny -o "$tmp/lfm2moe-2.gguf" --hf "$tmp/lfm2moe-hf" \
    --vocab "$fix/vocab/ggml-vocab-llama-spm.gguf" >/dev/null 2>"$tmp/err" ||
    fail "lfm2moe: synth --hf: $(cat "$tmp/err")"
for run in "$lm 64 b64" "$lm 1 b1" "$tmp/lfm2moe-hf 64 hf"; do
    set -- $run
    "$bin" run -m "$1" -p "Once upon a time there was" -n 16 --temp 0 --ignore-eos -t 2 -b "$2" \
        --json >"$tmp/lfm2moe-$3.json" 2>"$tmp/err" || fail "lfm2moe: run $1 -b $2: $(cat "$tmp/err")"
done
for other in b1 hf; do
    [ "$(json_get "$tmp/lfm2moe-b64.json" 'd["generated_ids"]')" = \
        "$(json_get "$tmp/lfm2moe-$other.json" 'd["generated_ids"]')" ] ||
        fail "lfm2moe: greedy tokens of the GGUF's whole-prompt prefill differ from $other's"
done
"$bin" inspect -m "$tmp/lfm2moe-q4_0.gguf" >"$tmp/inspect.txt" 2>"$tmp/err" &&
    grep -q "blk.1.ffn_gate_inp.weight  *\[8, 64\]  *f32" "$tmp/inspect.txt" &&
    grep -q "blk.1.exp_probs_b.bias  *\[8\]  *f32" "$tmp/inspect.txt" ||
    fail "lfm2moe: quantize did not keep the router and its bias f32: $(cat "$tmp/err")"
python3 - "$lm" "$tmp/lfm2moe-noexpert.gguf" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
name = b"blk.2.ffn_up_exps.weight"
assert b.count(name) == 1
open(sys.argv[2], "wb").write(b.replace(name, b"blk.2.ffn_up_exps.weighx"))
EOF
expect_error "lfm2moe missing expert" \
    "lfm2moe-noexpert.gguf: missing tensor 'blk.2.ffn_up_exps.weight'" \
    "$bin" run -m "$tmp/lfm2moe-noexpert.gguf" -p "Hi" -n 1
cp -r "$tmp/lfm2moe-hf" "$tmp/lfm2moe-noexpert" && cp -r "$tmp/lfm2moe-hf" "$tmp/lfm2moe-nobias"
python3 - "$tmp/lfm2moe-noexpert/model.safetensors" "$tmp/lfm2moe-nobias/config.json" <<'EOF'
import json, sys
b = open(sys.argv[1], "rb").read()
name = b'"model.layers.2.feed_forward.experts.7.w3.weight"'
assert b.count(name) == 1
open(sys.argv[1], "wb").write(b.replace(name, name[:-2] + b'x"'))
c = json.load(open(sys.argv[2]))
c["use_expert_bias"] = False
json.dump(c, open(sys.argv[2], "w"))
EOF
expect_error "lfm2moe hf missing expert" \
    "lfm2moe-noexpert/model.safetensors: missing tensor 'model.layers.2.feed_forward.experts.7.w3.weight'" \
    "$bin" run -m "$tmp/lfm2moe-noexpert" -p "Hi" -n 1
expect_error "lfm2moe hf expert bias" "lfm2moe-nobias/config.json: use_expert_bias false" \
    "$bin" run -m "$tmp/lfm2moe-nobias" -p "Hi" -n 1

# the hybrids' experts (qwen35moe; granitehybrid with synth --experts): their HF copies
# (Qwen3_5MoeForCausalLM, GraniteMoeHybridForCausalLM: each layer's experts packed, [gate; up] per
# expert, beside a router and a shared expert) give the GGUF's first 16 greedy tokens; a packed
# expert tensor of a shape config.json does not give is one line naming the file and the tensor;
# --experts names the family it fits (nothing written)
expect_error "synth --experts qwen3" "--experts is for a family whose experts are optional" \
    "$bin" synth --arch qwen3 --tiny --experts -o "$tmp/x.gguf" \
    --vocab "$fix/vocab/ggml-vocab-qwen2.gguf"
[ ! -e "$tmp/x.gguf" ] || fail "synth --experts qwen3 left a file"
for case in "qwen35moe model.layers.1.mlp.experts.gate_up_proj" \
    "granitehybrid-experts model.layers.2.block_sparse_moe.output_linear.weight"; do
    set -- $case
    arch=${1%-experts} opts=()
    [ "$arch" = "$1" ] || opts=(--experts)
    "$bin" synth --arch "$arch" "${opts[@]}" --tiny -o "$tmp/$1.gguf" --hf "$tmp/$1-hf" \
        --vocab "$fix/stories260K/stories260K-f32.gguf" >/dev/null 2>"$tmp/err" ||
        { fail "$1: synth --hf: $(cat "$tmp/err")"; continue; }
    for model in "$tmp/$1.gguf" "$tmp/$1-hf"; do
        "$bin" run -m "$model" -p "Once upon a time" -n 16 --temp 0 --ignore-eos -t 2 --json \
            >"$model.run.json" 2>"$tmp/err" || fail "$1: run $model: $(cat "$tmp/err")"
    done
    [ -s "$tmp/$1-hf.run.json" ] && [ "$(json_get "$tmp/$1.gguf.run.json" 'd["generated_ids"]')" = \
        "$(json_get "$tmp/$1-hf.run.json" 'd["generated_ids"]')" ] ||
        fail "$1: the HF copy's greedy tokens differ from the GGUF's"
    cp -r "$tmp/$1-hf" "$tmp/$1-shape"
    python3 - "$tmp/$1-shape/model.safetensors" "$2" <<'EOF'
import json, struct, sys
# half the experts, twice the rows: the same bytes in a shape config.json does not give
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
shape = header[sys.argv[2]]["shape"]
header[sys.argv[2]]["shape"] = [shape[0] // 2, shape[1] * 2, shape[2]]
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
EOF
    expect_error "$1 hf expert shape" "$1-shape/model.safetensors: tensor '$2' has 3 dimensions \[4, " \
        "$bin" run -m "$tmp/$1-shape" -p "Hi" -n 1
done

# LongRoPE (Phi-3, synth --longrope): quantized, its factor tensors stay f32 with the original
# context and attention factor, and the file runs with the short and the long factors
"$bin" synth --arch phi3 --tiny --longrope -o "$tmp/lr.gguf" \
    --vocab "$fix/vocab/ggml-vocab-phi-3.gguf" >/dev/null 2>"$tmp/err" ||
    fail "phi3 longrope: synth: $(cat "$tmp/err")"
"$bin" quantize -m "$tmp/lr.gguf" -o "$tmp/lr-q4_0.gguf" --type q4_0 >/dev/null 2>"$tmp/err" ||
    fail "phi3 longrope: quantize: $(cat "$tmp/err")"
"$bin" inspect -m "$tmp/lr-q4_0.gguf" >"$tmp/inspect.txt" 2>"$tmp/err" ||
    fail "phi3 longrope: inspect: $(cat "$tmp/err")"
grep -q "rope_factors_long.weight  *\[6\]  *f32" "$tmp/inspect.txt" &&
    grep -q "rope_factors_short.weight  *\[6\]  *f32" "$tmp/inspect.txt" &&
    grep -q "LongRoPE: original context 512, attention factor 1.1547" "$tmp/inspect.txt" ||
    fail "phi3 longrope: the quantized file lost its LongRoPE: $(cat "$tmp/inspect.txt")"
for c in 512 1024; do
    "$bin" run -m "$tmp/lr-q4_0.gguf" -p "Once upon a time" -n 8 --temp 0 --ignore-eos -t 2 \
        -c "$c" --json >"$tmp/lr-$c.json" 2>"$tmp/err" || fail "phi3 longrope: run -c $c: $(cat "$tmp/err")"
done
[ "$(json_get "$tmp/lr-512.json" 'd["generated_ids"]')" != "$(json_get "$tmp/lr-1024.json" 'd["generated_ids"]')" ] ||
    fail "phi3 longrope: -c 512 and -c 1024 generate alike (short and long factors)"

# an architecture edgelm does not run: the tiny gemma file relabelled "mamba" (same length)
python3 - "$tmp/gemma.gguf" "$tmp/mamba.gguf" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
key = b"general.architecture"
at = data.index(key) + len(key) + 4 + 8  # key, value type, string length
assert data[at:at + 5] == b"gemma"
open(sys.argv[2], "wb").write(data[:at] + b"mamba" + data[at + 5:])
EOF
expect_error "mamba" "unsupported architecture 'mamba'" "$bin" run -m "$tmp/mamba.gguf" -p "Hi" -n 1

# a pre-tokenizer edgelm does not know
python3 - "$fix/vocab/ggml-vocab-gpt-2.gguf" "$tmp/pre.gguf" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
key = b"tokenizer.ggml.pre"
at = data.index(key) + len(key) + 4 + 8
assert data[at:at + 5] == b"gpt-2"
open(sys.argv[2], "wb").write(data[:at] + b"gpt-9" + data[at + 5:])
EOF
expect_error "gpt-9" "tokenizer.ggml.pre 'gpt-9' is not supported" "$bin" tokenize -m "$tmp/pre.gguf" -p "Hi"

# rope_scaling types the forward pass does not implement, in an HF config
for case in "llama proportional" "phi3 dynamic"; do
    set -- $case
    dir=$tmp/$1-$2
    "$bin" synth --arch "$1" --tiny -o "$tmp/x.gguf" --hf "$dir" \
        --vocab "$fix/vocab/ggml-vocab-llama-spm.gguf" >/dev/null 2>"$tmp/err" ||
        { fail "$1: synth --hf: $(cat "$tmp/err")"; continue; }
    python3 - "$dir/config.json" "$2" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["rope_scaling"] = {"rope_type": sys.argv[2], "factor": 4.0}
json.dump(c, open(sys.argv[1], "w"))
EOF
    expect_error "$1 $2" "rope_scaling type '$2' is not supported" "$bin" run -m "$dir" -p "Hi" -n 1
done

# same_logits NAME PLAIN MULTIMODAL: the multimodal layout runs as its plain copy. The logits, not
# only the tokens: a tiny random model may repeat one token whatever its RoPE.
same_logits() {
    local model
    for model in "$2" "$3"; do
        "$bin" run -m "$model" -p "Once upon a time" -n 4 --temp 0 --ignore-eos -t 2 --json \
            --logits 4 --logits-top 8 >"$model.json" 2>"$tmp/err" || fail "$1: run $model: $(cat "$tmp/err")"
    done
    [ -s "$3.json" ] && python3 -c '
import json, sys
a, b = (json.load(open(p))["logits"] for p in sys.argv[1:])
sys.exit(not all(x[0] == y[0] and abs(x[1] - y[1]) < 1e-5 for r, s in zip(a, b) for x, y in zip(r, s)))
' "$2.json" "$3.json" || fail "$1: the multimodal layout's logits differ from the plain copy's"
}

# hf_tiny ARCH VOCAB DIR: the family's synth --tiny model as DIR.gguf and the HF folder DIR
hf_tiny() {
    "$bin" synth --arch "$1" --tiny -o "$3.gguf" --hf "$3" --vocab "$fix/vocab/ggml-vocab-$2.gguf" \
        >/dev/null 2>"$tmp/err" || fail "$1: synth --hf: $(cat "$tmp/err")"
}

# Gemma 3: a missing key of the family's is named with its file; the multimodal layout runs
g3=$tmp/gemma3-hf
hf_tiny gemma3 llama-spm "$g3"
cp -r "$g3" "$tmp/g3-nowindow" && cp -r "$g3" "$tmp/g3-mm"
python3 - "$tmp/g3-nowindow/config.json" "$tmp/g3-mm/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
del c["sliding_window"]
json.dump(c, open(sys.argv[1], "w"))
# Gemma3ForConditionalGeneration: the text model's config one level down, beside a vision
# tower's (ignored); RoPE as newer transformers write it, per kind of layer
text = json.load(open(sys.argv[2]))
text["rope_parameters"] = {
    "full_attention": {"rope_type": "linear", "factor": text.pop("rope_scaling")["factor"],
                       "rope_theta": text.pop("rope_theta")},
    "sliding_attention": {"rope_type": "default", "rope_theta": text.pop("rope_local_base_freq")}}
json.dump({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
           "text_config": text, "vision_config": {"hidden_size": 8}}, open(sys.argv[2], "w"))
EOF
python3 tests/lib/hf_multimodal.py "$tmp/g3-mm" "" language_model. vision_tower.patch_embedding.weight
expect_error "gemma3 without sliding_window" "config.json: missing required key 'sliding_window'" \
    "$bin" run -m "$tmp/g3-nowindow" -p "Hi" -n 1
same_logits gemma3 "$g3" "$tmp/g3-mm"

# Qwen3.5's and Qwen3.5-MoE's multimodal layouts (Qwen3_5ForConditionalGeneration,
# Qwen3_5MoeForConditionalGeneration: tensors under model.language_model., tie_word_embeddings
# outside text_config, a vision tower and an MTP block, the MoE's with its own packed experts)
q35=$tmp/qwen35-hf
hf_tiny qwen35 qwen35 "$q35"
for case in "qwen35 $q35 Qwen3_5 qwen3_5 mtp.fc.weight" \
    "qwen35moe $tmp/qwen35moe-hf Qwen3_5Moe qwen3_5_moe mtp.layers.0.mlp.experts.gate_up_proj"; do
    set -- $case
    cp -r "$2" "$tmp/$1-mm"
    python3 - "$tmp/$1-mm/config.json" "$3" "$4" <<'EOF'
import json, sys
text = json.load(open(sys.argv[1]))
tie = text.pop("tie_word_embeddings")
text["model_type"] = sys.argv[3] + "_text"
json.dump({"architectures": [sys.argv[2] + "ForConditionalGeneration"], "model_type": sys.argv[3],
           "text_config": text, "vision_config": {"depth": 1}, "tie_word_embeddings": tie},
          open(sys.argv[1], "w"))
EOF
    python3 tests/lib/hf_multimodal.py "$tmp/$1-mm" model. model.language_model. \
        model.visual.patch_embed.proj.weight "$5"
    same_logits "$1" "$2" "$tmp/$1-mm"
done

# Qwen3.5-MoE's experts one tensor each (mlp.experts.E.{gate,up,down}_proj.weight, which
# llama.cpp's converter reads too) run as the packed ones; one of them missing is one line naming
# the file and the tensor
cp -r "$tmp/qwen35moe-hf" "$tmp/q35moe-each"
python3 - "$tmp/q35moe-each/model.safetensors" <<'EOF'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header, body = json.loads(data[8:8 + n]), data[8 + n:]
out, blobs, size = {"__metadata__": header.pop("__metadata__", {})}, [], 0
def add(name, dtype, shape, blob):
    global size
    out[name] = {"dtype": dtype, "shape": shape, "data_offsets": [size, size + len(blob)]}
    blobs.append(blob)
    size += len(blob)
for name, t in header.items():
    blob = body[t["data_offsets"][0]:t["data_offsets"][1]]
    stem, _, kind = name.rpartition(".")
    if not stem.endswith(".mlp.experts"):
        add(name, t["dtype"], t["shape"], blob)
        continue
    E, rows, cols = t["shape"]
    per = len(blob) // E
    for e in range(E):
        m = blob[e * per:(e + 1) * per]
        if kind == "down_proj":
            add(f"{stem}.{e}.down_proj.weight", t["dtype"], [rows, cols], m)
        else:  # [gate; up]
            add(f"{stem}.{e}.gate_proj.weight", t["dtype"], [rows // 2, cols], m[:per // 2])
            add(f"{stem}.{e}.up_proj.weight", t["dtype"], [rows // 2, cols], m[per // 2:])
text = json.dumps(out).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
EOF
same_logits "qwen35moe one tensor per expert" "$tmp/qwen35moe-hf" "$tmp/q35moe-each"
cp -r "$tmp/q35moe-each" "$tmp/q35moe-noexpert"
python3 - "$tmp/q35moe-noexpert/model.safetensors" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
name = b'"model.layers.1.mlp.experts.7.up_proj.weight"'
assert data.count(name) == 1
open(sys.argv[1], "wb").write(data.replace(name, name[:-2] + b'X"'))  # same length: unknown
EOF
expect_error "qwen35moe missing expert" \
    "q35moe-noexpert/model.safetensors: missing tensor 'model.layers.1.mlp.experts.7.up_proj.weight'" \
    "$bin" run -m "$tmp/q35moe-noexpert" -p "Hi" -n 1

# Gemma 4: Gemma4ForConditionalGeneration's layout runs as the plain copy; context shift
g4=$tmp/gemma4-hf
hf_tiny gemma4 llama-spm "$g4"
cp -r "$g4" "$tmp/g4-mm"
python3 - "$tmp/g4-mm/config.json" <<'EOF'
import json, sys
text = json.load(open(sys.argv[1]))
json.dump({"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
           "text_config": dict(text, model_type="gemma4_text"),
           "vision_config": {"hidden_size": 8}}, open(sys.argv[1], "w"))
EOF
python3 tests/lib/hf_multimodal.py "$tmp/g4-mm" model. model.language_model. \
    model.vision_tower.patch_embedder.weight
same_logits gemma4 "$g4" "$tmp/g4-mm"
long=$(head -c 400 "$tmp/text.txt")
expect_error "gemma4 context shift" "context shift: the sliding-window layers' KV cache keeps only the window" \
    "$bin" run -m "$g4.gguf" -p "$long" -n 60 -c 128 --temp 0 --ignore-eos -t 2
"$bin" run -m "$g4.gguf" -p "$long" -n 60 -c 128 --swa-full --temp 0 --ignore-eos -t 2 --json \
    >"$tmp/shift.json" 2>"$tmp/err" || fail "gemma4: context shift with --swa-full: $(cat "$tmp/err")"


# gpt-oss: the HF copy's greedy tokens are the GGUF's; sinks and biases f32 after quantize; a top-k
# or expert count the tensors do not have, and a router of the wrong shape, one line each
go=$tmp/gpt-oss.gguf
"$bin" synth --arch gpt-oss --tiny -o "$tmp/go2.gguf" --hf "$tmp/go-hf" \
    --vocab "$fix/vocab/ggml-vocab-llama-spm.gguf" >/dev/null 2>"$tmp/err" ||
    fail "gpt-oss: synth --hf: $(cat "$tmp/err")"
for model in "$tmp/go2.gguf" "$tmp/go-hf"; do
    "$bin" run -m "$model" -p "Once upon a time there was a little girl who" -n 16 --temp 0 \
        --ignore-eos -t 2 --json >"$model.run.json" 2>"$tmp/err" ||
        fail "gpt-oss: run $model: $(cat "$tmp/err")"
done
[ "$(json_get "$tmp/go2.gguf.run.json" 'd["generated_ids"]')" = \
    "$(json_get "$tmp/go-hf.run.json" 'd["generated_ids"]')" ] ||
    fail "gpt-oss: the HF copy's greedy tokens differ from the GGUF's"
# the checkpoints' dtype: every tensor BF16 (its sinks and biases too), the values cut to it
cp -r "$tmp/go-hf" "$tmp/go-bf16"
python3 - "$tmp/go-hf/model.safetensors" "$tmp/go-bf16/model.safetensors" <<'EOF'
import array, json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<Q", b)[0]
head, out = json.loads(b[8:8 + n]), bytearray()
for name, t in head.items():
    if name == "__metadata__":
        continue
    f32 = array.array("I", b[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]])
    t.update(dtype="BF16", data_offsets=[len(out), len(out) + 2 * len(f32)])
    out += array.array("H", (x >> 16 for x in f32)).tobytes()
text = json.dumps(head).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + out)
EOF
"$bin" run -m "$tmp/go-bf16" -p "Once upon a time" -n 16 --temp 0 --ignore-eos -t 2 --json \
    >"$tmp/go-bf16.json" 2>"$tmp/err" && [ "$(json_get "$tmp/go-bf16.json" 'len(d["generated_ids"])')" = 16 ] ||
    fail "gpt-oss: the BF16 HF copy does not run: $(cat "$tmp/err")"
"$bin" inspect -m "$tmp/gpt-oss-q4_0.gguf" >"$tmp/inspect.txt" 2>"$tmp/err" &&
    grep -q "blk.1.attn_sinks.weight  *\[4\]  *f32" "$tmp/inspect.txt" &&
    grep -q "blk.1.ffn_gate_exps.bias  *\[8, 32\]  *f32" "$tmp/inspect.txt" ||
    fail "gpt-oss: quantize did not keep the sinks and expert biases f32: $(cat "$tmp/err")"
python3 - "$go" "$tmp/go-topk.gguf" "$tmp/go-experts.gguf" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
def patch(key, v, out):  # a u32 key's value
    k = key.encode()
    at = b.find(k) + len(k)
    assert b.count(k) == 1 and struct.unpack_from("<I", b, at)[0] == 4
    c = bytearray(b)
    struct.pack_into("<I", c, at + 4, v)
    open(out, "wb").write(c)
patch("gpt-oss.expert_used_count", 9, sys.argv[2])
patch("gpt-oss.expert_count", 4, sys.argv[3])
EOF
cp -r "$tmp/go-hf" "$tmp/go-router" && cp -r "$tmp/go-hf" "$tmp/go-topk" &&
    cp -r "$tmp/go-hf" "$tmp/go-mxfp4"
python3 - "$tmp/go-router/model.safetensors" "$tmp/go-topk/config.json" \
    "$tmp/go-mxfp4/config.json" <<'EOF'
import json, struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
n = struct.unpack_from("<Q", b)[0]
h = json.loads(b[8:8 + n])
h["model.layers.1.mlp.router.weight"]["shape"] = [64, 8]  # the same bytes, transposed
t = json.dumps(h, separators=(",", ":")).encode()
assert len(t) <= n
open(p, "wb").write(b[:8] + t + b" " * (n - len(t)) + b[8 + n:])
c = json.load(open(sys.argv[2]))
c["num_experts_per_tok"] = c["experts_per_token"] = c["num_local_experts"] + 1
json.dump(c, open(sys.argv[2], "w"))
c = json.load(open(sys.argv[3]))  # a quantization other than the original checkpoint's
c["quantization_config"] = {"quant_method": "bitsandbytes"}
json.dump(c, open(sys.argv[3], "w"))
EOF
# each bad copy: its name, the line's pattern, the model
while IFS='|' read -r name pattern model; do
    expect_error "gpt-oss $name" "$pattern" "$bin" run -m "$tmp/$model" -p "Hi" -n 1
done <<'EOF'
top-k|go-topk.gguf: 8 experts (1..512), top 9 of them|go-topk.gguf
expert count|go-experts.gguf: tensor 'blk.0.ffn_gate_inp.weight' has shape \[8, 64\], expected \[4, 64\]|go-experts.gguf
router shape|go-router: tensor 'blk.1.ffn_gate_inp.weight' has shape \[64, 8\], expected \[8, 64\]|go-router
HF top-k|go-topk/config.json: num_experts_per_tok 9 is more than num_local_experts 8|go-topk
quantization|go-mxfp4/config.json: quantization_config's quant_method 'bitsandbytes' is not supported|go-mxfp4
EOF

[ "$failed" -eq 0 ] && echo "cli_arch: all passed"
exit $((failed > 0))
