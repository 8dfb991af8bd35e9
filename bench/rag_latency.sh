#!/usr/bin/env bash
# Search latency at 10k and 100k chunks (issue 41: "brute-force cosine is fine up to ~100k
# chunks; measure it, and say where an HNSW index would pay"; docs/rag.md "Latency").
#  - The corpus: paragraphs of 130 to 250 words, each the sentences of TinyStories stories
#    (stories260K's text/valid.txt and text/calib.txt) taken at random (seeded), 1,000 paragraphs
#    a file; indexed without a model at the default 256 words a chunk, so one paragraph is one
#    chunk (two never fit one, and a paragraph is longer than the overlap).
#  - The vectors: embedding 100k chunks with a model would take hours on a small CPU, and their
#    values do not change what brute force costs, so they are written straight into the index:
#    random unit float32 vectors of width DIM (default 768, EmbeddingGemma-300M's), the index's
#    meta made that of `synth --arch gemma-embedding --tiny --width DIM` (a 2-layer model that
#    embeds the questions), then VACUUM (rows in id order, as an index written with -m lays them).
#  - The queries: the first 20 questions of tests/data/rag/questions.jsonl, the list searched
#    3 times over by one `edgelm search --questions --json` per mode and size, -k 5, -t 1; the
#    figure is each question's best of its 3 times in elm_retrieve (the "ms" of search's JSON),
#    averaged over the 20 (the best of 3 takes out most of what other processes cost on a shared
#    machine). Vector mode's time includes embedding the question: the same search on a 1-chunk
#    index measures that part, and "cosine" is vector minus it: reading the vectors out of
#    SQLite, the cosines and the sort. "BM25 matches": the share of the chunks a question's
#    FTS5 query (its words joined by OR, as search.c makes it) matches, all of which FTS5 ranks.
#    "numpy": the same scan over the vectors as a float32 matrix in memory, one thread, top 5 by
#    argpartition: what brute force costs without SQLite and in SIMD.
# Prints the CPU, ISA, load and date, then one Markdown table. A benchmark, not a test: building
# the 100k index takes minutes and about 1 GB of disk under OUT (default build/bench-rag).
# Usage: bash bench/rag_latency.sh [EDGELM_BINARY] [SHARED_DIR]   (env SIZES="10000 100000", DIM)
set -euo pipefail
bin=${1:-build/edgelm}
fx=${2:-../shared}/fixtures/stories260K
out=${OUT:-build/bench-rag}
sizes=${SIZES:-"10000 100000"}
dim=${DIM:-768}
questions=tests/data/rag/questions.jsonl
py=$(for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && echo "$p" && break; done)
[ -n "$py" ] || { echo "rag_latency: no python3 with numpy" >&2; exit 1; }
mkdir -p "$out"
isa=$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $isa;" \
    "load $(cut -d' ' -f1 /proc/loadavg); $("$bin" --version | head -1); $(date -u '+%Y-%m-%d %H:%M UTC')"

python3 -c 'import json, sys
qs = [json.loads(l)["question"] + "\n" for l in open(sys.argv[1])][:20]
print("".join(qs * 3), end="")' "$questions" >"$out/questions.txt"
"$bin" synth --arch gemma-embedding --tiny --width "$dim" --vocab "$fx/stories260K-f32.gguf" -o "$out/embed$dim.gguf" >/dev/null 2>&1
printf 'Once upon a time there was a little bench.\n' >"$out/one.txt"
rm -f "$out/one.db"
"$bin" index -m "$out/embed$dim.gguf" -o "$out/one.db" "$out/one.txt" -t 2 2>/dev/null

# per_question DB MODE: each question's best ms of its 3, averaged over the questions
per_question() {
    "$bin" search -d "$1" --questions "$out/questions.txt" --mode "$2" -k 5 -t 1 --json 2>/dev/null |
        python3 -c 'import json, sys
ms = [json.loads(l)["ms"] for l in sys.stdin]
n = len(ms) // 3
print("%.1f" % (sum(min(ms[i::n]) for i in range(n)) / n))'
}
embed_ms=$(per_question "$out/one.db" vector)

