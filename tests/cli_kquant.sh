#!/usr/bin/env bash
# CLI checks of llama.cpp's k-quant and i-quant files (Q2_K..Q6_K, IQ4_NL, IQ4_XS; wide256
# fixtures): the commands that load a model run them (inspect, run, perplexity, bench, plan); every
# kernel table gives the scalar oracle's greedy tokens; bad files (a k-quant row that is not a
# multiple of 256, a truncated super-block) end in one error line naming the file and the tensor.
# The figures against llama.cpp's are cli_kquant_eval.sh's.
# usage: cli_kquant.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
w=$fx/wide256
refq=$w/reference-quants
golden=$w/golden/quant_reference.json
text=$fx/stories260K/text/valid.txt
. "$(dirname "$0")/lib/cli.sh"
[ -f "$golden" ] && [ -f "$w/wide-f32.gguf" ] || skip "the wide256 fixtures are missing"

# bad files: a row of 128 in a q4_k tensor (the element count kept), a file cut inside a block
q4k=$refq/llamacpp-q4_k-pure.gguf
python3 - "$q4k" "$tmp/row.gguf" <<'EOF2' || fail "could not patch $q4k"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
name = b"blk.0.attn_q.weight"
i = b.find(struct.pack("<Q", len(name)) + name)
assert i > 0 and struct.unpack_from("<I", b, i + 8 + len(name))[0] == 2
struct.pack_into("<QQ", b, i + 12 + len(name), 128, 512)
open(sys.argv[2], "wb").write(b)
EOF2
head -c $(($(stat -c %s "$q4k") - 100)) "$q4k" >"$tmp/cut.gguf"
for cmd in inspect run; do
    args=("$tmp/row.gguf")
    [ "$cmd" = run ] && args=(-m "$tmp/row.gguf" -p hi -n 1)
    expect_error "$cmd row" "$tmp/row.gguf: tensor 'blk.0.attn_q.weight' row of 128 is not a multiple of the q4_k block size 256" \
        "$bin" "$cmd" "${args[@]}"
    args=("$tmp/cut.gguf")
    [ "$cmd" = run ] && args=(-m "$tmp/cut.gguf" -p hi -n 1)
    expect_error "$cmd cut" "$tmp/cut.gguf: tensor 'blk.1.ffn_up.weight' .*past end of file" \
        "$bin" "$cmd" "${args[@]}"
done

# every command that loads a model, on each type
for f in q2_k-pure q3_k-pure q4_k-pure q5_k-pure q6_k-pure iq4_nl-pure iq4_xs-pure q4_k_m; do
    m=$refq/llamacpp-$f.gguf
    "$bin" inspect "$m" >"$tmp/out" 2>&1 || { fail "inspect $f: $(tail -1 "$tmp/out")"; continue; }
    ok
    "$bin" plan -m "$m" >"$tmp/out" 2>&1 && ok || fail "plan $f: $(tail -1 "$tmp/out")"
    "$bin" bench -m "$m" -p 32 -n 4 -r 1 -t 2 --membw-mib 16 --json >"$tmp/out" 2>"$tmp/err" &&
        python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/out" && ok ||
        fail "bench $f: $(tail -1 "$tmp/err")"
    # greedy tokens: every kernel table as the scalar one (prefill by tiles, decode one by one)
    for isa in scalar avx2 avx512 neon; do
        EDGELM_ISA=$isa "$bin" run -m "$m" -p "Once upon a time there was a little girl" -n 12 \
            --temp 0 --ignore-eos -t 2 --json >"$tmp/$isa.json" 2>"$tmp/err" ||
            { fail "run $f ($isa): $(tail -1 "$tmp/err")"; continue; }
    done
    for isa in avx2 avx512 neon; do
        python3 - "$tmp/scalar.json" "$tmp/$isa.json" <<'EOF2' && ok || fail "run $f: $isa tokens differ from scalar"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["generated_ids"] == b["generated_ids"] and len(a["generated_ids"]) == 12, (a, b)
EOF2
    done
done
head -c 5000 "$text" >"$tmp/text.txt"
"$bin" perplexity -m "$refq/llamacpp-q4_k_m.gguf" -f "$tmp/text.txt" -c 128 -t 2 --json >"$tmp/ppl.json" 2>"$tmp/err" &&
    python3 -c 'import json, math, sys; p = json.load(open(sys.argv[1]))["ppl"]; assert 1 < p < 1e4, p' \
        "$tmp/ppl.json" && ok || fail "perplexity of llamacpp-q4_k_m: $(tail -1 "$tmp/err")"

echo "cli_kquant: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
