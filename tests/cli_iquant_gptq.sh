#!/usr/bin/env bash
# GPTQ into the sub-4-bit types (src/quant/gptq.c; grid.h's group grids for the lattice i-quants,
# the ternary grids): on the wide256 model, `quantize --method gptq --type T --pure` for T =
# iq2_xs, iq3_s, iq1_m (the lattice codebooks) and tq2_0 (ternary), with llama-quantize's arguments
# (the IQ2 types keep the token embedding and output at q8_0):
# - needs no --imatrix (the Hessian's diagonal is the importance; round-to-nearest IQ2_XS is
#   refused without one: cli_iquant_write);
# - writes a file of exactly as many bytes as round-to-nearest's (with the fixture's imatrix, which
#   TQ2_0 ignores as llama-quantize does), which eval runs;
# - is closer to the F32 model than that file (mean KLD by `eval`, n_ctx 256, on the first 200
#   lines of stories260K's valid.txt; 32 calibration samples of 256 tokens; not in a sanitizer
#   build, where only the writing is checked, on 4 samples of 64 tokens);
# - a token embedding that GPTQ only rounds still needs the importances llama-quantize needs:
#   IQ2_XS without --tensor-type and --imatrix, one line naming the tensor, no output.
# docs/bench.md has the figures of every type with the whole calibration and valid.txt.
# usage: cli_iquant_gptq.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
f32=$fx/wide256/wide-f32.gguf
im=$fx/wide256/reference-quants/llamacpp-imatrix-calib.gguf
valid=$fx/stories260K/text/valid.txt
[ -f "$f32" ] && [ -f "$im" ] && [ -f "$valid" ] || skip "the wide256 fixtures are missing"

# a small calibration and the first lines of valid.txt keep the test short
# (a sanitizer build, which checks the writing only, calibrates on 4 samples of 64 tokens)
n_calib=32 calib_len=256
$sanitized && n_calib=4 calib_len=64
"$bin" calib -m "$f32" --source "$fx/stories260K/text/calib.txt:1" -n $n_calib --seq-len $calib_len --seed 1 \
    -o "$tmp/calib.jsonl" >/dev/null 2>"$tmp/err" || fail "calib: $(tail -1 "$tmp/err")"
head -n 200 "$valid" >"$tmp/valid.txt"
# llama-quantize's arguments (scripts/iquant_reference.sh): the IQ2 types keep the token
# embedding and output at q8_0, which the imatrix does not cover
keep() { case $1 in iq2_*) echo "--tensor-type token_embd=q8_0 --tensor-type output=q8_0" ;; esac; }
types="iq2_xs iq3_s iq1_m tq2_0"
models=()
for t in $types; do
    # shellcheck disable=SC2046
    "$bin" quantize -m "$f32" -o "$tmp/$t-rtn.gguf" --type "$t" --pure $(keep "$t") \
        --imatrix "$im" -t 2 >/dev/null 2>"$tmp/err" || { fail "$t rtn: $(tail -1 "$tmp/err")"; continue; }
    # shellcheck disable=SC2046
    "$bin" quantize -m "$f32" -o "$tmp/$t-gptq.gguf" --type "$t" --pure $(keep "$t") \
        --method gptq --calib "$tmp/calib.jsonl" -t 2 >/dev/null 2>"$tmp/err" ||
        { fail "$t gptq: $(tail -1 "$tmp/err")"; continue; }
    [ "$(stat -c %s "$tmp/$t-rtn.gguf")" = "$(stat -c %s "$tmp/$t-gptq.gguf")" ] && ok ||
        fail "$t: GPTQ's file is not RTN's size"
    models+=(-m "$tmp/$t-rtn.gguf" -m "$tmp/$t-gptq.gguf")
done

if $sanitized; then
    echo "cli_iquant_gptq: the KLD comparison not run in a sanitizer build"
elif [ ${#models[@]} -gt 0 ]; then
    "$bin" eval --ref "$f32" "${models[@]}" -f "$tmp/valid.txt" -c 256 -t 2 --json >"$tmp/eval.json" \
        2>"$tmp/err" || fail "eval: $(tail -1 "$tmp/err")"
    python3 - "$tmp/eval.json" $types <<'PY' && ok || fail "GPTQ's KLD not below RTN+imatrix's"
import json, sys
kld = [m["kld_mean"] for m in json.load(open(sys.argv[1]))["models"]]
bad = 0
for k, t in enumerate(sys.argv[2:]):
    rtn, gptq = kld[2 * k], kld[2 * k + 1]
    print(f"  {t}: mean KLD to F32: rtn+imatrix {rtn:.4f}, gptq {gptq:.4f} ({gptq / rtn:.2f}x)",
          file=sys.stderr)
    bad += not gptq < rtn
sys.exit(1 if bad else 0)
PY
fi

# (after the line on the calibration read, the one error line)
"$bin" quantize -m "$f32" -o "$tmp/no.gguf" --type iq2_xs --pure --method gptq \
    --calib "$tmp/calib.jsonl" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && [ "$(grep -vc ' calibration: ' "$tmp/err")" -eq 1 ] &&
    tail -1 "$tmp/err" | grep -q "^edgelm: .*wide-f32.gguf: iq2_xs needs an importance matrix (--imatrix FILE).*tensor 'token_embd.weight'" &&
    ok || fail "gptq iq2_xs token_embd without importances: $(cat "$tmp/err")"
[ -e "$tmp/no.gguf" ] && fail "a refused quantize left its output"

echo "cli_iquant_gptq: $passed passed, $failed failed"
exit $((failed > 0))
