#!/usr/bin/env bash
# make demo: the main job end to end on the model inside the repository. The F32 demo model is
# quantized four ways: q8_0, and q4_k_m three times, by llama.cpp's rule (round to nearest, the
# file llama-quantize Q4_K_M writes), by llama.cpp's rule with an importance matrix (llama.cpp's
# best at this size) and by edgelm's GPTQ. The calibrated methods see the first 24 stories of
# demo/valid.txt, the evaluation the other 56. Then: one table of accuracy against the F32 model
# (perplexity, KL divergence, top-1 agreement, similarity of greedy continuations), one of speed,
# and each file's greedy continuation of "Once upon a time". Progress goes to stderr, the
# results to stdout; tool output is kept in build/demo/log.txt, the full report in build/demo/.
set -euo pipefail
bin=${1:-build/edgelm}
out=build/demo
f32=demo/stories260K-f32.gguf
text=demo/valid.txt
mkdir -p "$out"
log=$out/log.txt
: > "$log"

say() { printf '%s\n' "$*" >&2; }
step() {  # step LABEL CMD...: run CMD with its output in the log, show the log if it fails
  say "  $1"; shift
  "$@" >>"$log" 2>&1 || { tail -n 20 "$log" >&2; say "demo: failed: $*"; exit 1; }
}
json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }

# Calibration text and evaluation text are disjoint: stories 1-24 calibrate, 25-80 evaluate. The
# prompts for greedy continuations are the first 10 words of each evaluation story.
awk -v RS= -v ORS='\n\n' 'NR <= 24' "$text" > "$out/calib.txt"
awk -v RS= -v ORS='\n\n' 'NR > 24' "$text" > "$out/eval.txt"
awk -v RS= '{ n = split($0, w, " "); s = w[1]; for (i = 2; i <= 10 && i <= n; i++) s = s " " w[i]; print s }' \
  "$out/eval.txt" > "$out/prompts.txt"

q8=$out/stories260K-q8_0.gguf
rtn=$out/stories260K-q4_k_m-rtn.gguf
imx=$out/stories260K-q4_k_m-imatrix.gguf
gptq=$out/stories260K-q4_k_m-gptq.gguf

say "== quantize $f32 (tool output in $log) =="
step "q8_0, round to nearest" "$bin" quantize -m "$f32" -o "$q8" --type q8_0
step "q4_k_m, round to nearest: llama.cpp's rule" "$bin" quantize -m "$f32" -o "$rtn" --type q4_k_m
step "importance matrix of the calibration stories (edgelm imatrix, as llama-imatrix)" \
  "$bin" imatrix -m "$f32" -f "$out/calib.txt" -c 256 -t 2 -o "$out/imatrix.gguf"
step "q4_k_m with the importance matrix: llama.cpp's best" \
  "$bin" quantize -m "$f32" -o "$imx" --type q4_k_m --imatrix "$out/imatrix.gguf"
step "calibration set: one sample per story (edgelm calib)" \
  "$bin" calib -m "$f32" -i "$out/calib.txt" --split paragraph -n 24 -o "$out/calib.jsonl"
step "q4_k_m by GPTQ on the calibration set" \
  "$bin" quantize -m "$f32" -o "$gptq" --type q4_k_m --method gptq --calib "$out/calib.jsonl" -t 2

say "== evaluate against the F32 model (edgelm eval; report in $out/eval.md, plot in $out/eval.svg) =="
"$bin" eval --ref "$f32" -m "$q8" -m "$rtn" -m "$imx" -m "$gptq" -f "$out/eval.txt" -c 256 \
  --prompts "$out/prompts.txt" -n 64 -t 2 --json --markdown "$out/eval.md" --plot "$out/eval.svg" \
  > "$out/eval.json" 2>>"$log" || { tail -n 20 "$log" >&2; say "demo: edgelm eval failed"; exit 1; }
for m in "$f32" "$q8" "$rtn" "$imx" "$gptq"; do
  printf '%s %s %s\n' "$(basename "$m")" "$(stat -c %s "$m")" \
    "$("$bin" inspect "$m" --json | json 'round(d["bits_per_weight"], 2)')"
done > "$out/sizes.txt"

chunks=$(json '"%d chunks of %d tokens, %d scored tokens" % (d["chunks"], d["n_ctx"], d["scored_tokens"])' \
  < "$out/eval.json")
