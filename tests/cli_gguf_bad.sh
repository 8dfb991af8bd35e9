#!/usr/bin/env bash
# CLI checks of `edgelm inspect` and `edgelm quantize`: bad input fails with exit status 1 and one
# line on stderr naming the file; a failed quantize leaves no output; --json output is JSON; a good
# quantize writes a file inspect reads back as the requested type.
# Usage: bash tests/cli_gguf_bad.sh EDGELM_BINARY FIXTURES_DIR
set -u
BIN=$1
FIX=$2
MODEL=$FIX/stories260K/stories260K-f32.gguf
. "$(dirname "$0")/lib/cli.sh"

# inspect: missing file, wrong magic
expect_error "inspect missing" "$tmp/missing.gguf" "$BIN" inspect "$tmp/missing.gguf"
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[0:4] = b"GGUX"; open(sys.argv[2], "wb").write(b)' \
    "$MODEL" "$tmp/magic.gguf"
expect_error "inspect wrong magic" "$tmp/magic.gguf" "$BIN" inspect "$tmp/magic.gguf"
# a truncated GGUF names the file and the problem
head -c 5000 "$MODEL" >"$tmp/cut.gguf"
expect_error "inspect truncated" "$tmp/cut.gguf: truncated" "$BIN" inspect "$tmp/cut.gguf"

# inspect --json is one JSON object with the tensor table
"$BIN" inspect "$MODEL" --json >"$tmp/json" 2>"$tmp/err" || fail "inspect --json failed: $(cat "$tmp/err")"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hparams"]["dim"] == 64 and d["vocab"]["n_tokens"] == 512, d["hparams"]
assert len(d["tensors"]) == 48 and d["tensors"][0]["shape"] == [512, 64], d["tensors"][0]
' "$tmp/json" || fail "inspect --json output is not the expected JSON"
"$BIN" inspect "$MODEL" | grep -q "token_embd.weight  *\[512, 64\]  *f32" || fail "inspect text table"
"$BIN" inspect --help | grep -q "usage: edgelm inspect" || fail "inspect --help"

# quantize: bad --type, missing folder, output path that is a folder
expect_error "quantize bad type" "unknown --type 'q3_k_x'" \
    "$BIN" quantize -m "$MODEL" -o "$tmp/x.gguf" --type q3_k_x
[ -e "$tmp/x.gguf" ] && fail "bad --type left $tmp/x.gguf"
expect_error "quantize missing -o" "required" "$BIN" quantize -m "$MODEL" --type q4_0
expect_error "quantize into missing folder" "$tmp/nodir/out.gguf" \
    "$BIN" quantize -m "$MODEL" -o "$tmp/nodir/out.gguf" --type q4_0
mkdir "$tmp/adir"
"$BIN" quantize -m "$MODEL" -o "$tmp/adir" --type q8_0 >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] || fail "quantize onto a folder did not fail"
tail -n 1 "$tmp/err" | grep -qF "$tmp/adir" || fail "quantize onto a folder: last stderr line lacks the path"
leftover=$(find "$tmp" -name '*.tmp.*' | head -n 1)
[ -z "$leftover" ] || fail "partial output left behind: $leftover"

# quantize: a good run writes the file, warns about the f16 fallbacks and prints a summary
"$BIN" quantize -m "$MODEL" -o "$tmp/q4.gguf" --type q4_0 >"$tmp/out" 2>"$tmp/err" ||
    fail "quantize q4_0 failed: $(cat "$tmp/err")"
[ "$(grep -c "warning: tensor 'blk\.[0-9]\.ffn_down.weight'" "$tmp/err")" -eq 5 ] ||
    fail "expected 5 ffn_down fallback warnings: $(cat "$tmp/err")"
grep -q "bits/weight" "$tmp/out" || fail "no summary line: $(cat "$tmp/out")"
"$BIN" inspect "$tmp/q4.gguf" | grep -q "blk.0.attn_q.weight  *\[64, 64\]  *q4_0" ||
    fail "inspect of the q4_0 output"
"$BIN" quantize --help | grep -q "usage: edgelm quantize" || fail "quantize --help"

