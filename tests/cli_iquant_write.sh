#!/usr/bin/env bash
# edgelm writes the nine sub-4-bit types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
# TQ1_0 and TQ2_0 as llama-quantize does (tests/data/iquant/, scripts/iquant_reference.sh):
# - `quantize --type T --pure --imatrix` of the wide256 model, with llama-quantize's arguments,
#   holds the bytes of llama-quantize's sample of that file (blk.0.attn_k.weight, 128 rows of
#   blk.1.ffn_down.weight); IQ3_XXS's token embedding and output, which both encode without
#   importances, too; and IQ3_S written without an imatrix. As with llama-quantize, `--type iq2_s`
#   is the IQ2_S recipe, whose tensors are IQ2_XS: IQ2_S tensors come from `--type iq2_m --pure`;
# - every tensor of llama-quantize's whole file by type and sha256 (tests/data/iquant_recipes.json,
#   "wide256-pure", scripts/iquant_recipes_golden.sh: the token embedding and output of IQ1_M,
#   IQ3_XXS, IQ3_S, TQ1_0 and TQ2_0 without importance too);
# - the same bytes on 1 and 3 threads (IQ2_XS) and on 1 (IQ1_M); the ternary types take no
#   importance, so without --imatrix the same;
# - a type that llama-quantize writes only from an importance matrix, asked for without one: one
#   line naming the type (and the tensor); with an imatrix that lacks a tensor the type needs it
#   for (the token embedding of IQ1_S and IQ2_XXS, where llama-quantize aborts): one line naming
#   the tensor; no output either way.
# usage: cli_iquant_write.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
data=tests/data/iquant
f32=$fx/wide256/wide-f32.gguf
im=$fx/wide256/reference-quants/llamacpp-imatrix-calib.gguf
[ -f "$f32" ] && [ -f "$im" ] || skip "the wide256 fixtures are missing"

# arg T: the --type that writes type T's tensors with --pure
arg() { if [ "$1" = iq2_s ]; then echo iq2_m; else echo "$1"; fi; }

# match SAMPLE FILE NAME: FILE holds SAMPLE's tensor bytes
match() {
    PYTHONPATH=tests/lib python3 tests/lib/iquant_match.py "$1" "$2" >"$tmp/match.out" 2>&1 && ok ||
        fail "$3: not llama-quantize's bytes: $(tr '\n' ' ' <"$tmp/match.out")"
}

# whole T FILE: every tensor of FILE as in llama-quantize's whole --pure file of type T
whole() {
    python3 tests/lib/gguf_tensors.py "$2" >"$tmp/$1.json"
    python3 - tests/data/iquant_recipes.json "$1" "$tmp/$1.json" <<'PY' && ok || fail "$1: the whole file differs from llama-quantize's"
import json, sys
want = json.load(open(sys.argv[1]))["wide256-pure"][sys.argv[2]]
got = json.load(open(sys.argv[3]))
bad = sorted(set(want) | set(got), key=str)
bad = [n for n in bad if want.get(n) != got.get(n)]
for n in bad[:5]:
    print(f"  {n}: llama-quantize {want.get(n, ['-'])[0]}, edgelm {got.get(n, ['-'])[0]}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

for t in iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s tq1_0 tq2_0; do
    # llama-quantize's arguments (scripts/iquant_reference.sh): IQ1_S and the IQ2 types keep the
    # token embedding and output at q8_0, which the imatrix does not cover
    extra=()
    case $t in iq1_s | iq2_*) extra=(--tensor-type token_embd=q8_0 --tensor-type output=q8_0) ;; esac
    "$bin" quantize -m "$f32" -o "$tmp/$t.gguf" --type "$(arg "$t")" --pure --imatrix "$im" \
        "${extra[@]}" -t 2 >/dev/null 2>"$tmp/err" || { fail "$t: quantize failed: $(tail -1 "$tmp/err")"; continue; }
    match "$data/$t.gguf" "$tmp/$t.gguf" "$t"
    whole "$t" "$tmp/$t.gguf"
done
match "$data/iq3_xxs-embd.gguf" "$tmp/iq3_xxs.gguf" "iq3_xxs token_embd and output"
"$bin" quantize -m "$f32" -o "$tmp/iq3_s-noim.gguf" --type iq3_s --pure -t 2 >/dev/null 2>"$tmp/err" &&
    match "$data/iq3_s-noimatrix.gguf" "$tmp/iq3_s-noim.gguf" "iq3_s without an imatrix" ||
    fail "iq3_s without an imatrix: $(tail -1 "$tmp/err")"
for t in tq1_0 tq2_0; do
    "$bin" quantize -m "$f32" -o "$tmp/$t-plain.gguf" --type "$t" --pure -t 2 >/dev/null 2>&1 &&
        cmp -s "$tmp/$t-plain.gguf" "$tmp/$t.gguf" && ok || fail "$t: without --imatrix, other bytes"
done

# rows are spread over the threads: the same bytes at any count
for n in 1 3; do
    "$bin" quantize -m "$f32" -o "$tmp/t$n.gguf" --type iq2_xs --pure --imatrix "$im" \
        --tensor-type token_embd=q8_0 --tensor-type output=q8_0 -t $n >/dev/null 2>&1 &&
        cmp -s "$tmp/iq2_xs.gguf" "$tmp/t$n.gguf" && ok || fail "iq2_xs at -t $n differs from -t 2"
done
"$bin" quantize -m "$f32" -o "$tmp/t1.gguf" --type iq1_m --pure --imatrix "$im" -t 1 >/dev/null 2>&1 &&
    cmp -s "$tmp/t1.gguf" "$tmp/iq1_m.gguf" && ok || fail "iq1_m at -t 1 differs from -t 2"

# refusals, before anything is written
for t in iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs; do
    expect_error "$t without an imatrix" \
        "wide-f32.gguf: $t needs an importance matrix (--imatrix FILE).*tensor '.*\.weight'" \
        "$bin" quantize -m "$f32" -o "$tmp/no.gguf" --type "$(arg "$t")" --pure
done
for t in iq1_s iq2_xxs; do
    expect_error "$t token_embd without importances" \
        "llamacpp-imatrix-calib.gguf: no importances for tensor 'token_embd.weight', which $t needs" \
        "$bin" quantize -m "$f32" -o "$tmp/no.gguf" --type "$t" --pure --imatrix "$im"
done
[ -e "$tmp/no.gguf" ] && fail "a refused quantize left its output"

echo "cli_iquant_write: $passed passed, $failed failed"
exit $((failed > 0))
