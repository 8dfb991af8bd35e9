#!/usr/bin/env bash
# Retrieval quality, measured (issue 41 item 4; docs/rag.md "Quality"): the labelled set
# tests/data/rag/questions.jsonl (101 questions over stories260K's text/valid.txt, each with the
# line and a quote of the passage that answers it; how it was made: tests/data/rag/README.md)
# against an index of that file made without a model (BM25, chunks of 256 words):
#  - every quote is at its line of the text, and BM25's recall@5 is at least 0.8
#    (tests/lib/rag_recall.py: a hit is a retrieved chunk whose lines cover the answer's line and
#    whose text holds its quote, whatever the chunk ids); recall@1 and @5 printed;
#  - `search --questions FILE` (which the recall runs on): one JSON line per question, each what
#    -q gives for that question but the time, blank lines and CRLF ends left out; the text output
#    headed per question; no questions, -q with --questions and neither are one-line errors, and
#    a question's error names the file and the question.
# The vector path is checked for exactness in tests/cli_index.sh (stored vectors are `edgelm
# embed` of the chunk float for float; vector mode's order and cosines are those computed from the
# stored blobs in Python); with the tiny test models its recall means nothing (bench/rag_recall.sh
# prints it anyway).
# usage: cli_rag_recall.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"

text=$fx/stories260K/text/valid.txt
db=$tmp/valid.db
"$bin" index -o "$db" "$text" >/dev/null 2>"$tmp/err" && ok || fail "index $text: $(cat "$tmp/err")"
python3 tests/lib/rag_recall.py "$bin" "$db" tests/data/rag/questions.jsonl "$text" bm25 --min-recall5 0.8 \
    >"$tmp/recall.txt" 2>"$tmp/err" && ok || fail "BM25 recall: $(cat "$tmp/recall.txt" "$tmp/err")"
echo "cli_rag_recall: $(cat "$tmp/recall.txt")"

# --- --questions: each line as -q would answer it
qs=("What color was the mailbox?" "Who stole the nuts of the squirrels?" "Why did the queen smile?")
printf '%s\n\n%s\r\n%s\n' "${qs[@]}" >"$tmp/q.txt"
"$bin" search -d "$db" --questions "$tmp/q.txt" -k 3 --json >"$tmp/all.jsonl" 2>"$tmp/err" &&
    grep -q '^bm25 search: 3 questions, 9 results of k 3 | load .* ms a question$' "$tmp/err" && ok ||
    fail "--questions: $(cat "$tmp/err")"
for i in 0 1 2; do
    "$bin" search -d "$db" -q "${qs[$i]}" -k 3 --json >"$tmp/one$i.json" 2>/dev/null || fail "-q '${qs[$i]}'"
done
python3 - "$tmp" <<'PY' && ok || fail "--questions differs from -q"
import json, sys
lines = open(sys.argv[1] + "/all.jsonl").read().splitlines()
assert len(lines) == 3, lines
for i, line in enumerate(lines):
    got, want = json.loads(line), json.load(open(sys.argv[1] + "/one%d.json" % i))
    assert got.pop("ms") >= 0 and want.pop("ms") >= 0
    assert got == want and len(got["results"]) == 3, (got, want)
PY
"$bin" search -d "$db" --questions "$tmp/q.txt" -k 1 >"$tmp/all.txt" 2>/dev/null &&
    [ "$(grep -c '^## question [1-3]: ' "$tmp/all.txt")" = 3 ] &&
    grep -q "^## question 2: ${qs[1]}\$" "$tmp/all.txt" && ok || fail "--questions text output: $(head -5 "$tmp/all.txt")"
printf '\n\n' >"$tmp/empty.txt"
expect_error "no questions" "empty.txt: no questions (one per line)" "$bin" search -d "$db" --questions "$tmp/empty.txt"
expect_error "-q and --questions" "one of -q QUESTION and --questions FILE is required" \
    "$bin" search -d "$db" -q hi --questions "$tmp/q.txt"
expect_error "no question" "one of -q QUESTION and --questions FILE is required" "$bin" search -d "$db"
expect_error "a question's error" "q.txt: question 1: .*valid.db: built without an embedding model" \
    "$bin" search -d "$db" --questions "$tmp/q.txt" --mode vector
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