echo "== accuracy against the F32 model: calibrated on stories 1-24 of $text, evaluated on stories 25-80"
echo "   ($chunks; greedy continuations of $(wc -l < "$out/prompts.txt") prompts, 64 tokens) =="
python3 - "$out/eval.json" "$out/sizes.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
size = {}
for line in open(sys.argv[2]):
    name, nbytes, bpw = line.split()
    size[name] = (int(nbytes), bpw)
made = {"stories260K-f32.gguf": ("f32", "the published checkpoint (baseline)"),
        "stories260K-q8_0.gguf": ("q8_0", "round to nearest"),
        "stories260K-q4_k_m-rtn.gguf": ("q4_k_m", "round to nearest: llama.cpp's rule"),
        "stories260K-q4_k_m-imatrix.gguf": ("q4_k_m", "importance matrix: llama.cpp's best"),
        "stories260K-q4_k_m-gptq.gguf": ("q4_k_m", "edgelm GPTQ")}
fmt = "| %-6s | %-36s | %9s | %11s | %10s | %8s | %7s | %12s |"
print(fmt % ("type", "made by", "bytes", "bits/weight", "perplexity", "KLD", "top-1 %", "similarity %"))
print("|" + "|".join("-" * (w + 2) for w in (6, 36, 9, 11, 10, 8, 7, 12)) + "|")
b = d["baseline"]
rows = [(b["name"], b["ppl"], 0.0, 100.0, 1.0)]
rows += [(m["name"], m["ppl"], m["kld_mean"], m["top1_pct"], m["similarity"]) for m in d["models"]]
for name, ppl, kld, top1, sim in rows:
    t, how = made[name]
    nbytes, bpw = size[name]
    print(fmt % (t, how, f"{nbytes:,}", bpw, f"{ppl:.4f}", "0" if kld == 0 else f"{kld:.5f}",
                 f"{top1:.2f}", f"{100 * sim:.1f}"))
m = {x["name"]: x for x in d["models"]}
g, i, r = (m["stories260K-q4_k_m-%s.gguf" % k] for k in ("gptq", "imatrix", "rtn"))
print()
print("GPTQ q4_k_m against llama.cpp's best q4_k_m, in the same bytes: KLD %.4f vs %.4f (%+.0f%%),\n"
      "top-1 %.2f%% vs %.2f%%; against llama.cpp's plain rule: KLD %.4f vs %.4f (%+.0f%%)."
      % (g["kld_mean"], i["kld_mean"], 100 * (g["kld_mean"] / i["kld_mean"] - 1), g["top1_pct"],
         i["top1_pct"], g["kld_mean"], r["kld_mean"], 100 * (g["kld_mean"] / r["kld_mean"] - 1)))
print("Bits per weight count every tensor: this model's rows of 64 and 172 weights do not fit q4_k's\n"
      "256-weight blocks, so q4_k_m falls back to q5_0, q8_0 and f16 here, as llama-quantize does.")
EOF

# a prompt of about 128 tokens cut from the evaluation text, for the prefill figure
head -c 560 "$out/eval.txt" > "$out/prompt.txt"
say "== measure speed =="
echo
echo "== speed (prompt of $(wc -c < "$out/prompt.txt") bytes, 128 generated tokens, 1 thread; the three q4_k_m files hold the same types) =="
printf '| %-6s | %15s | %14s |\n' type "prefill tok/s" "decode tok/s"
printf '|--------|-----------------|----------------|\n'
for m in "$f32" "$q8" "$gptq"; do
  t=$(basename "$m" .gguf); t=${t#stories260K-}; t=${t%-gptq}
  speed=$("$bin" run -m "$m" -f "$out/prompt.txt" -n 128 --temp 0 --ignore-eos -t 1 --json 2>>"$log" |
          json '"%.0f %.0f" % (d["stats"]["prefill_tps"], d["stats"]["decode_tps"])')
  printf '| %-6s | %15s | %14s |\n' "$t" ${speed}
done

echo
echo "== greedy continuation of \"Once upon a time\" (32 tokens) =="
for m in "$f32" "$q8" "$rtn" "$imx" "$gptq"; do
  t=$(basename "$m" .gguf); t=${t#stories260K-}
  printf '[%s] ' "$t"
  "$bin" run -m "$m" -p "Once upon a time" -n 32 --temp 0 --ignore-eos -t 1 2>>"$log"
done
echo
echo "Full report (KLD median/p99/max, top-5, verdicts): $out/eval.md; plot of size against KLD: $out/eval.svg"
