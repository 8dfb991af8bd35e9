#!/usr/bin/env bash
# Answering from a document index (docs/rag.md, "Answering"): `edgelm chat --docs` and `edgelm
# serve --docs` over Markdown files made from the TinyStories validation text, with stories260K
# answering (its replies are noise; what is checked is what it was given and what is cited):
#  - chat, BM25-only index: the prompt (--verbose-prompt) holds the top k chunks of `edgelm search`
#    numbered [1].. in rank order inside the rag preset's system prompt, its token count is what
#    the turn prefilled (/stats), and the sources listed after the reply are those chunks;
#  - a context too small for all: exactly the chunks that fit with -n for the reply remain, the
#    best ones (a context one token short keeps one fewer), with a notice on stderr; a question
#    that does not fit even alone is one error line;
#  - hybrid, an index made with the tiny gemma-embedding model: the sources are `search`'s;
#  - serve: the chat completion's edgelm.citations (and the final streamed chunk's, and those of
#    /v1/responses, plain and streamed) are the search's top k; /props says docs; a max_tokens that leaves room for two keeps the best two (the prompt tokens
#    the chat counted); a prompt that cannot fit is a 400 naming messages; completions get none;
#  - bad input, one line naming the file: a missing index, a corrupt one, an index whose
#    embedding model is gone (chat and index --add), --docs with --preset; a question with no
#    words (chat, search, and the server's 400 naming messages[0].content).
# usage: cli_docs.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
command -v curl >/dev/null || skip "curl is not installed"

docs=$tmp/docs
mkdir -p "$docs"
python3 - "$fx/stories260K/text/valid.txt" "$docs" <<'EOF'
import sys
stories = [s.strip() for s in open(sys.argv[1]).read().split("\n\n") if s.strip()]
for i in range(0, 24, 6):  # four files of six stories, a heading over each story
    with open(f"{sys.argv[2]}/part{i // 6}.md", "w") as f:
        f.write(f"# Part {i // 6}\n\n" + "".join(f"## Story {j}\n\n{stories[j]}\n\n" for j in range(i, i + 6)))
EOF
bm=$tmp/bm.db
"$bin" index -o "$bm" "$docs" --chunk-tokens 20 --overlap 0 >/dev/null 2>"$tmp/err" || fail "index: $(cat "$tmp/err")"
q="Lily dropped her special brush and it broke"
"$bin" search -d "$bm" -q "$q" -k 5 --json >"$tmp/search.json" 2>/dev/null || fail "search"

# check_answer OUT ERR SEARCH_JSON M: the prompt on ERR holds the search's first M chunks as
# sources [1]..[M] and none of the rest, its token count is the one /stats gave on OUT, and OUT
# lists those M sources after the reply
check_answer() {
    python3 - "$@" <<'EOF'
import json, os, re, sys
out, err, results, m = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))["results"], int(sys.argv[4])
head = re.search(r"^edgelm: prompt \((\d+) tokens, (\d+) of (\d+) chunks\):\n", err, re.M)
assert head, err
prompt = err[head.end():err.index("\nedgelm: end of prompt")]
assert (int(head[2]), int(head[3])) == (m, len(results)), head[0]
assert prompt.startswith("Answer the user's questions using only the context below.") and "Cite the ones" in prompt, prompt[:200]
at = 0
for i, r in enumerate(results):
    block = "[%d] %s:%d-%d, %s\n%s" % (i + 1, os.path.basename(r["file"]), r["line_start"], r["line_end"], r["heading"], r["text"])
    if i < m:
        at = prompt.index(block, at)  # in rank order
    else:
        assert r["text"] not in prompt and "[%d] " % (i + 1) not in prompt, ("dropped chunk in the prompt", i + 1)
stats = re.search(r"^prompt (\d+) tokens", out, re.M)
assert stats and stats[1] == head[1], ("prompt tokens", stats and stats[1], head[1])
listed = out[out.index("Sources:\n") + 9:].splitlines()[:m]
want = ["[%d] %s:%d-%d  %s" % (i + 1, r["file"], r["line_start"], r["line_end"], r["heading"]) for i, r in enumerate(results[:m])]
assert listed == want, (listed, want)
print(head[1])
EOF
}

# --- chat, BM25: all five fit
printf '%s\n/stats\n' "$q" >"$tmp/q.txt"
"$bin" chat -m "$model" -t 1 --docs "$bm" -c 1024 -n 16 --temp 0 --verbose-prompt <"$tmp/q.txt" >"$tmp/out" 2>"$tmp/err" &&
    check_answer "$tmp/out" "$tmp/err" "$tmp/search.json" 5 >/dev/null && ok ||
    fail "chat --docs, 5 chunks: $(head -c 600 "$tmp/err")"
grep -q "left out" "$tmp/err" && fail "a notice of chunks left out with room for all" || ok

