#!/usr/bin/env python3
"""Writes a copy of a GGUF model in which named tensors are taken, type and bytes, from another
GGUF file that holds them in the same shape: a whole model with one tensor of a type no fixture
model has (tests/cli_iquant.sh puts llama-quantize's i-quant tensors into the F32 wide256 model).
The keys are copied unchanged; the data are laid out again on the file's alignment.

Usage: gguf_splice.py BASE.gguf DONOR.gguf OUT.gguf TENSOR..."""
import os
import struct
import sys

from gguf_tensors import BLOCKS, Reader, layout


def tensor_table_start(data):
    """The offset of the tensor table (after the keys) and the file's alignment."""
    r = Reader(data)
    r.take("4s"), r.take("I")
    r.take("Q")
    n_kv = r.take("Q")
    align = 32
    for _ in range(n_kv):
        key, t = r.string(), r.take("I")
        if key == "general.alignment":
            align = r.take("I")
        else:
            r.skip_value(t)
    return r.p, align


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
    start, align = tensor_table_start(data)
    infos, blobs, offset = [], [], 0
    for name, ne, t, off in table:
        src = data
        if name in names:
            dne, t, off = given[name]
            if dne != ne:
                sys.exit(f"{donor}: tensor {name} has shape {dne}, {base} has {ne}")
            src = ddata
        raw = name.encode()
        infos.append(struct.pack("<Q", len(raw)) + raw + struct.pack("<I", len(ne)) +
                     b"".join(struct.pack("<Q", n) for n in ne) + struct.pack("<IQ", t, offset))
        blob = src[off:off + nbytes(ne, t)]
        blob += b"\0" * (-len(blob) % align)
        blobs.append(blob)
        offset += len(blob)
    head = data[:start] + b"".join(infos)
    head += b"\0" * (-len(head) % align)
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head + b"".join(blobs))
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
