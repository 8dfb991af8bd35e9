#!/usr/bin/env bash
# Writes the reference of tests/cli_moe_imatrix.sh into tests/data/moe_imatrix/ from llama.cpp's own
# tools (node-llama-cpp 3.21.1's llama.cpp, built outside the repo; their paths are arguments).
# For each mixture-of-experts family named, its synth --tiny model at width 256 (tests/lib/hybrid.sh)
# and the text tests/lib/moe_imatrix.sh names (a piece of stories260K's valid.txt, 4 chunks of
# 128 tokens):
#   ARCH.imatrix.gguf   what llama-imatrix wrote: per-expert sums and counts of the expert stacks;
#   ARCH-q4_k_m.json    {tensor: [ggml type, sha256]} of llama-quantize --imatrix (that file) Q4_K_M.
# Usage: bash scripts/moe_imatrix_golden.sh EDGELM LLAMA_IMATRIX LLAMA_QUANTIZE FIXTURES_DIR ARCH...
set -eu
bin=$1 li=$2 lq=$3 fix=$4
shift 4
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$root/tests/lib/hybrid.sh"
. "$root/tests/lib/moe_imatrix.sh"
out=$root/tests/data/moe_imatrix
mkdir -p "$out"
moe_imatrix_text "$fix" "$tmp/text.txt"
for arch in "$@"; do
    hybrid_tiny "$bin" "$fix" "$arch" "$tmp/$arch.gguf" >/dev/null
    "$li" -m "$tmp/$arch.gguf" -f "$tmp/text.txt" -c "$MOE_IMATRIX_CTX" -t 2 \
        -o "$tmp/$arch.imatrix.gguf" >"$tmp/im.log" 2>&1
    "$lq" --imatrix "$tmp/$arch.imatrix.gguf" "$tmp/$arch.gguf" "$tmp/$arch-q4_k_m.gguf" Q4_K_M 2 \
        >"$tmp/q.log" 2>&1
    python3 "$root/tests/lib/gguf_tensors.py" "$tmp/$arch-q4_k_m.gguf" >"$tmp/$arch-q4_k_m.json"
    mv "$tmp/$arch.imatrix.gguf" "$tmp/$arch-q4_k_m.json" "$out/"
done
