#!/usr/bin/env bash
# `edgelm export onnx` run in the real runtime: stories260K exported at F32, q8_0, RTN q4_0 and
# GPTQ q4_0 is run by ONNX Runtime (onnxruntime-node@1.30.0 on CPU, installed once by
# scripts/onnxruntime.sh; tests/interop/onnx_decode.mjs) for every prompt of golden/greedy.json:
# prefill, then decode steps through past_key_values, compared over the prefill and the first 8
# decode steps with edgelm's logits (`run --json --logits 9`, scalar kernels: the oracle) and over
# 32 greedy tokens. The default export (MatMulNBits accuracy_level 0) and the QDQ graphs compute
# the weights' exact values in float, so the reference of a quantized export is edgelm on the same
# model dequantized to F32 (docs/export.md says why): within 1e-3 (issue 22 asks 2e-2), tokens
# equal; F32 also equals golden/greedy.json. --accuracy-level 4 (int8 activation blocks) on q8_0
# against edgelm's own q8_0 kernels: within 2e-2. --activations a16 (QDQ pairs, ranges from a
# calibration capture): the KLD from F32 on the first 16 chunks of text/valid.txt (n_ctx 256), from
# ONNX Runtime's logits (tests/interop/onnx_kld.mjs), is at most 1.5x the weight-only export's; a8
# is reported. Debian's python3-onnx checker accepts each graph its opset 17 allows. Bad input gets
# one-line errors and leaves no folder.
# Skipped with ctest's skip code 77 only when node is missing or npm cannot reach the registry.
# Usage: bash tests/cli_export_onnx.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
s=$fix/stories260K
f32=$s/stories260K-f32.gguf

# ------------------------------------------------------------------------------- bad input
expect_error "not empty" "$tmp/full: output folder is not empty" \
    bash -c 'mkdir -p "$1/full" && touch "$1/full/x" && exec "$2" export onnx -m "$3" -o "$1/full"' _ "$tmp" "$bin" "$f32"
[ -f "$tmp/full/x" ] && [ "$(ls "$tmp/full")" = x ] || fail "not empty: the folder was changed"
"$bin" export onnx -m "$f32" -o "$tmp/full" --force 2>/dev/null && [ -f "$tmp/full/model.onnx" ] &&
    [ ! -e "$tmp/full/x" ] && ok || fail "--force did not replace the folder"
"$bin" synth --arch gemma --tiny -o "$tmp/gemma.gguf" --vocab "$fix/vocab/ggml-vocab-llama-spm.gguf" \
    -s 1 >/dev/null 2>&1 || fail "synth gemma"
expect_error "gemma" "gemma.gguf: architecture 'gemma' is not supported" \
    "$bin" export onnx -m "$tmp/gemma.gguf" -o "$tmp/gemma"
# a write failure (file size limit) leaves neither the folder nor its temporary
expect_error "write failure" "model.onnx.data: write failed" \
    bash -c 'ulimit -f 64; trap "" XFSZ; exec "$1" export onnx -m "$2" -o "$3/small"' _ "$bin" "$f32" "$tmp"
[ -z "$(ls -d "$tmp"/small* 2>/dev/null)" ] || fail "write failure left $(ls -d "$tmp"/small*)"
# types without a MatMulNBits form: one warning per tensor; stories260K --pure q5_0 has 30 block
# matrices in its layers (ffn_down stays f16) and the tied output (the embedding table is exact F32)
"$bin" quantize -m "$f32" --pure --type q5_0 -o "$tmp/q5_0.gguf" >/dev/null 2>&1 || fail "quantize q5_0"
"$bin" export onnx -m "$tmp/q5_0.gguf" -o "$tmp/q5_0" 2>"$tmp/err" || fail "q5_0: export: $(cat "$tmp/err")"
n=$(grep -c '^edgelm: warning: .*\.weight: q5_0 has no MatMulNBits form; re-quantized to q8_0$' "$tmp/err")
[ "$n" -eq 31 ] && [ "$(sort -u "$tmp/err" | wc -l)" -eq "$(grep -c . "$tmp/err")" ] && ok ||
    fail "q5_0: $n re-quantization warnings, want 31 distinct: $(head -3 "$tmp/err")"
expect_error "static > context" "stories260K-f32.gguf: static context 4096 is larger than the model's context of 512 tokens" \
    "$bin" export onnx -m "$f32" -o "$tmp/qdq" --format qdq --static 64,4096
