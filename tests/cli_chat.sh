#!/usr/bin/env bash
# CLI checks of `edgelm chat` and the runtime options of `edgelm run`: multi-turn chat from piped
# stdin with /stats, a session saved by one process and restored by another continuing with the
# same greedy reply, corrupted and mismatched sessions refused with one error line, generation
# through context shifts, speculative and prompt-lookup decoding matching plain greedy output,
# quantized KV caches, --verbose-prompt's turns, and the example chat program built on the app
# API.
# usage: cli_chat.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
model=$fx/stories260K/stories260K-f32.gguf
q4=$fx/stories260K/reference-quants/llamacpp-q4_0-pure.gguf
. "$(dirname "$0")/lib/cli.sh"

# --- run: context shift, speculation, KV cache types
n=$("$bin" run -t 1 -m "$model" -p "Once upon a time" -c 64 -n 300 --temp 0 --ignore-eos --json |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["generated_ids"]))')
[ "$n" = 300 ] && ok || fail "run -c 64 -n 300 generated '$n' tokens"
n=$("$bin" run -t 1 -m "$model" -p "Once upon a time" -c 32 -n 100 --temp 0 --ignore-eos --no-context-shift --json |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["generated_ids"]))')
[ "$n" = 28 ] && ok || fail "--no-context-shift: '$n' tokens in a 32-token context"

plain=$("$bin" run -t 1 -m "$model" -p "Lily and Ben" -n 48 --temp 0 --ignore-eos 2>/dev/null)
for opts in "--draft $q4" "--draft $q4 --draft-max 3 --draft-min-p 0.9" "--lookup 4"; do
  # shellcheck disable=SC2086
  out=$("$bin" run -t 1 -m "$model" -p "Lily and Ben" -n 48 --temp 0 --ignore-eos $opts 2>/dev/null)
  [ "$out" = "$plain" ] && ok || fail "greedy with $opts differs: '$out' vs '$plain'"
done
# through context shifts too: speculation shifts where plain decoding does
plain=$("$bin" run -t 1 -m "$model" -p "Lily and Ben" -c 48 -n 150 --temp 0 --ignore-eos 2>/dev/null)
for opts in "--draft $q4" "--lookup 3"; do
  # shellcheck disable=SC2086
  out=$("$bin" run -t 1 -m "$model" -p "Lily and Ben" -c 48 -n 150 --temp 0 --ignore-eos $opts 2>/dev/null)
  [ "$out" = "$plain" ] && ok || fail "greedy through shifts with $opts differs"
done
"$bin" run -t 1 -m "$model" -p "Lily and Ben" -n 24 --temp 0 --draft "$q4" --json | python3 -c '
import json, sys
s = json.load(sys.stdin)["stats"]
sp = s["speculative"]
assert sp["drafted"] > 0 and 0 <= sp["acceptance_rate"] <= 1, sp
assert sp["tokens_per_pass"] >= 1 and sp["speedup"] > 0, sp
assert s["kv_cache_bytes"] > 0 and s["cache_type_k"] == "f32", s
' && ok || fail "run --json speculative stats"
err=$("$bin" run -t 1 -m "$model" -p "Lily" -n 8 --temp 0 --draft "$q4" 2>&1 >/dev/null)
printf '%s' "$err" | grep -q '^speculative: drafted [0-9]*, accepted [0-9]* (.*%), .* tokens/pass, .* speedup' \
  && ok || fail "speculative stats line: '$err'"
err=$("$bin" run -t 1 -m "$model" -p "Lily" -n 8 --temp 0 --cache-type-k q8_0 --cache-type-v q4_0 2>&1 >/dev/null)
printf '%s' "$err" | grep -q 'KV cache q8_0/q4_0 0.16 MiB$' && ok || fail "KV cache summary: '$err'"
expect_error "bad cache type" "invalid value 'q5_1'" "$bin" run -t 1 -m "$model" -p hi --cache-type-v q5_1

# --- chat from piped stdin
out=$(printf 'Tell me a story about a cat.\nWhat did the cat do next?\n/stats\n' |
      "$bin" chat -t 1 -m "$model" --template llama2 --system "You tell stories." --temp 0 -n 24 2>"$tmp/err")
[ "$(printf '%s\n' "$out" | grep -c '^prompt [0-9]* tokens')" = 1 ] && ok || fail "chat /stats: '$out'"
printf '%s' "$out" | grep -q 'template llama2 | context [0-9]*/512 | KV cache f32/f32' && ok || fail "chat stats fields: '$out'"
[ ! -s "$tmp/err" ] && ok || fail "piped chat wrote to stderr: $(cat "$tmp/err")"

# gpt-oss's harmony: the system text as the developer message's instructions, the user message,
# the assistant's header (its vocabulary's markers would be kept as text in the reply)
printf 'Hi\n' | "$bin" chat -t 1 -m "$model" --template gpt-oss --system "Be brief." --temp 0 -n 4 \
    --verbose-prompt >/dev/null 2>"$tmp/err"
