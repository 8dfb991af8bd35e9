#!/usr/bin/env bash
# CLI checks of chat templates with a thinking switch and of template detection: `chat --think
# on|off` picks the Qwen3 variant (shown by /stats), --think on a template without the switch and
# a bad value are refused, and a model whose chat template no built-in one matches is refused with
# the --template names. Tiny synth models (Qwen2's vocabulary: a ChatML template). Gemma 4's
# tokenizer brings its GGUF's template: detected, with its own BOS only, in a GGUF and in a Hugging
# Face folder that keeps it in chat_template.jinja.
# usage: cli_chat_think.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"

model=$tmp/qwen3.gguf
"$bin" synth --arch qwen3 --tiny -o "$model" --vocab "$fx/vocab/ggml-vocab-qwen2.gguf" -s 3 \
    >/dev/null 2>"$tmp/err" || { fail "synth: $(cat "$tmp/err")"; exit 1; }

# turn_stats MODEL ARGS...: "N T", the prompt tokens and the template /stats reports after one
# short turn
turn_stats() {
    local m=$1
    shift
    printf 'Hi\n/stats\n' | "$bin" chat -m "$m" -n 2 --temp 0 -t 1 "$@" 2>&1 |
        sed -n 's/^prompt \([0-9]*\) tokens.* template \([a-z0-9-]*\) .*/\1 \2/p' | head -1
}
# chat_stats ARGS...: "template T" of $model
chat_stats() {
    echo "template $(turn_stats "$model" "$@" | cut -d' ' -f2)"
}
[ "$(chat_stats)" = "template chatml" ] && ok || fail "auto: '$(chat_stats)', want chatml"
[ "$(chat_stats --template qwen3)" = "template qwen3" ] && ok || fail "--template qwen3"
[ "$(chat_stats --template qwen3 --think off)" = "template qwen3-no-think" ] && ok ||
    fail "--think off: '$(chat_stats --template qwen3 --think off)'"
[ "$(chat_stats --template qwen3-no-think --think on)" = "template qwen3" ] && ok ||
    fail "--think on"
[ "$(chat_stats --template smollm3 --think off)" = "template smollm3-no-think" ] && ok ||
    fail "smollm3 --think off"
expect_error "--think on chatml" "template chatml has no thinking switch" \
    "$bin" chat -m "$model" --think off </dev/null
expect_error "--think maybe" "--think: invalid value 'maybe'" \
    "$bin" chat -m "$model" --template qwen3 --think maybe </dev/null
expect_error "--template vicuna" "invalid value 'vicuna' (expected auto, plain, llama2" \
    "$bin" chat -m "$model" --template vicuna </dev/null

# the same model with its template's "<|im_start|>" spelled otherwise (same length, so the GGUF
# stays valid): no built-in template matches it
python3 - "$model" "$tmp/odd.gguf" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
key = b"tokenizer.chat_template"
at = data.index(key) + len(key) + 4  # value type u32
n = struct.unpack_from("<Q", data, at)[0]
start = at + 8
value = bytes(data[start:start + n]).replace(b"<|im_start|>", b"<|xx_start|>")
data[start:start + n] = value
open(sys.argv[2], "wb").write(data)
PY
expect_error "unrecognised template" "odd.gguf: chat template not recognised (choose one with --template: plain, llama2" \
    "$bin" chat -m "$tmp/odd.gguf" </dev/null
printf 'Hi\n' | "$bin" chat -m "$tmp/odd.gguf" --template chatml -n 2 --temp 0 -t 1 >/dev/null 2>&1 &&
    ok || fail "an unrecognised template with --template chatml does not chat"

# Gemma 4: the prompt of "Hi" is <bos> <|turn> user \n Hi <turn|> \n <|turn> model \n <|channel>
# thought \n <channel|>, 14 tokens (no second BOS although the tokenizer adds one); with thinking on
# <|turn> system \n <|think|> \n <turn|> \n replace the empty channel's 4: 17
gemma=$tmp/gemma4.gguf
"$bin" synth --arch gemma3 --tiny -o "$gemma" --hf "$tmp/gemma4-hf" -s 3 \
    --vocab "$fx/vocab/ggml-vocab-gemma-4.gguf" >/dev/null 2>"$tmp/err" || fail "synth: $(cat "$tmp/err")"
[ "$(turn_stats "$gemma")" = "14 gemma4" ] && ok || fail "gemma4 auto: '$(turn_stats "$gemma")'"
[ "$(turn_stats "$gemma" --think on)" = "17 gemma4-think" ] && ok ||
    fail "gemma4 --think on: '$(turn_stats "$gemma" --think on)'"
python3 - "$tmp/gemma4-hf" <<'PY'
import json, sys
path = sys.argv[1] + "/tokenizer_config.json"
config = json.load(open(path))
open(sys.argv[1] + "/chat_template.jinja", "w").write(config.pop("chat_template"))
json.dump(config, open(path, "w"))
PY
[ "$(turn_stats "$tmp/gemma4-hf")" = "14 gemma4" ] && ok ||
    fail "gemma4 from chat_template.jinja: '$(turn_stats "$tmp/gemma4-hf")'"

[ "$failed" -eq 0 ] && echo "cli_chat_think: all passed"
exit $((failed > 0))
