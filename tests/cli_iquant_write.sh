#!/usr/bin/env bash
# The sub-4-bit writers against llama-quantize: `quantize --type T --pure --imatrix` of the wide256
# model for T = iq1_s, iq1_m, tq1_0, tq2_0 holds, byte for byte, the blocks of llama-quantize's file
# sampled in tests/data/iquant/T.gguf (blk.0.attn_k.weight and the first 128 rows of
# blk.1.ffn_down.weight; scripts/iquant_reference.sh), and every tensor of its whole file by type
# and sha256 (tests/data/iquant_recipes.json, "wide256-pure": IQ1_M's token embedding and output
# without importance too); the same bytes on 1 thread; the ternary types take no importance, so
# without --imatrix the same. The refusals, one line and no output: iq1_s or iq1_m without an
# importance matrix (naming the type), and iq1_s with one that has no entry for token_embd
# (llama-quantize aborts there; edgelm names the tensor).
# Usage: bash tests/cli_iquant_write.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1 fix=$2
. "$(dirname "$0")/lib/cli.sh"
wide=$fix/wide256/wide-f32.gguf
im=$fix/wide256/reference-quants/llamacpp-imatrix-calib.gguf
[ -f "$wide" ] && [ -f "$im" ] || skip "the wide256 fixtures are missing"
data=tests/data/iquant

# sample FILE OUT: the tensors and rows tests/data/iquant keeps
sample() {
    python3 tests/lib/iquant_cut.py "$1" "$2" 128 blk.0.attn_k.weight blk.1.ffn_down.weight
}

for t in iq1_s iq1_m tq1_0 tq2_0; do
    extra=()
    # as the reference: llama-quantize's IQ1_S encoder needs importance for every tensor
    [ "$t" = iq1_s ] && extra=(--tensor-type token_embd=q8_0 --tensor-type output=q8_0)
    "$bin" quantize -m "$wide" -o "$tmp/$t.gguf" --type "$t" --pure --imatrix "$im" "${extra[@]}" \
        -t 2 >/dev/null 2>"$tmp/err" || { fail "$t: quantize: $(tail -1 "$tmp/err")"; continue; }
    sample "$tmp/$t.gguf" "$tmp/$t-cut.gguf" && cmp -s "$tmp/$t-cut.gguf" "$data/$t.gguf" && ok ||
        fail "$t: the blocks differ from llama-quantize's ($data/$t.gguf)"
    python3 tests/lib/gguf_tensors.py "$tmp/$t.gguf" >"$tmp/$t.json"
    python3 - tests/data/iquant_recipes.json "$t" "$tmp/$t.json" <<'PY' && ok || fail "$t: the whole file differs from llama-quantize's"
import json, sys
want = json.load(open(sys.argv[1]))["wide256-pure"][sys.argv[2]]
got = json.load(open(sys.argv[3]))
bad = sorted(set(want) | set(got), key=str)
bad = [n for n in bad if want.get(n) != got.get(n)]
for n in bad[:5]:
    print(f"  {n}: llama-quantize {want.get(n, ['-'])[0]}, edgelm {got.get(n, ['-'])[0]}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
done
"$bin" quantize -m "$wide" -o "$tmp/t1.gguf" --type iq1_m --pure --imatrix "$im" -t 1 >/dev/null 2>&1 &&
    cmp -s "$tmp/t1.gguf" "$tmp/iq1_m.gguf" && ok || fail "iq1_m on 1 thread: other bytes"
for t in tq1_0 tq2_0; do
    "$bin" quantize -m "$wide" -o "$tmp/$t-plain.gguf" --type "$t" --pure -t 2 >/dev/null 2>&1 &&
        cmp -s "$tmp/$t-plain.gguf" "$tmp/$t.gguf" && ok || fail "$t: without --imatrix, other bytes"
done

for t in iq1_s iq1_m; do
    expect_error "$t without an imatrix" "$t needs an importance matrix (--imatrix FILE).*tensor '.*\.weight'" \
        "$bin" quantize -m "$wide" -o "$tmp/no.gguf" --type "$t" --pure
done
expect_error "iq1_s token_embd without importance data" \
    "no importance data for tensor 'token_embd.weight', which iq1_s needs" \
    "$bin" quantize -m "$wide" -o "$tmp/no.gguf" --type iq1_s --pure --imatrix "$im"
[ -e "$tmp/no.gguf" ] && fail "a refused quantize left its output"

[ "$failed" -eq 0 ] && echo "cli_iquant_write: all $passed passed"
exit $((failed > 0))
