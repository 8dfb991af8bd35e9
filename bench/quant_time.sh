#!/usr/bin/env bash
# Quantization time and memory per method at q4_0 (issue 23's targets): the stories260K fixture
# calibrated on the whole of text/calib.txt (the CLI defaults: 512-token samples), then models of
# random weights in real shapes (`edgelm synth --preset`, f16): TinyLlama-1.1B at 8 x 128
# calibration tokens, Llama-2-7B and Llama-2-13B at 16 x 512. A big shape may be run on its first
# N blocks only (`synth --layers N`): the time of the whole model is then extrapolated from the
# per-block time of the progress lines (full = measured + (blocks - N) x per block); the memory
# figures are those of the run, which holds one block at a time whatever the depth. "CPU s" is the
# process's user + system time (on a shared machine a fairer figure than the wall time). Each row also
# shows `edgelm plan --quantize`'s estimate for the whole model. Prints the CPU, the ISA, the
# threads and the load (uptime) first, then one Markdown table: seconds, the process's peak
# resident and anonymous (RssAnon) memory. A benchmark, not a test (times depend on the machine).
# Usage: bash bench/quant_time.sh [EDGELM_BINARY] [THREADS]
#   BIG: "PRESET:SAMPLES:SEQ_LEN:BLOCKS ..." (BLOCKS 0 = all; default below), SKIP_BIG=1 skips them;
#   METHODS (default "gptq awq"); SKIP_SMALL=1 skips stories260K.
set -euo pipefail
bin=${1:-build/edgelm}
threads=${2:-$(nproc)}
fix=../shared/fixtures/stories260K
out=build/bench-quant
mkdir -p "$out"
big=${BIG:-"tinyllama-1.1b:8:128:0 llama-2-7b:16:512:4 llama-2-13b:16:512:4"}
methods=${METHODS:-"gptq awq"}

json() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($1)" "$2"; }

# row LABEL MODEL METHOD CALIB_LABEL BLOCKS_RUN BLOCKS_FULL PRESET SAMPLES SEQ [quantize options...]
row() {
    local label=$1 model=$2 method=$3 calib=$4 run=$5 full=$6 preset=$7 samples=$8 seq=$9
    shift 9
    local r=$out/$label-$method.json e=$out/$label-$method.err
    /usr/bin/time -f "%U %S" -o "$out/cpu" "$bin" quantize -m "$model" -o "$out/$label-$method.gguf" --type q4_0 --method "$method" \
        -t "$threads" --json "$@" >"$r" 2>"$e" || { cat "$e" >&2; exit 1; }
    rm -f "$out/$label-$method.gguf"
    local secs per est="-"
    secs=$(json '"%.1f" % d["seconds"]' "$r")
    local cpu
    cpu=$(awk '{printf "%.0f", $1 + $2}' "$out/cpu")
    # per block: from the elapsed times of the first and the last block's progress lines
    per=$(python3 - "$e" <<'PY'
import re, sys
t = [float(m.group(1)) for m in re.finditer(r"\] blk\.\d+\s+([0-9.]+)s elapsed", open(sys.argv[1]).read())]
print("%.1f" % ((t[-1] - t[0]) / (len(t) - 1)) if len(t) > 1 else "-")
PY
)
    local total=$secs
    if [ "$run" != "$full" ] && [ "$per" != "-" ]; then
        total=$(python3 -c "print('%.0f' % ($secs + ($full - $run) * $per))")
    fi
    if [ -n "$preset" ]; then
        est=$("$bin" plan --preset "$preset" --quantize "$method" -t "$threads" \
              --calib-samples "$samples" --seq-len "$seq" --json | python3 -c \
              'import json, sys; d = json.load(sys.stdin); print("%.0f s, %.2f GiB" % (d["seconds"], d["peak_anon_bytes"] / 2**30))')
    fi
    local tok
    tok=$(json 'd.get("calib_tokens", 0)' "$r")
    [ "$tok" != 0 ] && calib="$calib ($tok tok)"
    printf '| %-15s | %-6s | %-18s | %6s | %8s | %6s | %7s | %12s | %8s | %9s | %-20s |\n' "$label" "$method" \
        "$calib" "$run/$full" "$secs" "$cpu" "$per" "$total" \
        "$(json '"%.0f" % d["peak_rss_mib"]' "$r")" "$(json '"%.0f" % d["peak_anon_mib"]' "$r")" "$est"
}

isa=
for f in avx512f avx2 asimd; do grep -qw "$f" /proc/cpuinfo 2>/dev/null && { isa=$f; break; }; done
echo "quantization to q4_0 (default policy), $threads threads, $(nproc) cores: $(uname -m) ${isa:-}," \
     "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
echo "load: $(uptime | sed 's/.*load average/load average/')"
echo
printf '| %-15s | %-6s | %-18s | %6s | %8s | %6s | %7s | %12s | %8s | %9s | %-20s |\n' model method calibration blocks \
    "seconds" "CPU s" "s/block" "whole model s" "RSS MiB" "anon MiB" "plan --quantize"
printf '|-----------------|--------|--------------------|--------|----------|--------|---------|--------------|----------|-----------|----------------------|\n'
if [ "${SKIP_SMALL:-0}" != 1 ]; then
    row stories260K "$fix/stories260K-f32.gguf" rtn "none" 5 5 "" 0 0
    for m in $methods; do
        row stories260K "$fix/stories260K-f32.gguf" "$m" "calib.txt 256x512" 5 5 "" 0 0 \
            --calib "$fix/text/calib.txt"
    done
fi
if [ "${SKIP_BIG:-0}" != 1 ]; then
    for spec in $big; do
        IFS=: read -r preset n s blocks <<<"$spec"
        full=$("$bin" plan --preset "$preset" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["model"]["n_layers"])')
        [ "$blocks" = 0 ] && blocks=$full
        file=$out/$preset-$blocks-f16.gguf
        [ -f "$file" ] || "$bin" synth --preset "$preset" --type f16 --layers "$blocks" -o "$file" >/dev/null
        for m in $methods; do
            row "$preset" "$file" "$m" "calib.txt ${n}x$s" "$blocks" "$full" "$preset" "$n" "$s" \
                --calib "$fix/text/calib.txt" --calib-samples "$n" --seq-len "$s"
        done
    done
fi
