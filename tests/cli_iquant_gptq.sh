#!/usr/bin/env bash
# GPTQ into the lattice i-quants (src/quant/gptq.c, grid.h's group grids): on the wide256 model,
# `quantize --method gptq --type T --pure` for T = iq2_xs, iq3_s, iq2_xxs, iq3_xxs, iq2_s
# (llama-quantize's --pure arguments: token embedding and output at q8_0):
# - needs no --imatrix (the Hessian's diagonal is the importance), where round-to-nearest is
#   refused without one (IQ2_XXS, IQ2_XS, IQ2_S);
# - writes files of exactly the bytes of the RTN file with the fixture's imatrix, which decode
#   with the types table (eval runs them);
# - is closer to the F32 model than that RTN file (mean KLD by `eval` on stories260K's
#   valid.txt, n_ctx 256; not in a sanitizer build, where only the writing is checked);
# - a token embedding that GPTQ only rounds still needs the importances llama-quantize needs:
#   without --tensor-type, one line naming the tensor.
# usage: cli_iquant_gptq.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
f32=$fx/wide256/wide-f32.gguf
im=$fx/wide256/reference-quants/llamacpp-imatrix-calib.gguf
calib=$fx/stories260K/text/calib.jsonl
valid=$fx/stories260K/text/valid.txt
[ -f "$f32" ] && [ -f "$im" ] && [ -f "$calib" ] && [ -f "$valid" ] || skip "the wide256 fixtures are missing"
sanitized=false
grep -q '^EDGELM_SANITIZE:BOOL=ON' "$(dirname "$bin")/CMakeCache.txt" 2>/dev/null && sanitized=true

# the file types whose --pure tensors are T (as cli_iquant_write.sh: IQ2_S's come from iq2_m)
arg() { if [ "$1" = iq2_s ]; then echo iq2_m; else echo "$1"; fi; }
keep=(--tensor-type token_embd=q8_0 --tensor-type output=q8_0)
types="iq2_xs iq3_s iq2_xxs iq3_xxs iq2_s"
$sanitized && types="iq2_xs iq3_s"
models=()
for t in $types; do
    "$bin" quantize -m "$f32" -o "$tmp/$t-rtn.gguf" --type "$(arg "$t")" --pure "${keep[@]}" \
        --imatrix "$im" -t 2 >/dev/null 2>"$tmp/err" || { fail "$t rtn: $(tail -1 "$tmp/err")"; continue; }
    "$bin" quantize -m "$f32" -o "$tmp/$t-gptq.gguf" --type "$(arg "$t")" --pure "${keep[@]}" \
        --method gptq --calib "$calib" -t 2 >/dev/null 2>"$tmp/err" ||
        { fail "$t gptq: $(tail -1 "$tmp/err")"; continue; }
    [ "$(stat -c %s "$tmp/$t-rtn.gguf")" = "$(stat -c %s "$tmp/$t-gptq.gguf")" ] && ok ||
        fail "$t: GPTQ's file is not RTN's size"
    models+=(-m "$tmp/$t-rtn.gguf" -m "$tmp/$t-gptq.gguf")
done

if $sanitized; then
    echo "cli_iquant_gptq: the KLD comparison not run in a sanitizer build"
elif [ ${#models[@]} -gt 0 ]; then
    "$bin" eval --ref "$f32" "${models[@]}" -f "$valid" -c 256 -t 2 --json >"$tmp/eval.json" \
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

expect_error "gptq iq2_xs token_embd without importances" \
    "wide-f32.gguf: iq2_xs needs an importance matrix (--imatrix FILE).*tensor 'token_embd.weight'" \
    "$bin" quantize -m "$f32" -o "$tmp/no.gguf" --type iq2_xs --pure --method gptq --calib "$calib"
[ -e "$tmp/no.gguf" ] && fail "a refused quantize left its output"

echo "cli_iquant_gptq: $passed passed, $failed failed"
exit $((failed > 0))
