#!/usr/bin/env bash
# `edgelm index` and `edgelm search` (docs/rag.md) over a folder made from the TinyStories
# validation text (Markdown files with headings, a plain text file in a subfolder, a binary and a
# Latin-1 file), with synth's tiny gemma-embedding as the embedding model:
#  - index: the two non-text files skipped with a warning naming each; chunks keep their file,
#    lines (the text is those lines of the file) and heading path;
#  - search in each mode: BM25 finds the story a question quotes; the stored vector of a chunk is
#    `edgelm embed` of its text, float for float; vector mode's order and cosines are those
#    computed here in Python from the stored blobs and `edgelm embed` of the question; hybrid's
#    fused score is the reciprocal-rank sum of the two lists;
#  - --add of a changed file replaces its chunks (counts), of an unchanged one leaves it;
#    --remove of a folder removes its files' chunks; an index without -m is BM25 only; --add of a
#    file indexed before and now binary skips it and removes its chunks; --add of a folder drops
#    the files under it deleted from disk;
#  - bad input, one line naming the file and the problem, the database left as it was: an
#    unrelated SQLite file, another schema version, random bytes, an embedding model of another
#    width (and one of the same width with other weights), an unreadable file (as root, run as user
#    nobody: root reads it anyway), a question over the context; an index run killed midway.
# usage: cli_index.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"

st=$fx/stories260K/stories260K-f32.gguf
docs=$tmp/docs
ge=$tmp/ge.gguf
"$bin" synth --arch gemma-embedding --tiny --vocab "$st" -o "$ge" -s 5 >/dev/null 2>&1 || fail "synth gemma-embedding"
mkdir -p "$docs/sub"
python3 - "$fx/stories260K/text/valid.txt" "$docs" <<'EOF'
import sys
stories = [s.strip() for s in open(sys.argv[1]).read().split("\n\n") if s.strip()]
d, n = sys.argv[2], len(stories)
def markdown(path, title, part):
    with open(path, "w") as f:
        f.write(f"# {title}\n\n")
        for i, s in enumerate(part):
            if i % 3 == 0:
                f.write(f"## Part {i // 3 + 1}\n\n")
            f.write(s + "\n\n")
