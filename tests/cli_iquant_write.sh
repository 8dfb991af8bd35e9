#!/usr/bin/env bash
# edgelm writes the lattice i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S as llama-quantize
# does (tests/data/iquant/, scripts/iquant_reference.sh):
# - `quantize --type T --pure --imatrix` of the wide256 model, with llama-quantize's arguments,
#   holds the bytes of llama-quantize's sample of that file (blk.0.attn_k.weight, 128 rows of
#   blk.1.ffn_down.weight); IQ3_XXS's token embedding and output, which both encode without
#   importances, too; and IQ3_S written without an imatrix;
# - the same bytes on 1 and 3 threads;
# - a type that llama-quantize writes only from an importance matrix, asked for without one: one
#   line naming the type; with an imatrix that lacks a tensor the type needs it for (IQ2_XXS's
#   token embedding, where llama-quantize aborts): one line naming the tensor; no output either way.
# usage: cli_iquant_write.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
data=tests/data/iquant
f32=$fx/wide256/wide-f32.gguf
im=$fx/wide256/reference-quants/llamacpp-imatrix-calib.gguf
[ -f "$f32" ] && [ -f "$im" ] || skip "the wide256 fixtures are missing"

# match SAMPLE FILE NAME: FILE holds SAMPLE's tensor bytes
match() {
    PYTHONPATH=tests/lib python3 tests/lib/iquant_match.py "$1" "$2" >"$tmp/match.out" 2>&1 && ok ||
        fail "$3: not llama-quantize's bytes: $(tr '\n' ' ' <"$tmp/match.out")"
}

for t in iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s; do
    # llama-quantize's arguments (scripts/iquant_reference.sh): the IQ2 types keep the token
    # embedding and output at q8_0, which the imatrix does not cover
    extra=()
    case $t in iq2_*) extra=(--tensor-type token_embd=q8_0 --tensor-type output=q8_0) ;; esac
    "$bin" quantize -m "$f32" -o "$tmp/$t.gguf" --type "$t" --pure --imatrix "$im" "${extra[@]}" \
        -t 2 >/dev/null 2>"$tmp/err" || { fail "$t: quantize failed: $(tail -1 "$tmp/err")"; continue; }
    match "$data/$t.gguf" "$tmp/$t.gguf" "$t"
done
match "$data/iq3_xxs-embd.gguf" "$tmp/iq3_xxs.gguf" "iq3_xxs token_embd and output"
"$bin" quantize -m "$f32" -o "$tmp/iq3_s-noim.gguf" --type iq3_s --pure -t 2 >/dev/null 2>"$tmp/err" &&
    match "$data/iq3_s-noimatrix.gguf" "$tmp/iq3_s-noim.gguf" "iq3_s without an imatrix" ||
    fail "iq3_s without an imatrix: $(tail -1 "$tmp/err")"

# rows are spread over the threads: the same bytes at any count
for n in 1 3; do
    "$bin" quantize -m "$f32" -o "$tmp/t$n.gguf" --type iq2_xs --pure --imatrix "$im" \
        --tensor-type token_embd=q8_0 --tensor-type output=q8_0 -t $n >/dev/null 2>&1 &&
        cmp -s "$tmp/iq2_xs.gguf" "$tmp/t$n.gguf" && ok || fail "iq2_xs at -t $n differs from -t 2"
done

# refusals, before anything is written
for t in iq2_xxs iq2_xs iq2_s iq3_xxs; do
    expect_error "$t without an imatrix" "wide-f32.gguf: $t needs an importance matrix" \
        "$bin" quantize -m "$f32" -o "$tmp/no.gguf" --type "$t" --pure
done
expect_error "iq2_xxs token_embd without importances" \
    "llamacpp-imatrix-calib.gguf: no importances for tensor 'token_embd.weight', which iq2_xxs needs" \
    "$bin" quantize -m "$f32" -o "$tmp/no.gguf" --type iq2_xxs --pure --imatrix "$im"
[ -e "$tmp/no.gguf" ] && fail "a refused quantize left its output"

echo "cli_iquant_write: $passed passed, $failed failed"
exit $((failed > 0))