expect_error "static without qdq" "--static goes with --format qdq" "$bin" export onnx -m "$f32" -o "$tmp/qdq" --static 8,64
expect_error "qdq without static" "--format qdq needs --static" "$bin" export onnx -m "$f32" -o "$tmp/qdq" --format qdq
expect_error "static order" "0 < PROMPT_LEN < CTX" "$bin" export onnx -m "$f32" -o "$tmp/qdq" --format qdq --static 64,64
[ ! -e "$tmp/qdq" ] || fail "a refused export left $tmp/qdq"
expect_error "unknown format" "unknown format 'tflite'" "$bin" export tflite -m "$f32" -o "$tmp/t"
expect_error "activations without calib" "--activations needs --calib FILE" \
    "$bin" export onnx -m "$f32" -o "$tmp/qdq" --format qdq --static 8,64 --activations a16
expect_error "activations without qdq" "--activations goes with --format qdq" \
    "$bin" export onnx -m "$f32" -o "$tmp/qdq" --activations a8 --calib "$s/text/calib.jsonl"
expect_error "activations value" "--activations: expected a16 or a8, got 'a4'" \
    "$bin" export onnx -m "$f32" -o "$tmp/qdq" --format qdq --static 8,64 --activations a4 --calib "$s/text/calib.jsonl"
expect_error "accuracy level" "--accuracy-level: expected 0 or 4, got 2" "$bin" export onnx -m "$f32" -o "$tmp/qdq" --accuracy-level 2
expect_error "calib missing" "$tmp/none.jsonl" \
    "$bin" export onnx -m "$f32" -o "$tmp/qdq" --format qdq --static 8,64 --activations a16 --calib "$tmp/none.jsonl"

# ------------------------------------------------------------------------------- runtime
command -v node >/dev/null || { echo "cli_export_onnx: SKIPPED: node is not installed"; exit 77; }
npm_dir=$(bash scripts/onnxruntime.sh 2>"$tmp/npm.err")
rc=$?
[ "$rc" -eq 2 ] && { echo "cli_export_onnx: SKIPPED: $(cat "$tmp/npm.err")"; exit 77; }
[ "$rc" -eq 0 ] || { echo "FAIL: onnxruntime-node install: $(cat "$tmp/npm.err")" >&2; exit 1; }

head -n 8 "$s/text/calib.jsonl" >"$tmp/calib.jsonl"
q() { "$bin" quantize -m "$f32" --pure -t 2 "$@" >/dev/null 2>"$tmp/err" || fail "quantize $*: $(cat "$tmp/err")"; }
q --type q8_0 -o "$tmp/q8_0.gguf"
q --type q4_0 -o "$tmp/q4_0.gguf"
q --type q4_0 --method gptq --calib "$tmp/calib.jsonl" -o "$tmp/gptq.gguf"
python3 - "$s/golden/greedy.json" "$tmp" <<'PY'
import json, sys
for i, c in enumerate(json.load(open(sys.argv[1]))["cases"]):
    open(f"{sys.argv[2]}/prompt{i}.txt", "w").write(c["prompt"])
