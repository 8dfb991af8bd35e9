#!/usr/bin/env bash
# gpt-oss's original Hugging Face checkpoint layout (openai/gpt-oss-20b): experts in MXFP4 as U8
# mlp.experts.{gate_up,down}_proj_{blocks,scales} with quantization_config mxfp4. A tiny gpt-oss
# (synth --width 256: rows of whole 32-weight blocks) gets its experts in MXFP4 and everything else
# f32 (quantize --tensor-type); tests/lib/hf_mxfp4.py writes those expert bytes into the HF copy
# in the checkpoint's order. Loaded by edgelm, the HF folder's expert stacks are byte for byte the
# GGUF's (through quantize, which keeps an MXFP4 tensor's bytes) and its first 16 greedy tokens
# the GGUF's. Bad input, each one line naming the file and the tensor: a scales tensor of the
# wrong shape, a blocks tensor of the wrong dtype, a scale byte 0xff, a blocks tensor without its
# scales, a U8 tensor outside the experts. A GGUF's 0xff scale is refused read into memory and not scanned for with --mmap.
# Usage: bash tests/cli_hf_mxfp4.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
lib=$(dirname "$0")/lib
vocab=$fix/vocab/ggml-vocab-llama-spm.gguf
[ -f "$vocab" ] || { echo "cli_hf_mxfp4: skipped ($vocab missing)"; exit 77; }

"$bin" synth --arch gpt-oss --tiny --width 256 -o "$tmp/go.gguf" --hf "$tmp/hf" --vocab "$vocab" \
    >/dev/null 2>"$tmp/err" || fail "synth --hf: $(cat "$tmp/err")"
mx=(--type f32 --pure --tensor-type 'blk.*.ffn_*_exps.weight=mxfp4')
"$bin" quantize -m "$tmp/go.gguf" -o "$tmp/ref.gguf" "${mx[@]}" >/dev/null 2>"$tmp/err" ||
    fail "quantize the experts to mxfp4: $(cat "$tmp/err")"
for variant in "" scales-shape blocks-dtype scale-ff router-u8; do
    dir=$tmp/hf-${variant:-mxfp4}
    cp -r "$tmp/hf" "$dir"
    python3 "$lib/hf_mxfp4.py" "$tmp/ref.gguf" "$dir" $variant 2>"$tmp/err" ||
        fail "hf_mxfp4.py $variant: $(cat "$tmp/err")"
done
grep -q '"quant_method": "mxfp4"' "$tmp/hf-mxfp4/config.json" &&
    ! grep -q '"model.layers.0.mlp.experts.gate_up_proj"' "$tmp/hf-mxfp4/model.safetensors" &&
    grep -q '"model.layers.0.mlp.experts.gate_up_proj_blocks": *{"dtype": "U8"' \
        "$tmp/hf-mxfp4/model.safetensors" && ok || fail "the HF copy is not in the MXFP4 layout"

# the expert stacks as loaded from the HF folder, written back through quantize
"$bin" quantize -m "$tmp/hf-mxfp4" -o "$tmp/back.gguf" "${mx[@]}" >/dev/null 2>"$tmp/err" ||
    fail "quantize of the MXFP4 HF folder: $(cat "$tmp/err")"
python3 - "$lib" "$tmp/ref.gguf" "$tmp/back.gguf" <<'PY' && ok || fail "expert bytes differ"
import sys
sys.path.insert(0, sys.argv[1])
from gguf_tensors import tensors
ref, back = tensors(sys.argv[2]), tensors(sys.argv[3])
exps = [k for k in ref if k.endswith("_exps.weight")]
assert len(exps) == 6 and all(ref[k][0] == 39 for k in exps), exps
bad = [k for k in exps if back.get(k) != ref[k]]
if bad:
    sys.exit("differ: " + ", ".join(bad))
PY

for model in "$tmp/ref.gguf" "$tmp/hf-mxfp4"; do
    "$bin" run -m "$model" -p "Once upon a time there was a little girl who" -n 16 --temp 0 \
        --ignore-eos -t 2 --json >"$model.run.json" 2>"$tmp/err" || fail "run $model: $(cat "$tmp/err")"
done
ids() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['generated_ids'])" "$1"; }
a=$(ids "$tmp/ref.gguf.run.json") && b=$(ids "$tmp/hf-mxfp4.run.json") &&
    [ "$(echo "$a" | tr -cd , | wc -c)" -eq 15 ] && [ "$a" = "$b" ] && ok ||
    fail "the MXFP4 HF folder's greedy tokens differ from the GGUF's: '$b' vs '$a'"

# a blocks tensor without its scales (dropped from the header; its bytes stay, unreferenced)
cp -r "$tmp/hf-mxfp4" "$tmp/hf-lone"
python3 - "$tmp/hf-lone/model.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<Q", b)[0]
h = json.loads(b[8:8 + n])
del h["model.layers.1.mlp.experts.down_proj_scales"]
t = json.dumps(h).encode()
open(sys.argv[1], "wb").write(b[:8] + t + b" " * (n - len(t)) + b[8 + n:])
PY
while IFS='|' read -r name pattern model; do
    expect_error "$name" "$pattern" "$bin" run -m "$tmp/$model" -p "Hi" -n 1
done <<'LINES'
scales shape|hf-scales-shape/model.safetensors: tensor 'model.layers.0.mlp.experts.gate_up_proj_scales' has 3 dimensions \[8, 255, ...\], expected \[8, 256, 8\]|hf-scales-shape
blocks dtype|hf-blocks-dtype/model.safetensors: tensor 'model.layers.0.mlp.experts.down_proj_blocks' is f16, MXFP4 blocks are U8|hf-blocks-dtype
scale 0xff|hf-scale-ff/model.safetensors: tensor 'model.layers.0.mlp.experts.gate_up_proj_scales' scale 0 is 0xff|hf-scale-ff
missing scales|hf-lone/model.safetensors: missing tensor 'model.layers.1.mlp.experts.down_proj_scales'|hf-lone
U8 elsewhere|hf-router-u8/model.safetensors: tensor 'model.layers.0.mlp.router.weight' is U8 (only gpt-oss's MXFP4 experts|hf-router-u8
LINES

# a GGUF's 0xff scale: refused when the file is read into memory; with --mmap not scanned for
# (the scan would read every page of a file maybe larger than RAM), so the file runs
python3 - "$lib" "$tmp/ref.gguf" "$tmp/ref-ff.gguf" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from gguf_tensors import layout
data, table = layout(sys.argv[2])
off = next(o for name, ne, t, o in table if name == "blk.1.ffn_down_exps.weight")
b = bytearray(data)
b[off + 3 * 17] = 0xFF  # block 3's scale byte
open(sys.argv[3], "wb").write(b)
PY
expect_error "gguf scale 0xff" "ref-ff.gguf: tensor 'blk.1.ffn_down_exps.weight' block 3 has a bad mxfp4 scale" \
    "$bin" run -m "$tmp/ref-ff.gguf" -p "Hi" -n 1
"$bin" run -m "$tmp/ref-ff.gguf" --mmap -p "Hi" -n 1 >/dev/null 2>"$tmp/err" && ok ||
    fail "run --mmap of a file with a 0xff scale: $(cat "$tmp/err")"

[ "$failed" -eq 0 ] && echo "cli_hf_mxfp4: all passed"
exit $((failed > 0))
