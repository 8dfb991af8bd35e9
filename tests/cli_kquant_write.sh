#!/usr/bin/env bash
# CLI test of the k-quant/i-quant writers: `quantize --type RECIPE` picks llama.cpp's types (wide256
# q4_k_m, the same bytes at any thread count; stories260K's 64- and 172-wide rows falling back to
# q5_0, q8_0 and f16), `--imatrix` with llama-imatrix's file and with one from `edgelm imatrix`, and
# the errors: an unknown recipe, an imatrix of another model, a damaged imatrix, too little text for
# `edgelm imatrix`, NaN weights (one line, naming the file and the tensor, no output left).
# Usage: bash tests/cli_kquant_write.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
wide=$fix/wide256/wide-f32.gguf
small=$fix/stories260K/stories260K-f32.gguf
wide_im=$fix/wide256/reference-quants/llamacpp-imatrix-calib.gguf
small_im=$fix/stories260K/reference-quants/llamacpp-imatrix-calib.gguf
. "$(dirname "$0")/lib/cli.sh"

types() { "$bin" inspect "$1" | awk '$1 ~ /weight$/ {print $1, $(NF-1)}'; }

"$bin" quantize -m "$wide" -o "$tmp/w.gguf" --type q4_k_m >/dev/null 2>&1 || fail "wide256 q4_k_m"
types "$tmp/w.gguf" >"$tmp/w.types"
grep -qx "blk.1.ffn_down.weight q6_k" "$tmp/w.types" && grep -qx "blk.0.ffn_down.weight q4_k" "$tmp/w.types" &&
    grep -qx "output.weight q6_k" "$tmp/w.types" && grep -qx "blk.1.attn_v.weight q6_k" "$tmp/w.types" &&
    grep -qx "output_norm.weight f32" "$tmp/w.types" && ok || fail "wide256 q4_k_m types: $(tr '\n' ' ' <"$tmp/w.types")"
"$bin" inspect "$tmp/w.gguf" | grep -q "file type *15" && ok || fail "q4_k_m file type"
# the rows are spread over the threads: the same bytes at any count
for t in 1 3; do
    "$bin" quantize -m "$wide" -o "$tmp/w$t.gguf" --type q4_k_m -t $t >/dev/null 2>&1 &&
        cmp -s "$tmp/w.gguf" "$tmp/w$t.gguf" && ok || fail "wide256 q4_k_m at -t $t differs"
done
# non-finite weights in rows 70, 300 and 600 of a 768-row matrix, converted on 3 threads: the
# error names the first of them, as a serial run does, and leaves no output
python3 - "$wide" "$tmp/nan.gguf" "$(dirname "$0")/lib" <<'EOF' || fail "writing the NaN file"
import struct, sys
sys.path.insert(0, sys.argv[3])
import gguf_tensors
data, table = gguf_tensors.layout(sys.argv[1])
data = bytearray(data)
off = next(o for name, ne, t, o in table if name == "blk.0.ffn_gate.weight")
for row, value in ((600, float("nan")), (300, float("inf")), (70, float("nan"))):
    struct.pack_into("<f", data, off + 4 * (256 * row + 5), value)
open(sys.argv[2], "wb").write(data)
EOF
# (the progress lines come first on stderr, so the error is its last line)
"$bin" quantize -m "$tmp/nan.gguf" -o "$tmp/nan-q.gguf" --type q4_k -t 3 >/dev/null 2>"$tmp/nan.err"
rc=$?
[ "$rc" -eq 1 ] && [ ! -e "$tmp/nan-q.gguf" ] && tail -n 1 "$tmp/nan.err" |
    grep -q "^edgelm: .*tensor 'blk.0.ffn_gate.weight' holds NaN at row 70, column 5$" && ok ||
    fail "NaN weights: exit status $rc, $(tail -n 1 "$tmp/nan.err")"

# stories260K: nothing is a multiple of 256, so llama.cpp's fallbacks decide every matrix
"$bin" quantize -m "$small" -o "$tmp/s.gguf" --type q4_k_m --imatrix "$small_im" >"$tmp/s.out" 2>"$tmp/s.err" ||
    fail "stories260K q4_k_m --imatrix: $(cat "$tmp/s.err")"
types "$tmp/s.gguf" >"$tmp/s.types"
grep -qx "blk.0.attn_q.weight q5_0" "$tmp/s.types" && grep -qx "output.weight q8_0" "$tmp/s.types" &&
    grep -qx "blk.2.attn_v.weight q8_0" "$tmp/s.types" && grep -qx "blk.3.ffn_down.weight f16" "$tmp/s.types" &&
    grep -qx "token_embd.weight q5_0" "$tmp/s.types" && ok || fail "stories260K q4_k_m types: $(tr '\n' ' ' <"$tmp/s.types")"
# llama.cpp's file (golden q4_k_m-imat: 7.92 bits/weight) holds the same tensor bytes
grep -q "7.92 bits/weight" "$tmp/s.out" && ok || fail "stories260K q4_k_m size: $(cat "$tmp/s.out")"

# edgelm imatrix, then quantize with it
head -c 60000 "$fix/stories260K/text/calib.txt" >"$tmp/calib.txt"
"$bin" imatrix -m "$small" -f "$tmp/calib.txt" -c 128 -o "$tmp/im.gguf" -t 2 >"$tmp/im.out" 2>"$tmp/im.err" &&
    grep -q "35 weights" "$tmp/im.out" && ok || fail "edgelm imatrix: $(cat "$tmp/im.out" "$tmp/im.err")"
"$bin" quantize -m "$small" -o "$tmp/s2.gguf" --type q4_0 --pure --imatrix "$tmp/im.gguf" >/dev/null 2>&1 &&
    ok || fail "quantize --imatrix with edgelm's imatrix"

# errors
expect_error "unknown recipe" "unknown --type 'q4_k_x'" "$bin" quantize -m "$small" -o "$tmp/y.gguf" --type q4_k_x
expect_error "imatrix of another model" "$small_im: tensor 'blk\..*' has 64 importance values" \
    "$bin" quantize -m "$wide" -o "$tmp/y.gguf" --type q4_k_m --imatrix "$small_im"
head -c 3000 "$wide_im" >"$tmp/cut.gguf"
expect_error "truncated imatrix" "cut.gguf: .*runs past" "$bin" quantize -m "$wide" -o "$tmp/y.gguf" \
    --type q4_k_m --imatrix "$tmp/cut.gguf"
head -c 500 "$fix/stories260K/text/calib.txt" >"$tmp/short.txt"
expect_error "imatrix: too little text" "need at least 512" "$bin" imatrix -m "$small" -f "$tmp/short.txt" \
    -c 256 -o "$tmp/y.gguf"
[ -e "$tmp/y.gguf" ] && fail "a failed command left its output"
"$bin" imatrix --help | grep -q -- "--ctx-size" && ok || fail "imatrix --help"
# the output's folder is checked before the pass over the text, not after it
expect_error "imatrix: missing output folder" "$tmp/none/im.gguf: folder '$tmp/none' does not exist" \
    "$bin" imatrix -m "$small" -f "$tmp/calib.txt" -c 128 -o "$tmp/none/im.gguf"

echo "cli_kquant_write: $passed passed, $failed failed"
exit $((failed > 0))
