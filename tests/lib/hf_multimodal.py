#!/usr/bin/env python3
"""Moves an HF folder's tensors to where a multimodal checkpoint keeps its language model.

usage: hf_multimodal.py DIR OLD NEW [EXTRA...]
Rewrites DIR/model.safetensors in place: every tensor whose name starts with OLD ("" for all)
is renamed NEW + the rest of its name, and each EXTRA is added as a 1-value F32 tensor (a vision
tower's or an MTP block's, which a loader of the text model must ignore). The config is the
caller's to rewrite.
"""
import json
import os
import struct
import sys

folder, old, new, extras = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
path = os.path.join(folder, "model.safetensors")
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
moved = {(new + k[len(old):] if k != "__metadata__" and k.startswith(old) else k): v
         for k, v in header.items()}
end = len(data) - 8 - n
for name in extras:
    moved[name] = {"dtype": "F32", "shape": [1], "data_offsets": [end, end + 4]}
    end += 4
h = json.dumps(moved).encode()
h += b" " * (-len(h) % 8)
open(path, "wb").write(struct.pack("<Q", len(h)) + h + data[8 + n:] + bytes(4 * len(extras)))
