#!/usr/bin/env bash
# The sub-4-bit recipes (q2_k_s, iq1_s .. iq3_m) byte for byte against llama-quantize: `quantize
# --type RECIPE --imatrix` of wide256 and stories260K with their importance matrices, every
# tensor's type and bytes as llama-quantize wrote them (tests/data/iquant_recipes.json,
# scripts/iquant_recipes_golden.sh). A tensor whose recipe type edgelm reads but does not write
# yet (the list of writable types is `quantize --help`'s) is put at q8_0 with --tensor-type, so the
# others are still written and compared; those tensors are reported as skipped, not passed. The
# type choice of every tensor, those included, is test_iquant_recipes'.
# Usage: bash tests/cli_iquant_recipes.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1 fix=$2
. "$(dirname "$0")/lib/cli.sh"
golden=$(dirname "$0")/data/iquant_recipes.json
[ -f "$fix/wide256/wide-f32.gguf" ] && [ -f "$fix/stories260K/stories260K-f32.gguf" ] ||
    skip "the wide256 or stories260K fixtures are missing"
writable=$("$bin" quantize --help | sed -n 's/^types: *//p')
[ -n "$writable" ] || fail "no 'types:' line in quantize --help"
: >"$tmp/skipped"

for model in wide256:wide256/wide-f32.gguf stories260K:stories260K/stories260K-f32.gguf; do
    name=${model%%:*} path=$fix/${model#*:}
    im=$fix/$name/reference-quants/llamacpp-imatrix-calib.gguf
    for r in $(python3 -c 'import json, sys; print(*json.load(open(sys.argv[1]))[sys.argv[2]])' "$golden" "$name"); do
        # --tensor-type NAME=q8_0 for each tensor of a type edgelm does not write
        python3 - "$golden" "$name" "$r" "$writable" >"$tmp/skip" <<'PY'
import json, sys
golden, model, recipe, writable = sys.argv[1:]
# ggml type ids of the types these recipes write
names = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 10: "q2_k",
         11: "q3_k", 12: "q4_k", 13: "q5_k", 14: "q6_k", 16: "iq2_xxs", 17: "iq2_xs",
         18: "iq3_xxs", 19: "iq1_s", 20: "iq4_nl", 21: "iq3_s", 22: "iq2_s", 23: "iq4_xs",
         29: "iq1_m"}
can = {w.strip() for w in writable.split(",")}
for tensor, (t, _) in sorted(json.load(open(golden))[model][recipe].items()):
    if names[t] not in can:
        print(tensor, names[t])
PY
        args=()
        while read -r tensor type; do
            args+=(--tensor-type "$tensor=q8_0")
            echo "$name $r $tensor $type" >>"$tmp/skipped"
        done <"$tmp/skip"
        "$bin" quantize -m "$path" -o "$tmp/q.gguf" --type "$r" --imatrix "$im" "${args[@]}" -t 2 \
            >/dev/null 2>"$tmp/err" || { fail "$name $r: quantize: $(tail -1 "$tmp/err")"; continue; }
        python3 tests/lib/gguf_tensors.py "$tmp/q.gguf" >"$tmp/q.json"
        python3 - "$golden" "$name" "$r" "$tmp/q.json" "$tmp/skip" <<'PY' && ok || fail "$name $r differs from llama-quantize"
import json, sys
want = json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]]
got = json.load(open(sys.argv[4]))
skipped = {line.split()[0] for line in open(sys.argv[5])}
bad = [n for n in want if n not in skipped and got.get(n) != want[n]] + [n for n in got if n not in want]
for n in bad[:5]:
    print(f"  {n}: llama-quantize {want.get(n, ['-'])[0]}, edgelm {got.get(n, ['-'])[0]}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    done
done

# without the importance matrix llama-quantize requires: one line naming the type and the recipe
wide=$fix/wide256/wide-f32.gguf
expect_error "iq1_s without an imatrix" "iq1_s needs an importance matrix (--imatrix FILE).*'blk.0.attn_q.weight', iq1_s)" \
    "$bin" quantize -m "$wide" -o "$tmp/no.gguf" --type iq1_s
expect_error "q2_k_s without an imatrix" "q2_k needs an importance matrix (--imatrix FILE).*'blk.0.attn_q.weight', q2_k_s)" \
    "$bin" quantize -m "$wide" -o "$tmp/no.gguf" --type q2_k_s
[ -e "$tmp/no.gguf" ] && fail "a refused quantize left its output"

if [ -s "$tmp/skipped" ]; then
    echo "cli_iquant_recipes: skipped $(wc -l <"$tmp/skipped") tensors of types edgelm does not write yet" \
        "($(awk '{print $4}' "$tmp/skipped" | sort -u | tr '\n' ' ')), in recipes:" \
        "$(awk '{print $1 "/" $2}' "$tmp/skipped" | sort -u | tr '\n' ' ')"
fi
[ "$failed" -eq 0 ] && echo "cli_iquant_recipes: all $passed passed (22 recipe files' written tensors equal llama-quantize's)"
exit $((failed > 0))
