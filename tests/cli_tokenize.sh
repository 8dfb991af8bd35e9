#!/usr/bin/env bash
# CLI test of `edgelm tokenize`: the golden ids of "Once upon a time" from each model layout and
# output form, text from a file, byte-level vocabs and --special, vocab files of architectures
# edgelm does not run (tokenize, inspect, run refused), and bad input (exit status 1, one "edgelm: ..." line on stderr,
# nothing on stdout). Usage: bash tests/cli_tokenize.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
gguf=$fix/stories260K/stories260K-f32.gguf
. "$(dirname "$0")/lib/cli.sh"

# expect_out WANT ARGS...: exit 0 and stdout exactly WANT
expect_out() {
    local want=$1 got
    shift
    got=$("$bin" tokenize "$@" 2>"$tmp/err") ||
        fail "tokenize $*: exit status $?: $(cat "$tmp/err")"
    [ "$got" = "$want" ] || fail "tokenize $*: got '$got', want '$want'"
}

# tokenize_error PATTERN ARGS...: expect_error on `edgelm tokenize ARGS`, which prints nothing on stdout
tokenize_error() {
    local pattern=$1
    shift
    expect_error "tokenize $*" "$pattern" "$bin" tokenize "$@"
    [ ! -s "$tmp/expect.out" ] || fail "tokenize $*: printed on stdout: $(cat "$tmp/expect.out")"
}

text="Once upon a time"
ids="[1, 403, 407, 261, 378]"
expect_out "$ids" -m "$gguf" -p "$text" --ids
expect_out "$ids" -m "$fix/stories260K/hf-f32" -p "$text" --ids
expect_out "$ids" -m "$fix/stories260K/model.bin" --tokenizer "$fix/stories260K/tok512.bin" \
    -p "$text" --ids
expect_out "[403, 407, 261, 378]" -m "$gguf" -p "$text" --ids --no-bos
expect_out '{"ids":[1,403,407,261,378],"pieces":["<s>"," Once"," upon"," a"," time"]}' \
    -m "$gguf" -p "$text" --json
listing=$(printf "1\t'<s>'\n403\t' Once'\n407\t' upon'\n261\t' a'\n378\t' time'")
expect_out "$listing" -m "$gguf" -p "$text"
printf '%s' "$text" >"$tmp/prompt.txt"
expect_out "$ids" -m "$gguf" -f "$tmp/prompt.txt" --ids
expect_out "[1]" -m "$gguf" -p "" --ids

"$bin" tokenize --help >"$tmp/out" 2>&1 || fail "--help: exit status $?"
grep -q "^usage: edgelm tokenize" "$tmp/out" || fail "--help prints no usage"

head -c 1000 "$gguf" >"$tmp/truncated.gguf"
tokenize_error "truncated.gguf" -m "$tmp/truncated.gguf" -p "$text"
tokenize_error "missing.gguf" -m "$tmp/missing.gguf" -p "$text"
tokenize_error "missing.txt" -m "$gguf" -f "$tmp/missing.txt"
# byte-level vocabs (GPT-2: no BOS by default); control tokens only with --special
bpe=$fix/vocab/ggml-vocab-qwen2.gguf
expect_out "[15496, 995]" -m "$fix/vocab/ggml-vocab-gpt-2.gguf" -p "Hello world" --ids
expect_out "[151644, 872]" -m "$bpe" -p "<|im_start|>user" --ids --special
expect_out "[27, 91, 318, 4906, 91, 29, 872]" -m "$bpe" -p "<|im_start|>user" --ids
# llama.cpp's test case 19 ("w048 7tuijk dsdfhu": digits, letters, spaces) of the vocabs whose
# pre-tokenizers differ in how they cut it, against the ids in its .out (line 20)
for name in mpt refact command-r deepseek-coder qwen35 gemma-4; do
    vocab=$fix/vocab/ggml-vocab-$name.gguf
    case_text=$(awk -v RS='\n__ggml_vocab_test__\n' 'NR == 20' "$vocab.inp")
    want=$(sed -n 20p "$vocab.out" | sed 's/^ *//; s/ *$//; s/ /, /g')
    [ -n "$case_text" ] && [ -n "$want" ] || fail "$name: case 19 not found in $vocab.inp/.out"
    expect_out "[$want]" -m "$vocab" -p "$case_text" --ids --no-bos
done
# any vocab file: inspect shows one whose architecture edgelm does not run (or that has no
# tensors) as read; running it is refused with the architectures edgelm runs
for name in mpt refact command-r gemma-4 llama-bpe; do
    vocab=$fix/vocab/ggml-vocab-$name.gguf
    "$bin" inspect "$vocab" >"$tmp/inspect.txt" 2>"$tmp/err" ||
        fail "inspect $name: exit status $?: $(cat "$tmp/err")"
    grep -q "^not bound  " "$tmp/inspect.txt" && grep -q "^vocab  *[0-9]* tokens" "$tmp/inspect.txt" ||
        fail "inspect $name: $(cat "$tmp/inspect.txt")"
done
"$bin" inspect "$fix/vocab/ggml-vocab-mpt.gguf" --json >"$tmp/inspect.json" ||
    fail "inspect --json mpt: exit status $?"
grep -q '"hparams":[[:space:]]*null' "$tmp/inspect.json" && grep -q '"n_tokens":[[:space:]]*50432' "$tmp/inspect.json" ||
    fail "inspect --json mpt: $(head -c 400 "$tmp/inspect.json")"
expect_error "run mpt vocab" "ggml-vocab-mpt.gguf: unsupported architecture 'mpt' (edgelm runs llama" \
    "$bin" run -m "$fix/vocab/ggml-vocab-mpt.gguf" -p "Hi" -n 1
expect_error "run command-r vocab" "unsupported architecture 'command-r' (edgelm runs llama" \
    "$bin" run -m "$fix/vocab/ggml-vocab-command-r.gguf" -p "Hi" -n 1
tokenize_error "-p TEXT or -f FILE" -m "$gguf"
tokenize_error "unknown option" -m "$gguf" -p "$text" --bogus
tokenize_error "needs a value" -m "$gguf" -p

[ "$failed" -eq 0 ] && echo "cli_tokenize: all passed"
exit $((failed > 0))
