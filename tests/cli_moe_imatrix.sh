#!/usr/bin/env bash
# The experts' importance matrices against llama.cpp's own tools (node-llama-cpp 3.21.1's
# llama.cpp), on each mixture-of-experts family's synth --tiny model at width 256 and the text of
# tests/lib/moe_imatrix.sh, recorded in tests/data/moe_imatrix/ by scripts/moe_imatrix_golden.sh:
# - `edgelm imatrix` writes the tensors llama-imatrix wrote (the expert stacks with one row of sums
#   and one count per expert, the router as a 2-D weight, qwen35moe's one-row shared-expert gate
#   stored 1-D as well): every count equal, every sum within 2e-3 of its matrix's largest
#   (llama.cpp's hidden states differ by some 1e-4, and it sums in float32, edgelm in float64;
#   measured: 8.3e-4 at most);
# - `quantize --type q4_k_m --imatrix` with llama-imatrix's file writes llama-quantize's bytes,
#   each expert's rows weighted by its own slice.
# Usage: bash tests/cli_moe_imatrix.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/hybrid.sh"
. "$(dirname "$0")/lib/moe_imatrix.sh"
data=$(dirname "$0")/data/moe_imatrix
moe_imatrix_text "$fix" "$tmp/text.txt"

for ref in "$data"/*.imatrix.gguf; do
    arch=$(basename "$ref" .imatrix.gguf)
    hybrid_tiny "$bin" "$fix" "$arch" "$tmp/$arch.gguf" >/dev/null 2>"$tmp/err" ||
        { fail "$arch: synth: $(cat "$tmp/err")"; continue; }
    if "$bin" imatrix -m "$tmp/$arch.gguf" -f "$tmp/text.txt" -c "$MOE_IMATRIX_CTX" -t 2 \
        -o "$tmp/$arch.im.gguf" >/dev/null 2>"$tmp/err"; then
        python3 tests/lib/imatrix_compare.py "$ref" "$tmp/$arch.im.gguf" 2e-3 >"$tmp/cmp" &&
            ok || fail "$arch: edgelm imatrix differs from llama-imatrix"
        echo "  $arch: $(cat "$tmp/cmp")" >&2
    else
        fail "$arch: imatrix: $(tail -1 "$tmp/err")"
    fi
    "$bin" quantize -m "$tmp/$arch.gguf" -o "$tmp/q.gguf" --type q4_k_m --imatrix "$ref" -t 2 \
        >/dev/null 2>"$tmp/err" || { fail "$arch: quantize --imatrix: $(tail -1 "$tmp/err")"; continue; }
    python3 tests/lib/gguf_tensors.py "$tmp/q.gguf" >"$tmp/q.json"
    python3 - "$data/$arch-q4_k_m.json" "$tmp/q.json" <<'PY' && ok ||
import json, sys
want, got = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bad = [n for n in want if got.get(n) != want[n]] + [n for n in got if n not in want]
for n in bad[:5]:
    print(f"  {n}: llama-quantize {want.get(n, ['-'])[0]}, edgelm {got.get(n, ['-'])[0]}",
          file=sys.stderr)
sys.exit(1 if bad else 0)
PY
        fail "$arch: quantize --imatrix q4_k_m differs from llama-quantize"
done

[ "$failed" -eq 0 ] && echo "cli_moe_imatrix: all passed"
exit $((failed > 0))
