#!/usr/bin/env bash
# `edgelm eval --ref wide-f32.gguf` on every wide256 reference file (k-quants, i-quants, recipes,
# imatrix ones and the legacy types), in one invocation so the baseline runs once, gives
# llama.cpp's mean KLD within 2% and perplexity within 0.1% (golden/quant_reference.json: the
# whole of stories260K's valid.txt at -c 256, as llama-perplexity --kl-divergence scored it).
# About 3 CPU minutes in a release build; a sanitizer build (about 20 times slower) skips it: the
# same code paths run under the sanitizer in cli_kquant.sh and test_kquant_kernels.
# usage: cli_kquant_eval.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
w=$fx/wide256
refq=$w/reference-quants
golden=$w/golden/quant_reference.json
text=$fx/stories260K/text/valid.txt
. "$(dirname "$0")/lib/cli.sh"
[ -f "$golden" ] && [ -f "$w/wide-f32.gguf" ] || skip "the wide256 fixtures are missing"
ldd "$bin" 2>/dev/null | grep -q 'libasan\|libubsan\|libtsan' && skip "a sanitizer build runs the full-text eval too slowly"

# eval on every reference file against llama.cpp's figures, one baseline run for all
models=()
for f in "$refq"/llamacpp-*.gguf; do
    case $f in *imatrix*) continue ;; esac
    models+=(-m "$f")
done
[ "${#models[@]}" -ge 36 ] || fail "expected at least 18 reference files, found $((${#models[@]} / 2))"
"$bin" eval --ref "$w/wide-f32.gguf" "${models[@]}" -f "$text" -c 256 -t 2 --json \
    >"$tmp/eval.json" 2>"$tmp/err" || fail "eval: $(tail -1 "$tmp/err")"
python3 - "$tmp/eval.json" "$golden" <<'EOF2' && ok || fail "eval differs from llama.cpp's figures"
import json, os, sys
d, g = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert abs(d["baseline"]["ppl"] / g["base_ppl_f32"] - 1) < 1e-3, (d["baseline"]["ppl"], g["base_ppl_f32"])
bad = []
for m in d["models"]:
    name = os.path.basename(m["path"])[:-len(".gguf")]
    ref = g["files"][name]
    kld, ppl = m["kld_mean"] / ref["kld_mean"] - 1, m["ppl"] / ref["ppl"] - 1
    print(f"{name:28} KLD {m['kld_mean']:.6f} vs {ref['kld_mean']:.6f} ({100 * kld:+.2f}%)  "
          f"PPL {m['ppl']:.4f} vs {ref['ppl']:.4f} ({100 * ppl:+.3f}%)")
    if abs(kld) > 0.02 or abs(ppl) > 1e-3:
        bad.append(name)
seen = {os.path.basename(m["path"])[:-len(".gguf")] for m in d["models"]}
assert seen == set(g["files"]), sorted(set(g["files"]) ^ seen)
assert not bad, bad
EOF2

echo "cli_kquant_eval: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