# --- a context too small for all: the prompt of the best two, counted with --docs-k 2
"$bin" chat -m "$model" -t 1 --docs "$bm" --docs-k 2 -c 1024 -n 16 --temp 0 --verbose-prompt <"$tmp/q.txt" >"$tmp/out" 2>"$tmp/err"
"$bin" search -d "$bm" -q "$q" -k 2 --json >"$tmp/search2.json" 2>/dev/null
two=$(check_answer "$tmp/out" "$tmp/err" "$tmp/search2.json" 2) || fail "chat --docs-k 2"
"$bin" chat -m "$model" -t 1 --docs "$bm" -c $((two + 16)) -n 16 --temp 0 --verbose-prompt <"$tmp/q.txt" >"$tmp/out" 2>"$tmp/err" &&
    check_answer "$tmp/out" "$tmp/err" "$tmp/search.json" 2 >/dev/null &&
    grep -q "^edgelm: --docs: 2 of the 5 chunks retrieved fit the context of $((two + 16)) tokens with 16 for the reply; the 3 lowest-ranked were left out$" "$tmp/err" &&
    ok || fail "-c $((two + 16)): want the best 2 chunks: $(head -c 800 "$tmp/err")"
"$bin" chat -m "$model" -t 1 --docs "$bm" -c $((two + 15)) -n 16 --temp 0 --verbose-prompt <"$tmp/q.txt" >"$tmp/out" 2>"$tmp/err" &&
    check_answer "$tmp/out" "$tmp/err" "$tmp/search.json" 1 >/dev/null && ok ||
    fail "-c $((two + 15)): want the best chunk alone: $(head -c 800 "$tmp/err")"
printf 'Lily and Tom went to the park to play with the red ball. %.0s' $(seq 30) >"$tmp/long.txt"
echo >>"$tmp/long.txt"
expect_error "question over the context" "chat: --docs: the prompt has [0-9]* tokens without any document, but the context holds 256 with 16 of them kept for the reply" \
    "$bin" chat -m "$model" -t 1 --docs "$bm" -c 256 -n 16 <"$tmp/long.txt"

# --- hybrid: an index with the tiny embedding model, sources as search ranks them
ge=$tmp/ge.gguf
"$bin" synth --arch gemma-embedding --tiny --vocab "$model" -o "$ge" -s 5 >/dev/null 2>&1 || fail "synth gemma-embedding"
hy=$tmp/hy.db
"$bin" index -m "$ge" -o "$hy" "$docs" --chunk-tokens 40 --overlap 0 -t 1 >/dev/null 2>&1 || fail "index -m"
"$bin" search -d "$hy" -q "$q" -k 5 --json >"$tmp/hsearch.json" 2>/dev/null &&
    grep -q '"mode":	"hybrid"' "$tmp/hsearch.json" || fail "hybrid search"
"$bin" chat -m "$model" -t 1 --docs "$hy" -c 1024 -n 16 --temp 0 --verbose-prompt <"$tmp/q.txt" >"$tmp/out" 2>"$tmp/err" &&
    check_answer "$tmp/out" "$tmp/err" "$tmp/hsearch.json" 5 >/dev/null && ok ||
    fail "chat --docs, hybrid: $(head -c 600 "$tmp/err")"

# --- serve: citations as search ranks them
start_server -m "$model" -t 1 -c 1024 --docs "$bm"
grep -q "documents $bm (bm25, k 5)" "$server_err" && ok || fail "serve --docs banner: $(cat "$server_err")"
# same_citations RESPONSE SEARCH_JSON: edgelm.citations of a completion (or of the last
# streamed chunk with one) are the search results, "index" for "rank"
same_citations() {
    python3 - "$@" <<'EOF'
import json, sys
text, results = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))["results"]
if text.startswith("data: "):
    chunks = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: {")]
    withc = [i for i, c in enumerate(chunks) if "edgelm" in c]
    assert withc == [len(chunks) - 1] and "usage" in chunks[-1], withc
    got = chunks[-1]["edgelm"]["citations"]
else:
    got = json.loads(text)["edgelm"]["citations"]
want = [{("index" if k == "rank" else k): v for k, v in r.items()} for r in results]
assert got == want, (got, want)
EOF
}
body='{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "'$q'"}], "max_tokens": 8, "temperature": 0}'
[ "$(status_of POST /v1/chat/completions "$body")" = 200 ] && same_citations "$tmp/body" "$tmp/search.json" && ok ||
    fail "serve --docs citations: $(head -c 400 "$tmp/body")"
curl -sN -X POST -H 'Content-Type: application/json' --data-binary "${body%\}}, \"stream\": true}" \
    "$url/v1/chat/completions" >"$tmp/stream" && same_citations "$tmp/stream" "$tmp/search.json" && ok ||
    fail "serve --docs streamed citations: $(tail -c 400 "$tmp/stream")"
