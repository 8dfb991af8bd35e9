#!/usr/bin/env python3
"""Cuts a GGUF file down to a test sample: a GGUF v3 file with no keys and the named tensors
only, each kept to its first ROWS rows (whole rows, so whole blocks), their bytes unchanged.
scripts/iquant_reference.sh uses it on llama-quantize's i-quant files (tests/data/iquant/).

Usage: iquant_cut.py IN.gguf OUT.gguf ROWS TENSOR..."""
import sys

from gguf_tensors import BLOCKS, layout, write

# the sub-4-bit i-quants and ternary types (docs/kquants.md)
IQUANTS = {16, 17, 18, 19, 21, 22, 29, 34, 35}


def main():
    src, dst, rows, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    data, table = layout(src)
    found = {name: (ne, t, off) for name, ne, t, off in table}
    tensors = []
    for name in names:
        if name not in found:
            sys.exit(f"{src}: no tensor {name}")
        ne, t, off = found[name]
        if t not in IQUANTS:
            sys.exit(f"{src}: tensor {name} has type {t}, not a sub-4-bit i-quant")
        keep = min(rows, ne[1])
        block, size = BLOCKS[t]
        tensors.append((name, [ne[0], keep], t, data[off:off + ne[0] // block * size * keep]))
    write(dst, b"", 0, tensors)


if __name__ == "__main__":
    main()
