#!/usr/bin/env python3
"""Whether a quantized file holds a reference sample's bytes: every tensor of SAMPLE (a cut of
llama-quantize's output by iquant_cut.py: whole tensors, or their first rows) must be in FILE with
the same type, row width and leading bytes. Prints one line per tensor ("NAME: N blocks equal", or
what differs: the type, or the count of differing blocks and the first) and exits 1 if any differs.

Usage: iquant_match.py SAMPLE.gguf FILE.gguf"""
import sys

from gguf_tensors import BLOCKS, layout


def main():
    sample, path = sys.argv[1], sys.argv[2]
    ref_data, ref_table = layout(sample)
    data, table = layout(path)
    found = {name: (ne, t, off) for name, ne, t, off in table}
    bad = 0
    for name, ne, t, off in ref_table:
        if name not in found:
            print(f"{name}: not in {path}")
            bad += 1
            continue
        ne2, t2, off2 = found[name]
        if t2 != t or ne2[0] != ne[0]:
            print(f"{name}: type {t2}, {ne2[0]} wide in {path}; the sample's {t}, {ne[0]} wide")
            bad += 1
            continue
        block, size = BLOCKS[t]
        n = ne[0] // block * ne[1]
        diff = [b for b in range(n) if ref_data[off + b * size:off + (b + 1) * size] !=
                data[off2 + b * size:off2 + (b + 1) * size]]
        if diff:
            print(f"{name}: {len(diff)} of {n} blocks differ, the first block {diff[0]}")
            bad += 1
        else:
            print(f"{name}: {n} blocks equal")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
