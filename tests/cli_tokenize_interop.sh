#!/usr/bin/env bash
# Tokenization against llama.cpp on vocabularies whose pre-tokenizer no fixture has: Qwen2's and
# Llama 3's BPE vocabularies (ggml-vocab-qwen2.gguf, whose digits are single tokens, and
# ggml-vocab-llama-bpe.gguf, which has tokens of up to 3 digits) relabelled with another
# tokenizer.ggml.pre
# (tests/lib/gguf_vocab.py set-pre), tokenized by `edgelm tokenize` and by llama.cpp
# (node-llama-cpp@3.21.1's prebuilt CPU library, scripts/node-llama.sh; tests/interop/tokenize.mjs)
# on text that tells pre-tokenizers apart (contractions, case runs, digit runs, CJK, accents,
# punctuation, paths, newlines and spaces): the same ids for every text. gpt-4o is o200k's, the
# pre-tokenizer of gpt-oss (o200k_harmony) and Llama 4. Each name must also cut some text
# otherwise than the vocabulary's own pre-tokenizer, so that a relabelled file ignored would fail. Skipped (exit 77, one
# line) when node is missing or npm cannot reach the registry.
# usage: cli_tokenize_interop.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
require_node_llama
pkg=$npm_dir/node_modules/node-llama-cpp

texts=("Hello World's DON'T they'll We'RE" "HTTPServer parseJSONData iPhone McDonald's"
    "12345 1234567 3.14159 -42" "你好世界, 日本語のテキスト" "Ünïcödé café naïve ÉCOLE"
    "path/to/file.txt // comment /* x */" $'line one\n\n  line two\r\n\ttab' "   leading  and trailing   "
    "a+b=c; x->y && z!=w?!..." "don't stop/ go\n")

# edgelm_ids VOCAB: edgelm's ids of each text, one JSON array of arrays
edgelm_ids() {
    local out="[" sep="" ids
    for t in "${texts[@]}"; do
        ids=$("$bin" tokenize -m "$1" -p "$t" --ids --no-bos 2>"$tmp/err") ||
            { echo "edgelm tokenize: $(cat "$tmp/err")" >&2; return 1; }
        out+="$sep$ids"
        sep=","
    done
    echo "$out]"
}

for name in qwen2 llama-bpe; do
    base=$fx/vocab/ggml-vocab-$name.gguf
    own=$(edgelm_ids "$base") || { fail "$name: edgelm tokenize failed"; continue; }
    for pre in gpt-4o; do
        vocab=$tmp/vocab-$name-$pre.gguf
        python3 tests/lib/gguf_vocab.py set-pre "$base" "$vocab" "$pre" || { fail "$name $pre: set-pre"; continue; }
        want=$(node tests/interop/tokenize.mjs "$pkg" "$vocab" "${texts[@]}" 2>"$tmp/node.err") ||
            { fail "$name $pre: node-llama-cpp: $(tail -1 "$tmp/node.err")"; continue; }
        got=$(edgelm_ids "$vocab") || { fail "$name $pre: edgelm tokenize failed"; continue; }
        python3 - "$want" "$got" "$own" "${texts[@]}" <<'EOF' && ok || fail "$name $pre: ids differ from llama.cpp's"
import json, sys
want, got, own = (json.loads(a) for a in sys.argv[1:4])
texts = sys.argv[4:]
bad = [(t, w, g) for t, w, g in zip(texts, want, got) if w != g]
for t, w, g in bad:
    print(f"  {t!r}: llama.cpp {w}, edgelm {g}", file=sys.stderr)
if len(want) != len(texts) or len(got) != len(texts):
    sys.exit("  wrong number of results")
if want == own:
    sys.exit("  every text cut as the vocabulary's own pre-tokenizer cuts it: the relabelling had no effect")
sys.exit(1 if bad else 0)
EOF
    done
done
echo "cli_tokenize_interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
