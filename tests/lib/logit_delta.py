"""Logit-level agreement of edgelm with llama.cpp, for the interop tests.

node-llama-cpp exposes llama.cpp's next-token distribution as probabilities (greedy.mjs: a float32
softmax of the N largest raw logits), not the logits themselves; softmax loses only a per-row shift,
so log(p_i / p_top) = l_i - l_top is compared with edgelm's logits taken the same way.

usage: python3 logit_delta.py REF.json INDEX EDGELM.json [--per-row]
  REF.json     tests/interop/greedy.mjs output (run with GREEDY_TOP=N), INDEX its prompt
  EDGELM.json  `edgelm run --json --logits STEPS` for the same prompt, whole rows or, with
               --logits-top K, each row's K largest [id, logit] pairs
Prints the largest |delta| over the rows both runtimes reached along the same greedy path and over
llama.cpp's N most probable tokens (those with p > 0), then the number of rows compared (with
--per-row: each row's largest |delta| instead, space-separated, one line). Exits 1
when the prompts' token ids differ, no row could be compared, or one of llama.cpp's tokens is not
among edgelm's K.

usage: python3 logit_delta.py --agree MAX REF.json EDGELM_0.json ... [--tokens EDGELM_j.json ...]
  Checks whole runs at once (one interpreter for a family's prompts): EDGELM_i.json is edgelm's
  run of REF.json's prompt i, with the same prompt and generated ids as llama.cpp's, and (before
  --tokens) logits within MAX of llama.cpp's over every generated row. The m runs after --tokens
  are of REF.json's last m prompts, in order, and checked for their ids only. One line on stderr
  per run that fails; exits 1 if any.
"""
import json
import math
import sys


def row_deltas(ref, got):
    """Each row's largest |delta| along the common greedy path, or None (said on stderr) when the
    prompts differ or a token of llama.cpp's is missing from edgelm's rows."""
    if ref["prompt_ids"] != got["prompt_ids"]:
        print(f"prompt ids differ: llama.cpp {ref['prompt_ids']} edgelm {got['prompt_ids']}", file=sys.stderr)
        return None
    per_row = []
    for step, (top, logits) in enumerate(zip(ref["top"], got.get("logits", []))):
        if step > 0 and ref["generated_ids"][step - 1] != got["generated_ids"][step - 1]:
            break  # the paths parted: later rows condition on different tokens
        if logits and isinstance(logits[0], list):  # --logits-top: [id, logit] pairs
            logits = dict((int(i), l) for i, l in logits)
        top_id, top_p = top[0]
        worst = 0.0
        for token, p in top:
            if p > 0:
                if isinstance(logits, dict) and (token not in logits or top_id not in logits):
                    print(f"step {step}: llama.cpp's token {token} is not among edgelm's "
                          f"{len(logits)} largest", file=sys.stderr)
                    return None
                theirs = math.log(p / top_p)
                ours = logits[token] - logits[top_id]
                worst = max(worst, abs(ours - theirs))
        per_row.append(worst)
    return per_row


def agree(argv):
    limit, ref = float(argv[0]), json.load(open(argv[1]))
    runs = argv[2:]
    tokens_from = runs.index("--tokens") if "--tokens" in runs else len(runs)
    n_tokens = len(runs) - tokens_from - 1 if tokens_from < len(runs) else 0
    bad = 0
    for k, path in enumerate(r for r in runs if r != "--tokens"):
        i = k % len(ref) if k < tokens_from else len(ref) - n_tokens + (k - tokens_from)
        got, want = json.load(open(path)), ref[i]
        name = f"{path}: prompt {want['prompt']!r}"
        if (got["prompt_ids"], got["generated_ids"]) != (want["prompt_ids"], want["generated_ids"]):
            print(f"{name}: llama.cpp {want['prompt_ids']} -> {want['generated_ids']}, "
                  f"edgelm {got['prompt_ids']} -> {got['generated_ids']}", file=sys.stderr)
            bad += 1
        elif k < tokens_from:
            rows = row_deltas(want, got)
            if rows is None or len(rows) != len(want["generated_ids"]) or max(rows) > limit:
                worst = "-" if not rows else f"{max(rows):.3g} over {len(rows)} rows"
                print(f"{name}: logits differ from llama.cpp's by {worst} (max |delta|; want "
                      f"<= {limit:g} over {len(want['generated_ids'])})", file=sys.stderr)
                bad += 1
    return 1 if bad else 0


def main():
    if sys.argv[1] == "--agree":
        return agree(sys.argv[2:])
    per_row = row_deltas(json.load(open(sys.argv[1]))[int(sys.argv[2])], json.load(open(sys.argv[3])))
    if per_row is None:
        return 1
    if not per_row:
        print("no logit rows to compare (run edgelm with --json --logits N)", file=sys.stderr)
        return 1
    if "--per-row" in sys.argv[4:]:
        print(" ".join(f"{d:.6g}" for d in per_row))
    else:
        print(f"{max(per_row):.6g} {len(per_row)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