PY
checker=0
/usr/bin/python3 -c 'import onnx' 2>/dev/null && checker=1 || echo "cli_export_onnx: note: python3-onnx missing, graph checker not run"
# cases NAME MODEL: edgelm's greedy 32 tokens and first 9 logit rows for every prompt (scalar kernels)
cases() {
    : >"$tmp/$1.cases"
    for p in "$tmp"/prompt*.txt; do
        EDGELM_ISA=scalar "$bin" run -m "$2" -f "$p" -n 32 --temp 0 --ignore-eos -t 2 --json --logits 9 \
            2>"$tmp/err" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))' \
            >>"$tmp/$1.cases" || fail "$1: run $p: $(cat "$tmp/err")"
    done
}
# export_run NAME MODEL REF [OPTIONS]: the folder, its files, the checker, and ONNX Runtime's decode
# of the prompts of $tmp/REF.cases into $tmp/NAME.ort
export_run() {
    local name=$1 model=$2 ref=$3 dir=$tmp/onnx-$1 shapes="" graphs=model.onnx a prev=""
    shift 3
    for a in "$@"; do [ "${prev:-}" = --static ] && shapes=$a; prev=$a; done
    [ -n "$shapes" ] && graphs="prompt_processor.onnx token_generator.onnx"
    "$bin" export onnx -m "$model" -o "$dir" "$@" 2>"$tmp/err" || { fail "$name: export: $(cat "$tmp/err")"; return 1; }
    for f in $graphs model.onnx.data tokenizer.json tokenizer_config.json ${shapes:-genai_config.json}; do
        [ -n "$shapes" ] && [ "$f" = "$shapes" ] && continue
        [ -s "$dir/$f" ] || fail "$name: $f missing"
    done
    # Debian's onnx 1.12 knows opsets up to 17: the QDQ graphs (opset 21) are beyond it
    [ "$checker" = 1 ] && [ -z "$shapes" ] && { /usr/bin/python3 -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]))' \
        "$dir/model.onnx" 2>"$tmp/err" && ok || fail "$name: onnx checker: $(tail -1 "$tmp/err")"; }
    [ -z "$ref" ] && return 0
    node tests/interop/onnx_decode.mjs "$npm_dir" "$dir" "$tmp/$ref.cases" $shapes >"$tmp/$name.ort" 2>"$tmp/err" ||
        { fail "$name: onnxruntime: $(tail -3 "$tmp/err")"; return 1; }
}
# compare NAME REF TOL: ONNX Runtime's logits within TOL of REF's and its greedy tokens equal to
# REF's on all 8 prompts; f32 also equals the golden tokens
compare() {
    python3 - "$1" "$tmp/$2.cases" "$tmp/$1.ort" "$s/golden/greedy.json" "$3" <<'PY' && ok || fail "$1: see above"
import json, sys
name, tol = sys.argv[1], float(sys.argv[5])
ref = [json.loads(l) for l in open(sys.argv[2])]
ort = [json.loads(l) for l in open(sys.argv[3])]
golden = json.load(open(sys.argv[4]))["cases"]
assert len(ref) == len(ort) == len(golden) == 8
close = greedy = 0
for e, o, g in zip(ref, ort, golden):
    same = o["generated_ids"] == e["generated_ids"] and len(e["generated_ids"]) == 32
    if name.startswith("f32"): same = same and e["prompt_ids"] == g["prompt_ids"] and o["generated_ids"] == g["generated_ids"]
    greedy += same
    close += o["max_abs_dlogit"] <= tol and o["steps"] == 9
    if not same or o["max_abs_dlogit"] > tol:
        print(f"  {name} {g['prompt']!r}: max |dlogit| {o['max_abs_dlogit']:.3g}, greedy equal {same}", file=sys.stderr)
print(f"{name}: max |logit - edgelm| {max(o['max_abs_dlogit'] for o in ort):.3g} over 8 prompts x 9 steps; "
      f"within {tol:g}: {close}/8; greedy 32 equal: {greedy}/8")
sys.exit(0 if close == 8 and greedy == 8 else 1)
PY
}

cases f32 "$f32"
export_run f32 "$f32" f32 && compare f32 f32 1e-3
# the QNN form: two static graphs (prompts padded to 24 tokens, 96 cache slots) over one weight file
export_run f32-qdq "$f32" f32 --format qdq --static 24,96 && compare f32-qdq f32 1e-3
for name in q8_0 q4_0 gptq; do
    model=$tmp/$name.gguf
    # MatMulNBits at accuracy_level 0 and DequantizeLinear + MatMul compute the weights' exact
    # values in float: the reference is edgelm on the same model dequantized to F32
    "$bin" quantize -m "$model" --type f32 --pure -o "$tmp/$name-deq.gguf" >/dev/null 2>&1 || fail "$name: dequantize"
    cases "$name-deq" "$tmp/$name-deq.gguf"
    export_run "$name" "$model" "$name-deq" && compare "$name" "$name-deq" 1e-3
    export_run "$name-qdq" "$model" "$name-deq" --format qdq --static 24,96 && compare "$name-qdq" "$name-deq" 1e-3
done
# int8 activation blocks (accuracy_level 4): ONNX Runtime's 8-bit kernel forms the same integer
# block products as edgelm's q8_0 kernels
cases q8_0 "$tmp/q8_0.gguf"
export_run q8_0-int8 "$tmp/q8_0.gguf" q8_0 --accuracy-level 4 && compare q8_0-int8 q8_0 2e-2