# the Responses API carries them too (on the response, and on the streamed last event)
rbody='{"input": [{"role": "user", "content": "'$q'"}], "max_output_tokens": 8, "temperature": 0}'
[ "$(status_of POST /v1/responses "$rbody")" = 200 ] && same_citations "$tmp/body" "$tmp/search.json" && ok ||
    fail "serve --docs /v1/responses citations: $(head -c 400 "$tmp/body")"
curl -sN -X POST -H 'Content-Type: application/json' --data-binary "${rbody%\}}, \"stream\": true}" \
    "$url/v1/responses" >"$tmp/rstream" &&
    python3 - "$tmp/rstream" "$tmp/search.json" <<'EOF' && ok || fail "serve --docs streamed /v1/responses citations: $(tail -c 400 "$tmp/rstream")"
import json, sys
events = [json.loads(l[6:]) for l in open(sys.argv[1]).read().splitlines() if l.startswith("data: {")]
done = [e for e in events if e["type"] in ("response.completed", "response.incomplete")]
want = [{("index" if k == "rank" else k): v for k, v in r.items()} for r in json.load(open(sys.argv[2]))["results"]]
assert len(done) == 1 and done[0]["response"]["edgelm"]["citations"] == want, done
EOF
[ "$(status_of GET /props)" = 200 ] && python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["docs"] is True' "$tmp/body" &&
    ok || fail "/props does not say docs: $(head -c 300 "$tmp/body")"
# max_tokens leaving room for the best two chunks' prompt (the chat's above: same template, no
# system message of the request's) keeps those two
body='{"messages": [{"role": "user", "content": "'$q'"}], "max_tokens": '$((1024 - two))', "temperature": 0}'
[ "$(status_of POST /v1/chat/completions "$body")" = 200 ] &&
    python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["usage"]["prompt_tokens"] == int(sys.argv[3]), j["usage"]
assert [c["chunk_id"] for c in j["edgelm"]["citations"]] == [r["chunk_id"] for r in json.load(open(sys.argv[2]))["results"][:2]]' \
    "$tmp/body" "$tmp/search.json" "$two" && ok || fail "serve: max_tokens $((1024 - two)) keeps the best 2: $(head -c 300 "$tmp/body")"
expect_status "empty question" 400 '"message":"messages\[0\].content: question: no words to search for"' \
    POST /v1/chat/completions '{"messages": [{"role": "user", "content": " ?! "}], "max_tokens": 4}'
expect_status "prompt over the slot" 400 '"message":"messages: the prompt has [0-9]+ tokens without any document, but the context holds 1024 with 1000 of them kept for the reply"' \
    POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1000}'
[ "$(status_of POST /v1/completions '{"prompt": "Lily", "max_tokens": 4}')" = 200 ] && ! grep -q '"edgelm"' "$tmp/body" && ok ||
    fail "completions with --docs: $(head -c 300 "$tmp/body")"
stop_server

# --- bad input: one line naming the file
junk() { yes "not an index" | head -c 8192 >"$1"; }
junk "$tmp/junk.db"
printf 'hi\n' >"$tmp/hi.txt"
expect_error "chat: missing index" "$tmp/nothing.db: No such file or directory" "$bin" chat -m "$model" --docs "$tmp/nothing.db" <"$tmp/hi.txt"
expect_error "chat: corrupt index" "junk.db: not a readable edgelm index: file is not a database" "$bin" chat -m "$model" --docs "$tmp/junk.db" <"$tmp/hi.txt"
expect_error "serve: missing index" "$tmp/nothing.db: No such file or directory" "$bin" serve -m "$model" --port 0 --docs "$tmp/nothing.db"
expect_error "serve: corrupt index" "junk.db: not a readable edgelm index: file is not a database" "$bin" serve -m "$model" --port 0 --docs "$tmp/junk.db"
cp "$ge" "$tmp/gone.gguf"
"$bin" index -m "$tmp/gone.gguf" -o "$tmp/gone.db" "$docs/part0.md" >/dev/null 2>&1 || fail "index -m gone.gguf"
rm -f "$tmp/gone.gguf"
expect_error "embedding model gone" "gone.db: its embedding model .*gone.gguf (recorded when it was indexed) is missing" \
    "$bin" chat -m "$model" --docs "$tmp/gone.db" <"$tmp/hi.txt"
expect_error "embedding model gone: add" "gone.db: its embedding model .*gone.gguf (recorded when it was indexed) is missing" \
    "$bin" index -o "$tmp/gone.db" --add "$docs/part0.md"
# a question with no words would rank chunks at random
printf '  ?!.\n' >"$tmp/blank.txt"
expect_error "no words" "question: no words to search for" "$bin" chat -m "$model" --docs "$bm" <"$tmp/blank.txt"
expect_error "search: no words" "question: no words to search for" "$bin" search -d "$bm" -q "?!"
expect_error "docs and preset" "chat: --docs answers with the rag preset over its chunks: leave out --preset and --context" \
    "$bin" chat -m "$model" --docs "$bm" --preset rag --context "$tmp/hi.txt" <"$tmp/hi.txt"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
