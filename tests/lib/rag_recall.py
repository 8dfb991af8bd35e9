#!/usr/bin/env python3
"""Recall@1 and recall@5 of `edgelm search` on the labelled questions of tests/data/rag/.

usage: rag_recall.py EDGELM DB QUESTIONS.jsonl TEXT MODE... [--min-recall5 X]

Each line of QUESTIONS.jsonl is {"question", "line", "quote"}: the answer is the passage at that
1-based line of TEXT, which holds the quote verbatim (checked first: a changed text fails here).
A question is a hit at rank r when the r-th chunk `edgelm search --questions` returns for it is
from TEXT, its line range covers the line and its text holds the quote: chunk ids and sizes do
not matter. All questions go to one `edgelm search` per MODE (bm25, vector, hybrid). Prints one
line per mode: "MODE  recall@1 R1  recall@5 R5  (N questions, T ms a question)"; exits 1 when
the set does not match TEXT, or when a mode's recall@5 is under --min-recall5.
"""
import json
import os
import subprocess
import sys
import tempfile


def load(path, text_path):
    qs = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
    lines = open(text_path, encoding="utf-8").read().split("\n")
    bad = [q for q in qs if not (0 < q["line"] <= len(lines) and q["quote"] in lines[q["line"] - 1])]
    if bad:
        sys.exit(f"rag_recall: {len(bad)} questions' quotes are not at their lines of {text_path}, "
                 f"first: {bad[0]}")
    return qs


def search(edgelm, db, qs, mode, k):
    """Each question's results (a list of hits) and the search time a question (ms)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as f:
        f.write("".join(q["question"] + "\n" for q in qs))
        f.flush()
        r = subprocess.run([edgelm, "search", "-d", db, "--questions", f.name, "--mode", mode,
                            "-k", str(k), "--json", "-t", "2"], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"rag_recall: edgelm search --mode {mode}: {r.stderr.strip()}")
    out = [json.loads(l) for l in r.stdout.splitlines()]
    assert [o["question"] for o in out] == [q["question"] for q in qs], "answers out of order"
    return [o["results"] for o in out], sum(o["ms"] for o in out) / len(out)


def rank_of(q, results, text_path):
    for hit in results:
        if (os.path.realpath(hit["file"]) == text_path and hit["line_start"] <= q["line"] <= hit["line_end"]
                and q["quote"] in hit["text"]):
            return hit["rank"]
    return None


def main(argv):
    min_r5 = None
    if "--min-recall5" in argv:
        i = argv.index("--min-recall5")
        min_r5 = float(argv[i + 1])
        del argv[i:i + 2]
    edgelm, db, qpath, text, *modes = argv
    text = os.path.realpath(text)
    qs = load(qpath, text)
    failed = False
    for mode in modes:
        results, ms = search(edgelm, db, qs, mode, 5)
        ranks = [rank_of(q, r, text) for q, r in zip(qs, results)]
        r1 = sum(r == 1 for r in ranks) / len(qs)
        r5 = sum(r is not None for r in ranks) / len(qs)
        print(f"{mode:<7} recall@1 {r1:.3f}  recall@5 {r5:.3f}  ({len(qs)} questions, {ms:.3f} ms a question)")
        if os.environ.get("RAG_RECALL_MISSES"):
            for q, r in zip(qs, ranks):
                if r is None:
                    print(f"  miss: line {q['line']}: {q['question']}")
        if min_r5 is not None and r5 < min_r5:
            print(f"rag_recall: {mode} recall@5 {r5:.3f} < {min_r5}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
