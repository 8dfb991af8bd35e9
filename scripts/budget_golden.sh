#!/usr/bin/env bash
# Writes tests/data/budget_wide256.json, the reference of tests/cli_quant_budget_wide256.sh, from
# llama.cpp's own tools (node-llama-cpp 3.21.1's llama.cpp, built outside the repo; the folder of
# its binaries is an argument): wide256 quantized by llama-quantize to the IQ3_M and IQ2_M recipes
# with the fixture's importance matrix, each file's size and llama-perplexity's scores against
# the F32 model on stories260K's valid.txt at n_ctx 256,
#   {recipe: {file_bytes, kld_mean, ppl}}
# Usage: bash scripts/budget_golden.sh LLAMA_BIN_DIR FIXTURES_DIR
set -eu
bin=$1 fix=$2
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wide=$fix/wide256/wide-f32.gguf valid=$fix/stories260K/text/valid.txt
"$bin/llama-perplexity" -m "$wide" -f "$valid" -c 256 -b 256 -t 2 \
    --kl-divergence-base "$tmp/base.kld" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
for r in IQ3_M IQ2_M; do
    "$bin/llama-quantize" --imatrix "$fix/wide256/reference-quants/llamacpp-imatrix-calib.gguf" \
        "$wide" "$tmp/$r.gguf" "$r" 2 >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
    "$bin/llama-perplexity" -m "$tmp/$r.gguf" -f "$valid" -c 256 -b 256 -t 2 \
        --kl-divergence-base "$tmp/base.kld" --kl-divergence >"$tmp/$r.log" 2>&1 ||
        { cat "$tmp/$r.log" >&2; exit 1; }
done
python3 - "$tmp" >"$root/tests/data/budget_wide256.json" <<'PY'
import json, os, re, sys
out = {}
for r in ("IQ3_M", "IQ2_M"):
    log = open(os.path.join(sys.argv[1], r + ".log")).read()
    out[r] = {"file_bytes": os.path.getsize(os.path.join(sys.argv[1], r + ".gguf")),
              "kld_mean": float(re.search(r"Mean +KLD: +([0-9.]+)", log).group(1)),
              "ppl": float(re.search(r"Mean PPL\(Q\) +: +([0-9.]+)", log).group(1))}
print(json.dumps(out, indent=1))
PY
