#!/usr/bin/env bash
# CLI checks of `edgelm run` and `edgelm perplexity`: streaming output, --json fields, and bad
# arguments ending in one error line naming the problem with exit status 1.
# usage: cli_run.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
model=$fx/stories260K/stories260K-f32.gguf
. "$(dirname "$0")/lib/cli.sh"

out=$("$bin" run -m "$model" -p "Once upon a time" -n 8 --temp 0 2>/dev/null)
[ "$out" = "Once upon a time, there was a little girl" ] && ok || fail "greedy text: '$out'"
# a mapped file (--mmap) and one read into memory (the default) give the same tokens
mapped=$("$bin" run -m "$model" -p "Once upon a time" -n 8 --temp 0 --mmap 2>/dev/null)
[ -n "$out" ] && [ "$out" = "$mapped" ] && ok || fail "--mmap output '$mapped' differs from '$out'"
# wide256's Q4_0 and Q4_K read into memory are packed for this CPU's kernels where they pack the
# type (AVX-512, kernels/packed.h), mapped they are not: the same tokens, and logits within float
# reordering (a prompt of 12 tokens, then 12 decode steps: every token count the tiles take)
for q in q4_0 q4_k; do
    f=$fx/wide256/reference-quants/llamacpp-$q-pure.gguf
    [ -f "$f" ] || continue
    for m in "" --mmap; do
        "$bin" run -m "$f" -p "Once upon a time there was a little girl named Lily" -n 12 --temp 0 \
            -t 2 --json --logits 12 $m >"$tmp/$q${m}.json" 2>"$tmp/err" || fail "run $f $m: $(cat "$tmp/err")"
    done
    python3 - "$tmp/$q.json" "$tmp/$q--mmap.json" <<'PY' && ok || fail "packed and mapped $q differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["generated_ids"] == b["generated_ids"], (a["generated_ids"], b["generated_ids"])
worst = max(abs(x - y) for ra, rb in zip(a["logits"], b["logits"]) for x, y in zip(ra, rb))
assert len(a["logits"]) == 12 and worst <= 1e-4, worst
PY
done
stats=$("$bin" run -m "$model" -p "Once upon a time" -n 8 --temp 0 2>&1 >/dev/null)
echo "$stats" | grep -Eq '^load .* ms \| prompt 5 tokens, .* tok/s \| first token .* ms \| generated 8 tokens, .* tok/s \| peak RSS .* MiB$' \
  && ok || fail "stats line: '$stats'"
"$bin" run -m "$model" -p "Once upon a time" -n 8 --temp 0 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["prompt_ids"] == [1, 403, 407, 261, 378], d["prompt_ids"]
assert len(d["generated_ids"]) == 8
assert d["text"] == ", there was a little girl", d["text"]
for k in ("load_ms", "prompt_tokens", "prefill_tps", "ttft_ms", "generated_tokens", "decode_tps", "peak_rss_mib"):
    assert k in d["stats"], k
' && ok || fail "run --json"
# same seed, same sampled text
a=$("$bin" run -m "$model" -p "Lily" -n 16 -s 7 --temp 1 2>/dev/null)
b=$("$bin" run -m "$model" -p "Lily" -n 16 -s 7 --temp 1 2>/dev/null)
[ "$a" = "$b" ] && ok || fail "seeded sampling not deterministic"
"$bin" run --help | grep -q -- "--temp" && ok || fail "run --help"

expect_error "missing model" "no-such.gguf: No such file" "$bin" run -m "$tmp/no-such.gguf" -p hi
expect_error "ctx 0" "invalid value '0'" "$bin" run -m "$model" -p hi -c 0
expect_error "prompt longer than context" "prompt has 9 tokens, longer than the context of 4" \
  "$bin" run -m "$model" -p "Lily and Ben are friends" -c 4
expect_error "unknown option" "unknown option '--bogus'" "$bin" run -m "$model" -p hi --bogus
expect_error "bad temp" "invalid value 'x'" "$bin" run -m "$model" -p hi --temp x
expect_error "no prompt" "-p PROMPT" "$bin" run -m "$model"
expect_error "ppl ctx 0" "invalid value .0. (expected an integer in 4" "$bin" perplexity -m "$model" -f "$fx/stories260K/text/valid.txt" -c 0
expect_error "ppl missing text" "nope.txt" "$bin" perplexity -m "$model" -f "$tmp/nope.txt"
head -c 5000 "$model" >"$tmp/binary.txt"
expect_error "ppl on a binary file" "binary.txt: a NUL byte at offset 5: a binary file, not text" \
    "$bin" perplexity -m "$model" -f "$tmp/binary.txt"
expect_error "run -f on a binary file" "binary.txt: a NUL byte" "$bin" run -m "$model" -f "$tmp/binary.txt"
expect_error "ppl short text" "need at least" "$bin" perplexity -m "$model" -f "$fx/stories260K/text/prompts.txt" -c 256
expect_error "unknown command" "unknown command" "$bin" frobnicate
expect_error "help for an unknown command" "unknown command 'frobnicate'" "$bin" help frobnicate
"$bin" help run | grep -q -- "--temp" && ok || fail "edgelm help run"
# a context past the trained one (stories260K: 512) runs, with a warning; the default has none
"$bin" run -m "$model" -p hi -n 2 -c 1024 >/dev/null 2>"$tmp/warn" &&
    grep -q "warning: -c 1024 is past .*trained context of 512 tokens" "$tmp/warn" && ok ||
    fail "-c past the trained context: $(cat "$tmp/warn")"
"$bin" run -m "$model" -p hi -n 2 >/dev/null 2>"$tmp/warn" && ! grep -q warning "$tmp/warn" && ok ||
    fail "default -c warned: $(cat "$tmp/warn")"
"$bin" --version | grep -Eq '^edgelm [0-9]+\.[0-9]+\.[0-9]+$' && ok || fail "edgelm --version"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
