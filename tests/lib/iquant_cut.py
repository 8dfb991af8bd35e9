#!/usr/bin/env python3
"""Cuts a GGUF file down to a test sample: a GGUF v3 file with no metadata and the named tensors
only, each kept to its first ROWS rows (whole rows, so whole blocks), their bytes unchanged.
scripts/iquant_reference.sh uses it on llama-quantize's i-quant files (tests/data/iquant/).

Usage: iquant_cut.py IN.gguf OUT.gguf ROWS TENSOR..."""
import os
import struct
import sys

from gguf_tensors import layout

# bytes per 256-weight block of the types cut here (docs/kquants.md)
BLOCK_BYTES = {16: 66, 17: 74, 18: 98, 19: 50, 21: 110, 22: 82, 29: 56, 34: 54, 35: 66}
ALIGN = 32


def main():
    src, dst, rows, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    data, table = layout(src)
    found = {name: (ne, t, off) for name, ne, t, off in table}
    head, blobs, offset = [], [], 0
    for name in names:
        if name not in found:
            sys.exit(f"{src}: no tensor {name}")
        ne, t, off = found[name]
        if t not in BLOCK_BYTES:
            sys.exit(f"{src}: tensor {name} has type {t}, not a sub-4-bit i-quant")
        keep = min(rows, ne[1])
        nbytes = ne[0] // 256 * BLOCK_BYTES[t] * keep
        raw = name.encode()
        head.append(struct.pack("<Q", len(raw)) + raw + struct.pack("<IQQIQ", 2, ne[0], keep, t, offset))
        blob = data[off:off + nbytes]
        blob += b"\0" * (-len(blob) % ALIGN)
        blobs.append(blob)
        offset += len(blob)
    out = struct.pack("<4sIQQ", b"GGUF", 3, len(names), 0) + b"".join(head)
    out += b"\0" * (-len(out) % ALIGN)
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out + b"".join(blobs))
    os.replace(tmp, dst)


if __name__ == "__main__":
    main()