markdown(f"{d}/a.md", "Stories A", stories[: n // 4])
markdown(f"{d}/b.md", "Stories B", stories[n // 4 : n // 2])
open(f"{d}/sub/c.txt", "w").write("\n\n".join(stories[n // 2 : 3 * n // 4]) + "\n")
markdown(f"{d}/sub/d.md", "Stories D", stories[3 * n // 4 :])
open(f"{d}/bin.dat", "wb").write(b"\x00\x01\x02 binary")
open(f"{d}/latin1.txt", "wb").write(b"caf\xe9 au lait\n")
EOF

# py SCRIPT ARGS...: a Python check (sqlite3 and json from the standard library)
py() { python3 -c "$1" "${@:2}"; }

# --- index with an embedding model
db=$tmp/docs.db
"$bin" index -m "$ge" -o "$db" "$docs" --json -t 2 >"$tmp/index.json" 2>"$tmp/index.err" && ok ||
    fail "index: $(cat "$tmp/index.err")"
grep -q "^edgelm: warning: $docs/bin.dat: holds NUL bytes (binary), skipped$" "$tmp/index.err" &&
    grep -q "^edgelm: warning: $docs/latin1.txt: not UTF-8 text, skipped$" "$tmp/index.err" && ok ||
    fail "skipped files' warnings: $(cat "$tmp/index.err")"
py '
import json, sqlite3, sys
j = json.load(open(sys.argv[1]))
assert (j["files_indexed"], j["files_skipped"], j["files"], j["dim"]) == (4, 2, 4, 64), j
assert j["model"] == "tiny-gemma-embedding" and j["chunks"] == j["chunks_added"] > 8, j
db = sqlite3.connect(sys.argv[2])
meta = dict(db.execute("SELECT key, value FROM meta"))
assert meta["format"] == "edgelm-docs" and meta["schema_version"] == "1" and meta["embed_dim"] == "64", meta
rows = db.execute("SELECT f.path, c.line_start, c.line_end, c.heading, c.text, length(c.vector)"
                  " FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY c.id").fetchall()
for path, a, b, heading, text, nv in rows:
    lines = open(path).read().split("\n")
    span = "\n".join(lines[a - 1 : b])  # the chunk lies in these lines, from the first to the last
    at = span.find(text)
    assert at >= 0 and at <= len(lines[a - 1]) and at + len(text) > len(span) - len(lines[b - 1]) - 1, (path, a, b)
    assert nv == 64 * 4, nv
    want = "" if path.endswith(".txt") else "Stories "
    assert heading.startswith(want) and ("Part" in heading or text.startswith("# ") or not want), (path, heading)
assert any(h == "Stories B > Part 2" for _, _, _, h, _, _ in rows)
' "$tmp/index.json" "$db" && ok || fail "index summary, meta or chunks' sources: $(head -c 400 "$tmp/index.json")"

# --- the stored vectors are edgelm embed's
py 'import sqlite3, sys
for i, (t,) in enumerate(sqlite3.connect(sys.argv[1]).execute("SELECT text FROM chunks WHERE id IN (1, 5, 9) ORDER BY id")):
    open(sys.argv[2] + "/chunk%d.txt" % i, "w").write(t)' "$db" "$tmp"
for i in 0 1 2; do
    "$bin" embed -m "$ge" -f "$tmp/chunk$i.txt" --json -t 2 >"$tmp/chunk$i.json" 2>/dev/null || fail "embed chunk $i"
done
py '
import json, sqlite3, struct, sys
blobs = [b for (b,) in sqlite3.connect(sys.argv[1]).execute("SELECT vector FROM chunks WHERE id IN (1, 5, 9) ORDER BY id")]
for i, b in enumerate(blobs):
    want = json.load(open(sys.argv[2] + "/chunk%d.json" % i))["embedding"]
    got = struct.unpack("<64f", b)
    assert [struct.unpack("<f", struct.pack("<f", x))[0] for x in want] == list(got), i
' "$db" "$tmp" && ok || fail "stored vectors differ from edgelm embed"

# --- search, each mode
q="Lily dropped her special brush and it broke"
for mode in bm25 vector hybrid; do
    "$bin" search -d "$db" -q "$q" -k 5 --mode $mode --json -t 2 >"$tmp/$mode.json" 2>"$tmp/err" && ok ||
        fail "search --mode $mode: $(cat "$tmp/err")"
done
"$bin" search -d "$db" -q "$q" >"$tmp/plain.txt" 2>"$tmp/err" && grep -q '^1\. .*a.md:[0-9]*-[0-9]*  Stories A > Part 1$' "$tmp/plain.txt" &&
    grep -q '^hybrid search: 5 of k 5' "$tmp/err" && ok || fail "plain search: $(head -3 "$tmp/plain.txt") $(cat "$tmp/err")"
"$bin" embed -m "$ge" -p "$q" --json -t 2 >"$tmp/q.json" 2>/dev/null || fail "embed question"
py '
import json, sqlite3, struct, sys
d, db = sys.argv[1], sqlite3.connect(sys.argv[2])
load = lambda m: json.load(open(d + "/" + m + ".json"))
b, v, h = load("bm25"), load("vector"), load("hybrid")
assert [r["mode"] for r in (b, v, h)] == ["bm25", "vector", "hybrid"] and all(len(r["results"]) == 5 for r in (b, v, h))
top = b["results"][0]
assert "special brush" in top["text"] and top["file"].endswith("/a.md") and top["scores"]["bm25_rank"] == 1, top
assert all(r["scores"]["cosine"] is None for r in b["results"])
# cosine by brute force here: the question embedded by edgelm embed, the stored blobs
q = [struct.unpack("<f", struct.pack("<f", x))[0] for x in load("q")["embedding"]]
def cos(a, c):
    ab = sum(x * y for x, y in zip(a, c)); aa = sum(x * x for x in a); cc = sum(y * y for y in c)
    return ab / (aa * cc) ** 0.5
scores = sorted(((-cos(q, struct.unpack("<64f", blob)), i) for i, blob in db.execute("SELECT id, vector FROM chunks")))
assert [r["chunk_id"] for r in v["results"]] == [i for _, i in scores[:5]], ([r["chunk_id"] for r in v["results"]], scores[:5])
assert all(abs(r["scores"]["cosine"] + s) < 1e-9 and r["scores"]["cosine_rank"] == k + 1
           for k, (r, (s, _)) in enumerate(zip(v["results"], scores))), v["results"][0]["scores"]
# hybrid: the reciprocal-rank sum of both lists (the first 100 of each)
rank_of = {i: k + 1 for k, (_, i) in enumerate(scores)}
for r in h["results"]:
    s = r["scores"]
    want = (1 / (60 + s["bm25_rank"]) if s["bm25_rank"] else 0) + (1 / (60 + s["cosine_rank"]) if s["cosine_rank"] <= 100 else 0)
    assert s["cosine_rank"] == rank_of[r["chunk_id"]] and abs(s["fused"] - want) < 1e-12, (s, want)
fused = [r["scores"]["fused"] for r in h["results"]]
assert fused == sorted(fused, reverse=True)
' "$tmp" "$db" && ok || fail "search results: $(head -c 300 "$tmp/vector.json")"
# the same cosine order by numpy (Debian's python3-numpy, scripts/deps.sh), over every chunk
np_py=$(for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && echo "$p" && break; done)
[ -n "$np_py" ] || fail "numpy cosine order: no python3 with numpy (scripts/deps.sh installs python3-numpy)"
[ -n "$np_py" ] && "$bin" search -d "$db" -q "$q" -k 1000 --mode vector --json -t 2 >"$tmp/all.json" 2>/dev/null &&
    "$np_py" -c '
import json, sqlite3, sys, numpy as np
rows = sqlite3.connect(sys.argv[1]).execute("SELECT id, vector FROM chunks ORDER BY id").fetchall()
ids = np.array([i for i, _ in rows])
m = np.stack([np.frombuffer(b, dtype="<f4") for _, b in rows]).astype(np.float64)
q = np.array(json.load(open(sys.argv[2]))["embedding"], dtype=np.float32).astype(np.float64)
cos = m @ q / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))
order = np.argsort(-cos, kind="stable")
got = json.load(open(sys.argv[3]))["results"]
assert [r["chunk_id"] for r in got] == ids[order].tolist(), "order"
assert max(abs(r["scores"]["cosine"] - cos[k]) for r, k in zip(got, order)) < 1e-9, "cosines"
' "$db" "$tmp/q.json" "$tmp/all.json" && ok || fail "vector search differs from numpy's cosine order"

# --- --add: a changed file's chunks replaced, an unchanged one left, the model from the index
chunks_of() { py 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path LIKE ?", (sys.argv[2],)).fetchone()[0])' "$@"; }
before=$(chunks_of "$db" '%/b.md')
printf '\n## Appendix\n\nThe purple giraffe named Zorblat sang in the rain.\n' >>"$docs/b.md"
"$bin" index -o "$db" --add "$docs/b.md" "$docs/a.md" --json >"$tmp/add.json" 2>"$tmp/err" && ok || fail "--add: $(cat "$tmp/err")"
after=$(chunks_of "$db" '%/b.md')
py 'import json, sys
j = json.load(open(sys.argv[1])); before, after = int(sys.argv[2]), int(sys.argv[3])
assert (j["files_indexed"], j["files_unchanged"], j["chunks_removed"], j["chunks_added"]) == (1, 1, before, after), (j, before, after)
assert after > before and j["chunks"] == j["chunks_added"] + int(sys.argv[4]) - before, j' \
    "$tmp/add.json" "$before" "$after" "$(py 'import json,sys; print(json.load(open(sys.argv[1]))["chunks"])' "$tmp/index.json")" &&
    ok || fail "--add counts: $(cat "$tmp/add.json")"
"$bin" search -d "$db" -q "Zorblat giraffe" -k 1 --json 2>/dev/null | grep -q '"heading":	"Stories B > Appendix"' && ok ||
    fail "the added section is not found"

# --- --remove: a folder's files
sub=$(chunks_of "$db" '%/sub/%')
"$bin" index -o "$db" --remove "$docs/sub" --json >"$tmp/rm.json" 2>"$tmp/err" && ok || fail "--remove: $(cat "$tmp/err")"
py 'import json, sys
j = json.load(open(sys.argv[1]))
assert (j["files_removed"], j["chunks_removed"], j["files"]) == (2, int(sys.argv[2]), 2), j' "$tmp/rm.json" "$sub" &&
    [ "$(chunks_of "$db" '%/sub/%')" = 0 ] && ok || fail "--remove counts: $(cat "$tmp/rm.json")"
expect_error "remove nothing" "$docs/nothing: no indexed file" "$bin" index -o "$db" --remove "$docs/nothing"

# --- an index without a model: BM25 only, chunks counted in words
bm=$tmp/bm.db
"$bin" index -o "$bm" "$docs" --chunk-tokens 60 --overlap 10 >/dev/null 2>&1 && ok || fail "index without -m"
"$bin" search -d "$bm" -q "$q" -k 2 --json >"$tmp/bm.json" 2>/dev/null &&
    py 'import json, sys; j = json.load(open(sys.argv[1])); assert j["mode"] == "bm25" and "brush" in j["results"][0]["text"], j' "$tmp/bm.json" &&
    ok || fail "search of a BM25 index: $(head -c 300 "$tmp/bm.json")"
py 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert dict(db.execute("SELECT key, value FROM meta"))["chunk_counter"] == "words"
assert max(n for (n,) in db.execute("SELECT n_tokens FROM chunks")) <= 60
assert db.execute("SELECT count(*) FROM chunks WHERE vector IS NOT NULL").fetchone()[0] == 0' "$bm" && ok || fail "BM25 index chunks"
expect_error "vector on BM25" "bm.db: built without an embedding model: vector search" "$bin" search -d "$bm" -q "$q" --mode vector

# --- --add of a file indexed before that is no longer text: skipped, and its chunks removed
printf '# Turned\n\nThe quokka kept a ledger of every cloud.\n' >"$tmp/turned.md"
"$bin" index -o "$bm" --add "$tmp/turned.md" >/dev/null 2>&1 && [ "$(chunks_of "$bm" '%/turned.md')" = 1 ] &&
    ok || fail "--add of a text file to the BM25 index"
printf 'The quokka\0 binary now\n' >"$tmp/turned.md"
"$bin" index -o "$bm" --add "$tmp/turned.md" --json >"$tmp/turned.json" 2>/dev/null &&
    py 'import json, sys
j = json.load(open(sys.argv[1]))
assert (j["files_skipped"], j["files_removed"], j["chunks_removed"]) == (1, 1, 1), j' "$tmp/turned.json" &&
    [ "$(chunks_of "$bm" '%/turned.md')" = 0 ] && ok || fail "a file turned binary keeps its chunks: $(cat "$tmp/turned.json")"

# --- --add of a folder drops the indexed files under it that are gone from disk, not others
mkdir -p "$tmp/sync"
printf '# Kept\n\nThe otter keeps a pebble.\n' >"$tmp/sync/kept.md"
printf '# Gone\n\nThe heron left at dawn.\n' >"$tmp/sync/gone.md"
"$bin" index -o "$bm" --add "$tmp/sync" >/dev/null 2>&1 && rm "$tmp/sync/gone.md" &&
    "$bin" index -o "$bm" --add "$tmp/sync" --json >"$tmp/sync.json" 2>/dev/null &&
    py 'import json, sys
j = json.load(open(sys.argv[1]))
assert (j["files_removed"], j["chunks_removed"], j["files_unchanged"]) == (1, 1, 1), j' "$tmp/sync.json" &&
    [ "$(chunks_of "$bm" '%/sync/gone.md')" = 0 ] && [ "$(chunks_of "$bm" '%/sync/kept.md')" = 1 ] &&
    [ "$(chunks_of "$bm" '%/a.md')" != 0 ] && ok || fail "--add of a folder keeps a deleted file: $(cat "$tmp/sync.json")"

# --- bad input: one line naming the file and the problem, the database as it was
same() { cmp -s "$1" "$2"; }
cp "$db" "$tmp/keep.db"
py 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute("CREATE TABLE t(x)"); db.commit()' "$tmp/other.db"
cp "$tmp/other.db" "$tmp/other.keep"
expect_error "unrelated db: search" "other.db: not an edgelm index" "$bin" search -d "$tmp/other.db" -q hi
expect_error "unrelated db: add" "other.db: not an edgelm index" "$bin" index -o "$tmp/other.db" --add "$docs/a.md"
expect_error "unrelated db: create" "other.db: not an edgelm index .*(not replaced)" "$bin" index -o "$tmp/other.db" "$docs"
same "$tmp/other.db" "$tmp/other.keep" && ok || fail "the unrelated database changed"
cp "$db" "$tmp/v2.db"
py 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute("UPDATE meta SET value = 2 WHERE key = ?", ("schema_version",)); db.commit()' "$tmp/v2.db"
cp "$tmp/v2.db" "$tmp/v2.keep"
expect_error "schema version: search" "v2.db: index schema version 2; this edgelm reads version 1" "$bin" search -d "$tmp/v2.db" -q hi
expect_error "schema version: add" "v2.db: index schema version 2" "$bin" index -o "$tmp/v2.db" --add "$docs/a.md"
same "$tmp/v2.db" "$tmp/v2.keep" && ok || fail "the other version's database changed"
py 'import random, sys; random.seed(7); open(sys.argv[1], "wb").write(bytes(random.randrange(256) for _ in range(8192)))' "$tmp/junk.db"
cp "$tmp/junk.db" "$tmp/junk.keep"
expect_error "corrupt: search" "junk.db: not a readable edgelm index: file is not a database" "$bin" search -d "$tmp/junk.db" -q hi
expect_error "corrupt: add" "junk.db: not a readable edgelm index" "$bin" index -o "$tmp/junk.db" --add "$docs/a.md"
expect_error "corrupt: remove" "junk.db: not a readable edgelm index" "$bin" index -o "$tmp/junk.db" --remove "$docs/a.md"
same "$tmp/junk.db" "$tmp/junk.keep" && ok || fail "the corrupt file changed"
"$bin" synth --arch gemma-embedding --tiny --width 128 --vocab "$st" -o "$tmp/wide.gguf" >/dev/null 2>&1 || fail "synth --width 128"
expect_error "width: search" "docs.db: embeddings of width 64 (tiny-gemma-embedding), but .*wide.gguf gives 128" \
    "$bin" search -d "$db" -q hi -m "$tmp/wide.gguf"
expect_error "width: add" "docs.db: embeddings of width 64 .*wide.gguf gives 128" "$bin" index -o "$db" --add "$docs/a.md" -m "$tmp/wide.gguf"
expect_error "other weights" "docs.db: built with the embedding model tiny-gemma-embedding (.*ge.gguf), not .*stories260K-f32.gguf" \
    "$bin" search -d "$db" -q hi -m "$st"
long=$(printf 'Lily and the dog went to the park. %.0s' $(seq 20))
expect_error "question over the context" "question: [0-9]* tokens, over the 16 the context of .*ge.gguf takes" \
    "$bin" search -d "$db" -q "$long" -c 16
same "$db" "$tmp/keep.db" && ok || fail "the index changed on bad input"
# an unreadable file: root reads files whatever their mode, so as root the run is user nobody's
# (setpriv), on copies nobody may write
as=()
lk=$tmp
if [ "$(id -u)" = 0 ]; then
    as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    lk=$tmp/nobody
    mkdir -p "$lk" && cp -r "$docs" "$lk/docs" && cp "$db" "$lk/docs.db" && chmod -R a+rwX "$lk" &&
        chmod a+x "$tmp"
fi
cp "$lk/docs/a.md" "$lk/docs/locked.md" 2>/dev/null || cp "$docs/a.md" "$lk/docs/locked.md"
chmod 000 "$lk/docs/locked.md"
[ "$lk" = "$tmp" ] && ldb=$db || ldb=$lk/docs.db
cp "$ldb" "$tmp/locked-keep.db"
expect_error "unreadable file" "$lk/docs/locked.md: cannot read: Permission denied" \
    "${as[@]}" "$bin" index -o "$ldb" --add "$lk/docs"
same "$ldb" "$tmp/locked-keep.db" && ok || fail "the index changed after an unreadable file"
rm -f "$lk/docs/locked.md"

# --- an index run killed midway leaves the database as it was
mkdir -p "$tmp/more"
for i in $(seq 12); do cp "$docs/a.md" "$tmp/more/a$i.md"; printf '\nCopy %d.\n' "$i" >>"$tmp/more/a$i.md"; done
"$bin" index -o "$db" --add "$tmp/more" -t 1 >/dev/null 2>"$tmp/kill.err" &
pid=$!
if running_at "$pid" "$tmp/kill.err" "indexing: [1-9]/12"; then
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    "$bin" search -d "$db" -q "$q" -k 1 --mode bm25 >/dev/null 2>"$tmp/err" || fail "search after the kill: $(cat "$tmp/err")"
    same "$db" "$tmp/keep.db" && ok || fail "a killed --add changed the index"
else
    fail "the --add run ended before it could be killed: $(cat "$tmp/kill.err")"
fi

expect_error "no db" "-o DB is required" "$bin" index "$docs"
expect_error "no paths" "no PATH to index" "$bin" index -o "$tmp/x.db"
expect_error "add and remove" "--add and --remove exclude each other" "$bin" index -o "$db" --add --remove "$docs"
expect_error "bad mode" "--mode: 'cosine' is not hybrid, bm25 or vector" "$bin" search -d "$db" -q hi --mode cosine
expect_error "missing db" "nothing.db: No such file or directory" "$bin" search -d "$tmp/nothing.db" -q hi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
