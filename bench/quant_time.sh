#!/usr/bin/env bash
# Quantization wall time per method (rtn, gptq, awq) at q4_0, for the stories260K fixture
# calibrated on the whole of text/calib.txt (the CLI defaults: 512-token samples) and for a
# TinyLlama-1.1B-shaped model of random weights (`edgelm synth --preset tinyllama-1.1b`, f16)
# calibrated on a few samples. Prints one Markdown table with the time, the size and the process's
# peak resident and anonymous memory; not a test (times depend on the machine).
# Usage: bash bench/quant_time.sh [EDGELM_BINARY] [THREADS]
#   BIG_SAMPLES (default 8) and BIG_SEQ (default 128): calibration of the 1.1B model;
#   SKIP_BIG=1 skips it; BIG_PRESET (default tinyllama-1.1b) another `synth --preset`.
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
    printf '| %-16s | %-6s | %-28s | %9s | %11s | %9s | %12s | %13s |\n' "$label" "$method" "$calib" \
        "$(echo "$r" | json '"%.2f" % d["seconds"]')" \
        "$(echo "$r" | json '"%.2f" % d["bits_per_weight"]')" \
        "$(echo "$r" | json '"%.1f" % (d["file_bytes"] / 1048576)')" \
        "$(echo "$r" | json '"%.0f" % d["peak_rss_mib"]')" \
        "$(echo "$r" | json '"%.0f" % d["peak_anon_mib"]')"
}

isa=
for f in avx512f avx2 asimd; do grep -qw "$f" /proc/cpuinfo 2>/dev/null && { isa=$f; break; }; done
echo "quantization to q4_0 (default policy), $threads threads, $(nproc) cores: $(uname -m) ${isa:-}," \
     "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
echo
printf '| %-16s | %-6s | %-28s | %9s | %11s | %9s | %12s | %13s |\n' model method calibration seconds \
    bits/weight "file MiB" "peak RSS MiB" "peak anon MiB"
printf '|------------------|--------|------------------------------|-----------|-------------|-----------|--------------|---------------|\n'
row stories260K "$fix/stories260K-f32.gguf" rtn "none"
for m in gptq awq; do
    row stories260K "$fix/stories260K-f32.gguf" "$m" "calib.txt, 256 x <=512 tok" \
        --calib "$fix/text/calib.txt"
done
if [ "${SKIP_BIG:-0}" != 1 ]; then
    preset=${BIG_PRESET:-tinyllama-1.1b}
    big=$out/$preset-f16.gguf
    [ -f "$big" ] || "$bin" synth --preset "$preset" --type f16 -o "$big" >/dev/null
    n=${BIG_SAMPLES:-8} s=${BIG_SEQ:-128}
    row "$preset" "$big" rtn "none"
    for m in gptq awq; do
        row "$preset" "$big" "$m" "calib.txt, $n x $s tok" --calib "$fix/text/calib.txt" \
            --calib-samples "$n" --seq-len "$s"
    done
fi