echo
echo "| chunks | index MB | build s (BM25) | BM25 ms | BM25 matches | vector ms | of which cosine | hybrid ms | numpy f32 in memory ms |"
echo "|---|---|---|---|---|---|---|---|---|"
for n in $sizes; do
    corpus=$out/corpus-$n db=$out/rag-$n.db
    rm -rf "$corpus" "$db"
    python3 - "$fx/text" "$corpus" "$n" <<'PY'
import os, random, re, sys
src, corpus, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
stories = [s for s in open(src + "/valid.txt").read().split("\n\n") if s.strip()]
stories += [l for l in open(src + "/calib.txt") if l.strip()]
sentences = [re.findall(r"[^.!?]+[.!?]+\"?", s) for s in stories]
rng = random.Random(41)
os.makedirs(corpus)
for f in range(0, n, 1000):
    paras = []
    for _ in range(min(1000, n - f)):
        words = []
        while len(words) < 130:
            s = rng.choice(sentences)
            for t in s[rng.randrange(len(s)):]:
                if len(words) + len(t.split()) > 250:
                    break
                words += t.split()
        paras.append(" ".join(words))
    open(f"{corpus}/part{f // 1000:03d}.txt", "w").write("\n\n".join(paras) + "\n")
PY
    t0=$(date +%s.%N)
    "$bin" index -o "$db" "$corpus" -t 2 >/dev/null 2>&1
    build=$(echo "$(date +%s.%N) - $t0" | bc)
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$py" - "$db" "$out/one.db" "$dim" >"$out/numpy.ms" <<'PY'
import sqlite3, sys, time, numpy as np
db, one, dim = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2]), int(sys.argv[3])
db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
               one.execute("SELECT key, value FROM meta WHERE key LIKE 'embed_%'").fetchall())
ids = [i for (i,) in db.execute("SELECT id FROM chunks ORDER BY id")]
v = np.random.default_rng(41).standard_normal((len(ids), dim), dtype=np.float32)
v /= np.linalg.norm(v, axis=1, keepdims=True)
db.executemany("UPDATE chunks SET vector = ? WHERE id = ?", ((v[k].astype("<f4").tobytes(), i) for k, i in enumerate(ids)))
db.commit()
db.execute("VACUUM")
# the same scan over a float32 matrix in memory, one thread: what brute force costs without
# SQLite, in SIMD (the vectors are unit length, so the dot product is the cosine); best of 3
q = np.random.default_rng(7).standard_normal((20, dim), dtype=np.float32)
q /= np.linalg.norm(q, axis=1, keepdims=True)
best = []
for x in q:
    t = []
    for _ in range(3):
        t0 = time.perf_counter()
        s = v @ x
        top = np.argpartition(-s, 5)[:5]
        top = top[np.argsort(-s[top])]
        t.append((time.perf_counter() - t0) * 1e3)
    best.append(min(t))
print("%.1f" % (sum(best) / len(best)))
PY
    read -r chunks matched < <(python3 - "$db" "$out/questions.txt" <<'PY'
import re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
qs = sorted(set(open(sys.argv[2]).read().splitlines()))
m = [db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                (" OR ".join('"%s"' % w for w in re.findall(r"[A-Za-z0-9\x80-\uffff]+", q)),)).fetchone()[0] for q in qs]
print(n, "%.0f%%" % (100 * sum(m) / len(m) / n))
PY
)
    mb=$(du -m "$db" | cut -f1)
    bm=$(per_question "$db" bm25) vec=$(per_question "$db" vector) hyb=$(per_question "$db" hybrid)
    cos=$(echo "$vec - $embed_ms" | bc)
    rm -rf "$corpus"
    printf '| %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n' "$chunks" "$mb" "$build" "$bm" "$matched" "$vec" "$cos" "$hyb" "$(cat "$out/numpy.ms")"
done
echo
echo "vector ms on a 1-chunk index (embedding the question with the $dim-wide 2-layer model): $embed_ms"
