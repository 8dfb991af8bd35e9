#!/usr/bin/env python3
"""Compares two imatrix GGUF files (llama-imatrix's layout: "W.in_sum2" [n_in, n_mat] and
"W.counts" [1, n_mat], F32) tensor by tensor: the same names, every count equal, every sum within
a relative tolerance of the reference's (scaled by the largest sum of its matrix, so that a column
near zero is not held to more digits than its matrix has). Prints one line per failure and a
summary: the entries, how many are expert stacks (n_mat > 1) and the largest relative difference.

Usage: imatrix_compare.py REFERENCE.gguf OTHER.gguf RTOL"""
import struct
import sys

from gguf_tensors import layout


def values(path):
    data, table = layout(path)
    out = {}
    for name, ne, t, off in table:
        if t != 0:
            sys.exit(f"{path}: tensor {name} is not F32")
        count = 1
        for n in ne:
            count *= n
        while len(ne) > 1 and ne[-1] == 1:  # ggml writes [n] for [n, 1]
            ne = ne[:-1]
        out[name] = (ne, struct.unpack_from(f"<{count}f", data, off))
    return out


def main():
    ref, got, rtol = values(sys.argv[1]), values(sys.argv[2]), float(sys.argv[3])
    bad = [f"{n}: only in {sys.argv[1]}" for n in ref if n not in got]
    bad += [f"{n}: only in {sys.argv[2]}" for n in got if n not in ref]
    worst, stacks = 0.0, 0
    for name in sorted(set(ref) & set(got)):
        (ne, a), (ne_b, b) = ref[name], got[name]
        if ne != ne_b:
            bad.append(f"{name}: shape {ne} against {ne_b}")
            continue
        if name.endswith(".counts"):
            stacks += len(a) > 1
            if list(a) != list(b):
                bad.append(f"{name}: counts {list(a)} against {list(b)}")
            continue
        n_in = ne[0]
        for k in range(len(a) // n_in):
            row_a, row_b = a[k * n_in:(k + 1) * n_in], b[k * n_in:(k + 1) * n_in]
            scale = max(max(abs(v) for v in row_a), 1e-30)
            d = max(abs(x - y) for x, y in zip(row_a, row_b)) / scale
            worst = max(worst, d)
            if d > rtol:
                bad.append(f"{name}: matrix {k} differs by {d:.3g} of its largest sum")
    for line in bad[:8]:
        print("  " + line, file=sys.stderr)
    print(f"{len(ref) // 2} entries, {stacks} expert stacks, largest relative difference {worst:.3g}")
    sys.exit(1 if bad or not stacks else 0)


if __name__ == "__main__":
    main()
