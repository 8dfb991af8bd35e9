#!/usr/bin/env bash
# make demo: the main job end to end on the model inside the repository — quantize the F32 demo
# model to q8_0 and q4_0, measure each (size, bits per weight, perplexity, prefill and decode
# speed) in one table, then show each one's greedy continuation of "Once upon a time".
set -euo pipefail
bin=${1:-build/edgelm}
out=build/demo
f32=demo/stories260K-f32.gguf
text=demo/valid.txt
mkdir -p "$out"

json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }

echo "== quantize (round-to-nearest) =="
"$bin" quantize -m "$f32" -o "$out/stories260K-q8_0.gguf" --type q8_0
"$bin" quantize -m "$f32" -o "$out/stories260K-q4_0.gguf" --type q4_0
models=("$f32" "$out/stories260K-q8_0.gguf" "$out/stories260K-q4_0.gguf")
names=(f32 q8_0 q4_0)

# a prompt of about 128 tokens cut from the evaluation text, for the prefill figure
head -c 560 "$text" > "$out/prompt.txt"

echo
echo "== measure (perplexity on demo/valid.txt, -c 256; speed: prompt of $(wc -c < "$out/prompt.txt") bytes, 128 generated tokens, 1 thread) =="
printf '| %-5s | %9s | %15s | %10s | %15s | %14s |\n' type "file KiB" "bits/weight" perplexity "prefill tok/s" "decode tok/s"
printf '|-------|-----------|-----------------|------------|-----------------|----------------|\n'
for i in "${!models[@]}"; do
  m=${models[$i]}
  kib=$(( $(stat -c %s "$m") / 1024 ))
  bpw=$("$bin" inspect "$m" --json | json 'round(d["bits_per_weight"], 2)')
  ppl=$("$bin" perplexity -m "$m" -f "$text" -c 256 -t 2 --json 2>/dev/null | json 'round(d["ppl"], 4)')
  speed=$("$bin" run -m "$m" -f "$out/prompt.txt" -n 128 --temp 0 --ignore-eos -t 1 --json |
          json '"%.0f %.0f" % (d["stats"]["prefill_tps"], d["stats"]["decode_tps"])')
  printf '| %-5s | %9s | %15s | %10s | %15s | %14s |\n' "${names[$i]}" "$kib" "$bpw" "$ppl" ${speed}
done

echo
echo "== greedy continuation of \"Once upon a time\" (32 tokens) =="
for i in "${!models[@]}"; do
  printf '[%s] ' "${names[$i]}"
  "$bin" run -m "${models[$i]}" -p "Once upon a time" -n 32 --temp 0 --ignore-eos -t 1 2>/dev/null
done

echo
echo "== accuracy against the F32 baseline (edgelm eval; plot in $out/eval.svg) =="
printf '%s\n' "Once upon a time" "Lily and Ben went to the park" "Tom had a big red ball" \
  "One day, a little bird" "Sam and his mom baked a cake" > "$out/prompts.txt"
"$bin" eval --ref "$f32" -m "$out/stories260K-q8_0.gguf" -m "$out/stories260K-q4_0.gguf" -f "$text" -c 256 \
  --prompts "$out/prompts.txt" -n 64 -t 2 --plot "$out/eval.svg" --markdown "$out/eval.md" 2>/dev/null
