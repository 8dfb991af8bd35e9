#!/usr/bin/env bash
# Retrieval quality on the labelled set tests/data/rag/questions.jsonl (101 questions over the
# TinyStories validation text; how it was made: tests/data/rag/README.md): recall@1 and recall@5
# of `edgelm search` in each mode (tests/lib/rag_recall.py), for three indexes of
# stories260K/text/valid.txt: without a model (BM25 only, chunks of 256 words: what
# tests/cli_rag_recall.sh asserts), and with two embedding models of width 64, chunks of 256 of
# their tokens: synth's tiny gemma-embedding (random weights: its vectors carry no meaning) and
# stories260K (a trained 260K-parameter language model, mean-pooled: not an embedding model).
# EMBED_MODEL=PATH adds the rows of a real embedding model (EmbeddingGemma, Qwen3-Embedding).
# Prints the CPU, ISA and date, then one Markdown table. Seconds to run with the tiny models.
# Usage: bash bench/rag_recall.sh [EDGELM_BINARY] [SHARED_DIR]   (env EMBED_MODEL, OUT)
set -euo pipefail
bin=${1:-build/edgelm}
fx=${2:-../shared}/fixtures/stories260K
out=${OUT:-build/bench-rag}
mkdir -p "$out"
text=$fx/text/valid.txt
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores," \
    "$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2); $("$bin" --version | head -1); $(date -u '+%Y-%m-%d %H:%M UTC')"
"$bin" synth --arch gemma-embedding --tiny --vocab "$fx/stories260K-f32.gguf" -o "$out/ge.gguf" -s 5 >/dev/null 2>&1
echo
echo "| index | chunks | mode | recall@1 | recall@5 | ms a question |"
echo "|---|---|---|---|---|---|"
# row LABEL DB MODES [index options...]
row() {
    local label=$1 db=$out/$2.db json=$out/$2.json modes=$3
    shift 3
    rm -f "$db"
    "$bin" index -o "$db" "$@" "$text" --json -t 2 2>/dev/null >"$json"
    local chunks
    chunks=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["chunks"])' "$json")
    # shellcheck disable=SC2086
    python3 tests/lib/rag_recall.py "$bin" "$db" tests/data/rag/questions.jsonl "$text" $modes |
        awk -v l="$label" -v c="$chunks" '{ printf "| %s | %s | %s | %s | %s | %s |\n", l, c, $1, $3, $5, $8 }'
}
row "no model (256 words)" words "bm25"
row "tiny gemma-embedding, random (256 tokens)" ge "bm25 vector hybrid" -m "$out/ge.gguf"
row "stories260K, mean-pooled (256 tokens)" st "bm25 vector hybrid" -m "$fx/stories260K-f32.gguf"
if [ -n "${EMBED_MODEL:-}" ]; then
    row "$(basename "$EMBED_MODEL") (256 tokens)" embed "bm25 vector hybrid" -m "$EMBED_MODEL"
fi
