#!/usr/bin/env python3
"""The tensor table of a GGUF file (v2/v3), without numpy: one JSON object on stdout,
{name: [ggml type number, sha256 of the tensor's bytes]}, for comparing what two quantizers wrote
tensor by tensor (tests/cli_hybrid_recipes.sh).

Usage: gguf_tensors.py FILE.gguf"""
import hashlib
import json
import os
import struct
import sys

# bytes of a key/value scalar by GGUF value type (8: string, 9: array handled apart)
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
# (block size, bytes per block) of the ggml types a recipe writes
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
          10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
          20: (32, 18), 23: (256, 136), 30: (1, 2), 39: (32, 17),
          # the sub-4-bit i-quants and ternary types (docs/kquants.md)
          16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 21: (256, 110),
          22: (256, 82), 29: (256, 56), 34: (256, 54), 35: (256, 66)}


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.d, self.p)
        self.p += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.d[self.p:self.p + n].decode("utf-8")
        self.p += n
        return s

    def skip_value(self, t):
        if t == 8:
            self.string()
        elif t == 9:
            et, n = self.take("I"), self.take("Q")
            for _ in range(n):
                self.skip_value(et)
        else:
            self.p += SCALAR[t]


def header(data, path="GGUF data"):
    """A Reader past the file's keys, its tensor count, key count and alignment."""
    r = Reader(data)
    if r.take("4s") != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    r.take("I")
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    align = 32
    for _ in range(n_kv):
        key, t = r.string(), r.take("I")
        if key == "general.alignment":
            align = r.take("I")
        else:
            r.skip_value(t)
    return r, n_tensors, n_kv, align


def layout(path):
    """The file's bytes and its tensor table: [(name, ne, ggml type, absolute data offset)]."""
    r, n_tensors, _, align = header(open(path, "rb").read(), path)
    table = []
    for _ in range(n_tensors):
        name, n_dims = r.string(), r.take("I")
        ne = [r.take("Q") for _ in range(n_dims)]
        table.append((name, ne, r.take("I"), r.take("Q")))
    base = (r.p + align - 1) // align * align
    return r.d, [(name, ne, t, base + off) for name, ne, t, off in table]


def write(path, keys, n_kv, tensors, align=32):
    """A GGUF v3 file at path (written to a temporary name, then renamed): the n_kv keys as the
    bytes `keys`, then tensors [(name, ne, ggml type, data bytes)], each on the alignment."""
    infos, blobs, offset = [], [], 0
    for name, ne, t, blob in tensors:
        raw = name.encode()
        infos.append(struct.pack("<Q", len(raw)) + raw + struct.pack("<I", len(ne)) +
                     b"".join(struct.pack("<Q", n) for n in ne) + struct.pack("<IQ", t, offset))
        blob = blob + b"\0" * (-len(blob) % align)
        blobs.append(blob)
        offset += len(blob)
    head = struct.pack("<4sIQQ", b"GGUF", 3, len(tensors), n_kv) + keys + b"".join(infos)
    head += b"\0" * (-len(head) % align)
    with open(path + ".tmp", "wb") as f:
        f.write(head + b"".join(blobs))
    os.replace(path + ".tmp", path)


def tensors(path):
    """{name: [ggml type, sha256 of the tensor's bytes]} of a GGUF file."""
    data, table = layout(path)
    out = {}
    for name, ne, t, off in table:
        if t not in BLOCKS:
            sys.exit(f"{path}: tensor {name} of type {t} unknown here")
        count = 1
        for n in ne:
            count *= n
        block, nbytes = BLOCKS[t]
        out[name] = [t, hashlib.sha256(data[off:off + count // block * nbytes]).hexdigest()]
    return out


if __name__ == "__main__":
    json.dump(tensors(sys.argv[1]), sys.stdout, indent=1, sort_keys=True)
    print()
