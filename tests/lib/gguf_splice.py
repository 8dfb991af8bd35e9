#!/usr/bin/env python3
"""Writes a copy of a GGUF model in which named tensors are taken, type and bytes, from another
GGUF file that holds them in the same shape: a whole model with one tensor of a type no fixture
model has (tests/cli_iquant.sh puts llama-quantize's i-quant tensors into the F32 wide256 model).
The keys are copied unchanged; the data are laid out again on the file's alignment.

Usage: gguf_splice.py BASE.gguf DONOR.gguf OUT.gguf TENSOR..."""
import sys

from gguf_tensors import BLOCKS, header, layout, write


def nbytes(ne, t):
    count = 1
    for n in ne:
        count *= n
    block, size = BLOCKS[t]
    return count // block * size


def main():
    base, donor, out, names = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4:])
    data, table = layout(base)
    ddata, dtable = layout(donor)
    given = {name: (ne, t, off) for name, ne, t, off in dtable}
    r, _, n_kv, align = header(data)
    tensors = []
    for name, ne, t, off in table:
        src = data
        if name in names:
            dne, t, off = given[name]
            if dne != ne:
                sys.exit(f"{donor}: tensor {name} has shape {dne}, {base} has {ne}")
            src = ddata
        tensors.append((name, ne, t, src[off:off + nbytes(ne, t)]))
    # the keys' bytes follow the 24-byte header (magic, version, tensor and key counts)
    write(out, data[24:r.p], n_kv, tensors, align)


if __name__ == "__main__":
    main()
