#!/usr/bin/env python3
"""Turns a gpt-oss HF folder into the original checkpoint's MXFP4 layout (openai/gpt-oss-20b's).

usage: hf_mxfp4.py GGUF DIR [BREAK]
GGUF holds MXFP4 experts (blk.N.ffn_{gate,up,down}_exps.weight, ggml type 39). DIR/model.safetensors
(a `synth --hf` folder) loses each layer's mlp.experts.gate_up_proj and down_proj and gains U8
gate_up_proj_blocks [E, 2*ff, dim/32, 16] and gate_up_proj_scales [E, 2*ff, dim/32] (gate and up
in alternate rows) and down_proj_blocks/_scales, holding the GGUF's bytes in the checkpoint's order:
the inverse of llama.cpp's converter (conversion/gpt_oss.py, repack_mxfp4), there weight n of a
block is nibble n, low nibble first; in ggml weight j < 16 is the low nibble of byte j and weight
j + 16 its high nibble. config.json gains quantization_config {"quant_method": "mxfp4"}.
BREAK makes one bad-input case of layer 0: scales-shape (gate_up_proj_scales one row short),
blocks-dtype (down_proj_blocks declared F16 over the same bytes), scale-ff (a scale byte 0xff),
router-u8 (a tensor outside the experts declared U8 over the same bytes).
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_tensors import layout  # noqa: E402

MXFP4, BLOCK = 39, 17


def to_checkpoint(block):
    """A ggml MXFP4 block's 16 code bytes in the checkpoint's nibble order."""
    qs = block[1:]
    w = [qs[n] & 15 if n < 16 else qs[n - 16] >> 4 for n in range(32)]
    return bytes(w[2 * k] | w[2 * k + 1] << 4 for k in range(16))


def parts(rows):
    """(blocks, scales) bytes of stacked matrices given as lists of rows of ggml blocks."""
    blocks, scales = bytearray(), bytearray()
    for row in rows:
        for b in range(0, len(row), BLOCK):
            scales.append(row[b])
            blocks += to_checkpoint(row[b:b + BLOCK])
    return bytes(blocks), bytes(scales)


def main():
    gguf, folder = sys.argv[1], sys.argv[2]
    brk = sys.argv[3] if len(sys.argv) > 3 else ""
    data, table = layout(gguf)
    stacks = {}
    for name, ne, t, off in table:
        if name.endswith("_exps.weight"):
            if t != MXFP4:
                sys.exit(f"{gguf}: {name} is type {t}, not MXFP4")
            cols, rows, n_exp = ne
            row = cols // 32 * BLOCK
            stacks[name] = (ne, [data[off + r * row:off + (r + 1) * row]
                                 for r in range(rows * n_exp)])
    path = os.path.join(folder, "model.safetensors")
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out, buf = {}, bytearray()

    def put(name, dtype, shape, blob):
        out[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(buf), len(buf) + len(blob)]}
        buf.extend(blob)

    for name, e in sorted(header.items()):
        if name == "__metadata__":
            continue
        if name.endswith(".mlp.experts.gate_up_proj") or name.endswith(".mlp.experts.down_proj"):
            continue
        b, en = e["data_offsets"]
        if brk == "router-u8" and name == "model.layers.0.mlp.router.weight":
            put(name, "U8", [en - b], body[b:en])
            continue
        put(name, e["dtype"], e["shape"], body[b:en])
    layer = 0
    while f"blk.{layer}.ffn_gate_exps.weight" in stacks:
        pre = f"model.layers.{layer}.mlp.experts."
        (dim, ff, n_exp), gate = stacks[f"blk.{layer}.ffn_gate_exps.weight"]
        up = stacks[f"blk.{layer}.ffn_up_exps.weight"][1]
        mixed = [r for pair in zip(gate, up) for r in pair]  # rows e*ff+f: gate then up
        blocks, scales = parts(mixed)
        srows = 2 * ff - (1 if brk == "scales-shape" and layer == 0 else 0)
        if brk == "scale-ff" and layer == 0:
            scales = b"\xff" + scales[1:]
        put(pre + "gate_up_proj_blocks", "U8", [n_exp, 2 * ff, dim // 32, 16], blocks)
        put(pre + "gate_up_proj_scales", "U8", [n_exp, srows, dim // 32],
            scales[:n_exp * srows * (dim // 32)])
        blocks, scales = parts(stacks[f"blk.{layer}.ffn_down_exps.weight"][1])
        if brk == "blocks-dtype" and layer == 0:
            put(pre + "down_proj_blocks", "F16", [n_exp, dim, ff // 32, 8], blocks)
        else:
            put(pre + "down_proj_blocks", "U8", [n_exp, dim, ff // 32, 16], blocks)
        put(pre + "down_proj_scales", "U8", [n_exp, dim, ff // 32], scales)
        layer += 1
    if not layer:
        sys.exit(f"{gguf}: no MXFP4 expert stacks")
    h = json.dumps(out).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    open(tmp, "wb").write(struct.pack("<Q", len(h)) + h + bytes(buf))
    os.replace(tmp, path)
    cfg_path = os.path.join(folder, "config.json")
    cfg = json.load(open(cfg_path))
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    json.dump(cfg, open(cfg_path, "w"), indent=1)


main()
