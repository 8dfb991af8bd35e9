#!/usr/bin/env bash
# Quantization wall time per method (rtn, gptq, awq) at q4_0, for the stories260K fixture
# calibrated on the whole of text/calib.txt (the CLI defaults: 512-token samples) and for a
# TinyLlama-1.1B-shaped model of random weights (`edgelm synth --preset tinyllama-1.1b`, f16)
# calibrated on a few samples. Prints one Markdown table; not a test (times depend on the machine).
# Usage: bash bench/quant_time.sh [EDGELM_BINARY] [THREADS]
#   BIG_SAMPLES (default 8) and BIG_SEQ (default 128): calibration of the 1.1B model;
#   SKIP_BIG=1 skips it (its float32 working copy needs ~5 GiB of memory).
set -euo pipefail
bin=${1:-build/edgelm}
threads=${2:-$(nproc)}
fix=../shared/fixtures/stories260K
out=build/bench-quant
mkdir -p "$out"

json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }

# row MODEL_LABEL MODEL METHOD CALIB_LABEL [quantize options...]
row() {
    local label=$1 model=$2 method=$3 calib=$4
    shift 4
    local r
    r=$("$bin" quantize -m "$model" -o "$out/$label-$method.gguf" --type q4_0 --method "$method" \
        -t "$threads" --json "$@" 2>"$out/err") || { cat "$out/err" >&2; exit 1; }
    printf '| %-16s | %-6s | %-28s | %9s | %11s | %9s |\n' "$label" "$method" "$calib" \
        "$(echo "$r" | json '"%.2f" % d["seconds"]')" \
        "$(echo "$r" | json '"%.2f" % d["bits_per_weight"]')" \
        "$(echo "$r" | json '"%.1f" % (d["file_bytes"] / 1048576)')"
}

echo "quantization to q4_0 (default policy), $threads threads, $(nproc) cores: $(uname -m)"
echo
printf '| %-16s | %-6s | %-28s | %9s | %11s | %9s |\n' model method calibration seconds bits/weight "file MiB"
printf '|------------------|--------|------------------------------|-----------|-------------|-----------|\n'
row stories260K "$fix/stories260K-f32.gguf" rtn "none"
for m in gptq awq; do
    row stories260K "$fix/stories260K-f32.gguf" "$m" "calib.txt, 256 x <=512 tok" \
        --calib "$fix/text/calib.txt"
done
if [ "${SKIP_BIG:-0}" != 1 ]; then
    big=$out/tinyllama-1.1b-f16.gguf
    [ -f "$big" ] || "$bin" synth --preset tinyllama-1.1b --type f16 -o "$big" >/dev/null
    n=${BIG_SAMPLES:-8} s=${BIG_SEQ:-128}
    row tinyllama-1.1b "$big" rtn "none"
    for m in gptq awq; do
        row tinyllama-1.1b "$big" "$m" "calib.txt, $n x $s tok" --calib "$fix/text/calib.txt" \
            --calib-samples "$n" --seq-len "$s"
    done
fi
