#!/usr/bin/env bash
# The sub-4-bit i-quants and ternary types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
# TQ1_0, TQ2_0) on llama-quantize's blocks (tests/data/iquant/, scripts/iquant_reference.sh):
# - tests/lib/iquant_decode.py, a decoder written from docs/kquants.md, decodes every block and
#   the library's dequantization equals it bit for bit (through libedgelm's elm_type_get);
# - a whole model runs with one of them: the F32 wide256 model with blk.0.attn_k.weight taken from
#   each file loads, and its perplexity is within 10% of the F32 model's (one 128x256 tensor of 21
#   changed) and, but in a sanitizer build, the same on the scalar table and this CPU's (to 1e-6:
#   the F32 products add in another order);
# - a file cut inside an i-quant block, or with a block whose f16 scale is NaN or infinite, ends
#   in one error line naming the file and the tensor.
# The products against the dequantized weights are test_iquant_kernels'; llama.cpp's perplexity
# of the whole reference files, and edgelm's, are in tests/data/iquant_llamacpp.json (a manual
# check: llama-quantize is not in CI).
# usage: cli_iquant.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
data=tests/data/iquant
types="iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0"
f32=$fx/wide256/wide-f32.gguf
[ -f "$f32" ] || skip "the wide256 fixtures are missing"

# the layout check loads libedgelm.so into python: not in a sanitizer build (its runtime would
# have to be preloaded; the release and clang trees run it)
lib=$(dirname "$bin")/libedgelm.so
np_py=$(for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && echo "$p" && break; done)
if $sanitized; then
    echo "cli_iquant: layout check not run in a sanitizer build"
elif [ -z "$np_py" ] || [ ! -f "$lib" ]; then
    fail "layout check: needs python3 with numpy (scripts/deps.sh installs python3-numpy) and $lib"
else
    files=()
    for t in $types; do files+=("$data/$t.gguf"); done
    PYTHONPATH=tests/lib "$np_py" tests/lib/iquant_decode.py "$lib" . "${files[@]}" >"$tmp/decode.out" 2>&1 &&
        ok || fail "decoder from docs/kquants.md differs: $(cat "$tmp/decode.out")"
fi

text=$tmp/text.txt
head -c 3000 "$fx/stories260K/text/valid.txt" >"$text"
ppl() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ppl"])' "$1"; }
"$bin" perplexity -m "$f32" -f "$text" -c 128 -t 2 --json >"$tmp/f32.json" 2>"$tmp/err" ||
    fail "perplexity of the F32 model: $(tail -1 "$tmp/err")"
for t in $types; do
    m=$tmp/$t.gguf
    python3 tests/lib/gguf_splice.py "$f32" "$data/$t.gguf" "$m" blk.0.attn_k.weight ||
        { fail "$t: could not splice"; continue; }
    "$bin" inspect "$m" | grep -q "blk.0.attn_k.weight .* $t " && ok || fail "$t: inspect does not list it"
    "$bin" perplexity -m "$m" -f "$text" -c 128 -t 2 --json >"$tmp/b.json" 2>"$tmp/err" ||
        { fail "$t: perplexity failed: $(tail -1 "$tmp/err")"; continue; }
    near() { python3 -c 'import sys; a, b, r = map(float, sys.argv[1:]); sys.exit(not abs(a / b - 1) < r)' "$@"; }
    near "$(ppl "$tmp/b.json")" "$(ppl "$tmp/f32.json")" 0.1 && ok ||
        fail "$t: perplexity $(ppl "$tmp/b.json"), the F32 model's $(ppl "$tmp/f32.json")"
    # the scalar table against this CPU's (the F32 products' float order differs between tables,
    # so equal to 1e-6); a sanitizer build runs the same i-quant code once, above
    $sanitized && continue
    EDGELM_ISA=scalar "$bin" perplexity -m "$m" -f "$text" -c 128 -t 2 --json >"$tmp/s.json" 2>"$tmp/err" ||
        { fail "$t: scalar perplexity failed: $(tail -1 "$tmp/err")"; continue; }
    near "$(ppl "$tmp/s.json")" "$(ppl "$tmp/b.json")" 1e-6 && ok ||
        fail "$t: perplexity $(ppl "$tmp/b.json") on this CPU's table, $(ppl "$tmp/s.json") on the scalar one"
done

# a file cut inside an i-quant block: one line naming the file and the tensor
m=$tmp/iq3_s.gguf
at=$(PYTHONPATH=tests/lib python3 -c 'import sys; from gguf_tensors import layout
print([o for n, _, _, o in layout(sys.argv[1])[1] if n == "blk.0.attn_k.weight"][0] + 50)' "$m")
head -c "$at" "$m" >"$tmp/cut.gguf"
expect_error "iq3_s cut" "$tmp/cut.gguf: tensor 'blk.0.attn_k.weight' .*past end of file" \
    "$bin" inspect "$tmp/cut.gguf"

# a block whose f16 scale is infinite (IQ3_S's d field) or NaN (IQ1_M's, in the top nibbles of its
# scale words): refused at load, as llama.cpp's row validation does, naming the file, tensor, block
for t in iq3_s iq1_m; do
    PYTHONPATH=tests/lib python3 - "$tmp/$t.gguf" "$tmp/$t-bad.gguf" "$t" <<'PY' || fail "$t: could not patch"
import struct, sys
from gguf_tensors import layout
data, table = layout(sys.argv[1])
b = bytearray(data)
at = [o for n, _, _, o in table if n == "blk.0.attn_k.weight"][0]
if sys.argv[3] == "iq3_s":
    struct.pack_into("<H", b, at + 3 * 110, 0x7C00)  # block 3: d = +inf
else:  # block 3: the scale nibbles of 0x7E00 (NaN): 0x7 in word 3's top nibble, 0xE in word 2's
    o = at + 3 * 56 + 48
    for k, nib in enumerate((0x0, 0x0, 0xE, 0x7)):
        w = struct.unpack_from("<H", b, o + 2 * k)[0]
        struct.pack_into("<H", b, o + 2 * k, (w & 0x0FFF) | nib << 12)
open(sys.argv[2], "wb").write(b)
PY
    expect_error "$t bad scale" "$tmp/$t-bad.gguf: tensor 'blk.0.attn_k.weight' block 3 has a bad $t scale" \
        "$bin" run -m "$tmp/$t-bad.gguf" -p hi -n 1
done

echo "cli_iquant: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