grep -q '^Reasoning: medium$' "$tmp/err" &&
    grep -q '^<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant$' "$tmp/err" &&
    grep -q '<|start|>developer<|message|># Instructions$' "$tmp/err" && ok ||
    fail "gpt-oss chat prompt: $(cat "$tmp/err")"
printf 'Hi\n' | "$bin" chat -t 1 -m "$model" --template gpt-oss --reasoning-effort high --temp 0 -n 4 \
    --verbose-prompt >/dev/null 2>"$tmp/err"
grep -q '^Reasoning: high$' "$tmp/err" && ok || fail "--reasoning-effort high: $(cat "$tmp/err")"
expect_error "--reasoning-effort max" "--reasoning-effort: invalid value 'max' (expected low, medium" \
    "$bin" chat -t 1 -m "$model" --template gpt-oss --reasoning-effort max
# a session saved by one process continues in another with the same greedy reply
a=$(printf 'Tell me a story about a cat.\n/save %s\nWhat did the cat do next?\n' "$tmp/s.session" |
    "$bin" chat -t 1 -m "$model" --template llama2 --temp 0 -n 24 2>/dev/null)
b=$(printf '/load %s\nWhat did the cat do next?\n' "$tmp/s.session" |
    "$bin" chat -t 1 -m "$model" --template llama2 --temp 0 -n 24 2>"$tmp/err")
[ -n "$b" ] && [ "${a%"$b"}" != "$a" ] && ok || fail "restored session replies '$b', original '$a'"
grep -q "loaded $tmp/s.session ([0-9]* tokens)" "$tmp/err" && ok || fail "load notice: $(cat "$tmp/err")"

cp "$tmp/s.session" "$tmp/bad.session"
printf '\x55' | dd of="$tmp/bad.session" bs=1 seek=300 conv=notrunc 2>/dev/null
head -c 100 "$tmp/s.session" >"$tmp/short.session"
# from a pipe a failed command ends the chat: one error line, exit 1, no reply to what follows
printf '/load %s\nhello\n' "$tmp/bad.session" >"$tmp/in1"
printf '/load %s\n' "$tmp/short.session" >"$tmp/in2"
printf '/load %s\n' "$tmp/s.session" >"$tmp/in3"
printf '/frob\n' >"$tmp/in4"
expect_error "corrupted session" "bad.session: session checksum mismatch" \
  "$bin" chat -t 1 -m "$model" --template llama2 <"$tmp/in1"
out=$("$bin" chat -t 1 -m "$model" --template llama2 <"$tmp/in1" 2>/dev/null)
[ -z "$out" ] && ok || fail "chat went on after a failed /load: '$out'"
expect_error "truncated session" "short.session: session file is 100 bytes" \
  "$bin" chat -t 1 -m "$model" <"$tmp/in2"
expect_error "session of another model" "other weights" "$bin" chat -t 1 -m "$q4" <"$tmp/in3"
expect_error "session with another KV cache type" "session KV cache is f32/f32" \
  "$bin" chat -t 1 -m "$model" --cache-type-k q8_0 <"$tmp/in3"
expect_error "unknown command" "unknown command '/frob'" "$bin" chat -t 1 -m "$model" <"$tmp/in4"

expect_error "bad template" "invalid value 'vicuna'" "$bin" chat -t 1 -m "$model" --template vicuna
expect_error "rag without context" "needs --context" "$bin" chat -t 1 -m "$model" --preset rag
printf 'The cat is black.\n' >"$tmp/ctx.txt"
out=$(printf 'What color is the cat?\n' | "$bin" chat -t 1 -m "$model" --preset rag --context "$tmp/ctx.txt" -n 8 2>/dev/null)
[ $? -eq 0 ] && [ -n "$out" ] && ok || fail "chat --preset rag"
# --verbose-prompt: each turn's text as the template renders it, on stderr
printf 'hi\nmore\n' | "$bin" chat -t 1 -m "$model" --template plain --system "You tell stories." -n 4 --temp 0 \
    --verbose-prompt 2>"$tmp/err" >/dev/null
[ "$(cat "$tmp/err")" = "$(printf 'edgelm: prompt:\nYou tell stories.\n\nUser: hi\nAssistant:\nedgelm: end of prompt\nedgelm: prompt:\n\nUser: more\nAssistant:\nedgelm: end of prompt')" ] &&
    ok || fail "--verbose-prompt: '$(cat "$tmp/err")'"
"$bin" chat --help | grep -q -- "/save FILE" && ok || fail "chat --help"

# --- the example chat program (app API)
ex=$(dirname "$bin")/example_chat
if [ -x "$ex" ]; then
  out=$(printf 'Hello!\nTell me more.\n' | "$ex" "$model" "You tell stories." 1 2>"$tmp/err")
  [ $? -eq 0 ] && [ "$(grep -c 'first token' "$tmp/err")" = 2 ] && ok || fail "example_chat: $(cat "$tmp/err")"
else
  fail "example_chat not built next to $bin"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