# activation QDQ (uint16 / uint8 per tensor, ranges from the calibration capture) on RTN q4_0: KLD
# from F32 on the first 16 chunks of valid.txt (n_ctx 256), each chunk one run of the static
# 256-token prompt graph, against the weight-only export's
"$bin" tokenize -m "$f32" -f "$s/text/valid.txt" --ids >"$tmp/valid.json" || fail "tokenize valid.txt"
for v in f32 w a16 a8; do
    m=$tmp/q4_0.gguf act=""
    [ "$v" = f32 ] && m=$f32
    [ "$v" = a16 ] || [ "$v" = a8 ] && act="--activations $v --calib $tmp/calib.jsonl"
    export_run "kld-$v" "$m" "" --format qdq --static 256,257 -t 2 $act || continue
done
[ "$checker" = 1 ] && for v in a16 a8; do
    # a pair on each linear input: 4 per layer and the output's, codes of the asked width
    /usr/bin/python3 - "$tmp/onnx-kld-$v/prompt_processor.onnx" "$v" <<'PY' && ok || fail "kld-$v: QuantizeLinear nodes"
import onnx, sys
g = onnx.load(sys.argv[1], load_external_data=False).graph
init = {t.name: t for t in g.initializer}
q = [n for n in g.node if n.op_type == "QuantizeLinear"]
want = onnx.TensorProto.UINT16 if sys.argv[2] == "a16" else onnx.TensorProto.UINT8
sys.exit(0 if len(q) == 5 * 4 + 1 and all(init[n.input[2]].data_type == want for n in q) else 1)
PY
done
node tests/interop/onnx_kld.mjs "$npm_dir" "$tmp/valid.json" 16 "$tmp/onnx-kld-f32" "$tmp/onnx-kld-w" \
    "$tmp/onnx-kld-a16" "$tmp/onnx-kld-a8" >"$tmp/kld.json" 2>"$tmp/err" || fail "kld: onnxruntime: $(tail -3 "$tmp/err")"
python3 - "$tmp/kld.json" "$tmp/onnx-kld-" <<'PY' && ok || fail "kld: a16 above 1.5x weight-only, or a8 no worse than weight-only"
import json, sys
r = json.load(open(sys.argv[1]))
k = {d[len(sys.argv[2]):]: v for d, v in r["kld"].items()}
print(f"KLD from F32 over {r['chunks']} chunks x 256 ({r['positions']} positions; F32 PPL {r['ppl_base']:.4f}): "
      f"q4_0 weight-only {k['w']:.5f}, a16 {k['a16']:.5f} ({k['a16'] / k['w']:.3f}x), a8 {k['a8']:.5f} ({k['a8'] / k['w']:.3f}x)")
sys.exit(0 if r["chunks"] == 16 and 0 < k["a16"] <= 1.5 * k["w"] and k["a8"] > k["w"] else 1)
PY

# the other families' forms: NEOX RoPE and q/k/v biases (qwen2), fused qkv and gate/up (phi3),
# grouped-query attention (both), on random-weight tiny models
for arch in qwen2 phi3; do
    vocab=llama-spm; [ "$arch" = phi3 ] && vocab=phi-3
    "$bin" synth --arch "$arch" --tiny -o "$tmp/$arch.gguf" --vocab "$fix/vocab/ggml-vocab-$vocab.gguf" -s 3 \
        >/dev/null 2>&1 || { fail "synth $arch"; continue; }
    EDGELM_ISA=scalar "$bin" run -m "$tmp/$arch.gguf" -p "Hello world" -n 16 --temp 0 --ignore-eos -t 2 --json \
        --logits 9 2>"$tmp/err" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))' \
        >"$tmp/$arch.cases" || fail "$arch: run: $(cat "$tmp/err")"
    export_run "$arch" "$tmp/$arch.gguf" "$arch" || continue
    python3 - "$tmp/$arch.cases" "$tmp/$arch.ort" <<'PY' && ok || fail "$arch: ONNX Runtime differs from edgelm"
import json, sys
e, o = json.loads(open(sys.argv[1]).read()), json.loads(open(sys.argv[2]).read())
print(f"{sys.argv[1].split('/')[-1][:-6]}: max |logit - edgelm| {o['max_abs_dlogit']:.3g}; greedy equal {o['generated_ids'] == e['generated_ids']}")
sys.exit(0 if o["max_abs_dlogit"] <= 1e-3 and o["generated_ids"] == e["generated_ids"] else 1)
PY
done

[ "$failed" -eq 0 ] && echo "cli_export_onnx: all passed ($passed checks)"
exit $((failed > 0))