# LongRoPE's factor tensors (a tiny Phi-3 with them): one without the other, or of a length other
# than the rotated pairs (6), is refused naming the file and the tensor
"$BIN" synth --arch phi3 --tiny --longrope -o "$tmp/longrope.gguf" \
    --vocab "$FIX/vocab/ggml-vocab-phi-3.gguf" >/dev/null 2>"$tmp/err" ||
    fail "synth --longrope: $(cat "$tmp/err")"
python3 - "$tmp/longrope.gguf" "$tmp/lr-short-only.gguf" "$tmp/lr-length.gguf" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
name = b"rope_factors_long.weight"
at = data.index(name)  # the tensor table's entry: name, n_dims (u32), ne[0] (u64)
open(sys.argv[2], "wb").write(data[:at] + b"rope_factors_lonX.weight" + data[at + len(name):])
ne0 = at + len(name) + 4
assert struct.unpack_from("<Q", data, ne0)[0] == 6
open(sys.argv[3], "wb").write(data[:ne0] + struct.pack("<Q", 5) + data[ne0 + 8:])
EOF
expect_error "longrope short only" \
    "lr-short-only.gguf: LongRoPE tensor 'rope_factors_short.weight' without 'rope_factors_long.weight'" \
    "$BIN" run -m "$tmp/lr-short-only.gguf" -p "Hi" -n 1
expect_error "longrope length" \
    "lr-length.gguf: tensor 'rope_factors_long.weight' has shape \[1, 5\], expected \[1, 6\]" \
    "$BIN" run -m "$tmp/lr-length.gguf" -p "Hi" -n 1

# MXFP4: --type mxfp4 --pure writes every matrix in it, and the file runs; a block whose E8M0
# scale byte is 0xff (not a number) is refused naming the file, the tensor and the block;
# mxfp4_moe on a model without experts is one line and writes nothing
"$BIN" quantize -m "$MODEL" -o "$tmp/mx.gguf" --type mxfp4 --pure >/dev/null 2>"$tmp/err" ||
    fail "quantize --type mxfp4 --pure: $(cat "$tmp/err")"
"$BIN" inspect "$tmp/mx.gguf" | grep -q "blk.0.attn_q.weight  *\[64, 64\]  *mxfp4" ||
    fail "inspect of the mxfp4 output"
"$BIN" run -m "$tmp/mx.gguf" -p "Once upon a time" -n 8 >/dev/null 2>"$tmp/err" ||
    fail "run of the mxfp4 file: $(cat "$tmp/err")"
python3 - "$(dirname "$0")/lib" "$tmp/mx.gguf" "$tmp/mx-bad.gguf" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from gguf_tensors import layout
data, table = layout(sys.argv[2])
off = next(o for name, ne, t, o in table if name == "blk.1.ffn_up.weight" and t == 39)
b = bytearray(data)
b[off + 5 * 17] = 0xFF  # block 5's scale byte
open(sys.argv[3], "wb").write(b)
EOF
expect_error "mxfp4 bad scale" \
    "mx-bad.gguf: tensor 'blk.1.ffn_up.weight' block 5 has a bad mxfp4 scale" \
    "$BIN" run -m "$tmp/mx-bad.gguf" -p "Hi" -n 1
# quantize maps its input (whose scales the loader does not scan): the conversion names the block
# in its one error line, after the progress and warnings of the tensors before it; nothing written
"$BIN" quantize -m "$tmp/mx-bad.gguf" -o "$tmp/requant.gguf" --type q8_0 >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && [ "$(grep '^edgelm: ' "$tmp/err" | grep -vc '^edgelm: warning: ')" -eq 1 ] &&
    tail -n 1 "$tmp/err" | grep -q "^edgelm: .*mx-bad.gguf: tensor 'blk.1.ffn_up.weight' block 5 has a bad mxfp4 scale" ||
    fail "quantize of a bad mxfp4 scale: status $rc, $(tail -n 1 "$tmp/err")"
[ -e "$tmp/requant.gguf" ] && fail "quantize of a bad mxfp4 scale left $tmp/requant.gguf"
expect_error "mxfp4_moe without experts" "stories260K-f32.gguf: mxfp4_moe .* no experts" \
    "$BIN" quantize -m "$MODEL" -o "$tmp/moe.gguf" --type mxfp4_moe
[ -e "$tmp/moe.gguf" ] && fail "mxfp4_moe without experts left $tmp/moe.gguf"

[ "$failed" -eq 0 ] && echo "cli_gguf_bad: all passed"
exit $((failed > 0))
