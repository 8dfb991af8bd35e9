#!/usr/bin/env python3
"""An independent decoder of the sub-4-bit i-quants and ternary types, written from
docs/kquants.md ("Sub-4-bit i-quants"), with numpy; and the check of tests/cli_iquant.sh: it
decodes every block of the tensors of those types in the GGUF files given and compares the result,
bit for bit, with the library's dequantization (the type table's to_float, called through
libedgelm's exported elm_type_get). It also decodes each TQ1_0 tensor again with every byte of
its first block set to 243 + (i mod 13), values no 5-trit number has, which the page says decode
as ggml decodes them. The codebooks are read from src/codecs/iquant_grids.c, the repository's
compact codes, and expanded here as the page says.

Usage: iquant_decode.py LIBEDGELM REPO_ROOT FILE.gguf...
Prints one line per file (tensors, blocks, differing weights); exits 1 on any difference."""
import ctypes
import os
import re
import sys

import numpy as np

from gguf_tensors import layout

IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ3_S, IQ2_S, IQ1_M, TQ1_0, TQ2_0 = 16, 17, 18, 19, 21, 22, 29, 34, 35
BLOCK_BYTES = {IQ2_XXS: 66, IQ2_XS: 74, IQ2_S: 82, IQ3_XXS: 98, IQ3_S: 110, IQ1_S: 50, IQ1_M: 56,
               TQ1_0: 54, TQ2_0: 66}


def grids(root):
    """The page's codebooks: {name: int array [points, coordinates]} of signed level values."""
    src = open(os.path.join(root, "src/codecs/iquant_grids.c")).read()
    levels = {"iq2xxs": ([8, 25, 43], 8, 2), "iq2xs": ([8, 25, 43], 8, 2),
              "iq2s": ([8, 25, 43], 8, 2), "iq3xxs": ([4, 12, 20, 28, 36, 44, 52, 62], 4, 3),
              "iq3s": ([1, 3, 5, 7, 9, 11, 13, 15], 4, 3), "iq1s": ([-1, 0, 1], 8, 2)}
    out = {}
    for name, (lv, n_coord, bits) in levels.items():
        body = re.search(r"elm_" + name + r"_codes\[\d+\] = \{(.*?)\};", src, re.S).group(1)
        codes = np.array([int(v, 16) for v in re.findall(r"0x[0-9a-f]+", body)])
        idx = (codes[:, None] >> (bits * np.arange(n_coord))) & ((1 << bits) - 1)
        out[name] = np.array(lv)[idx]
    return out


def f16(b, off):
    return np.frombuffer(b[:, off:off + 2].tobytes(), dtype="<f2").astype(np.float32)


def bits_of(x, n):
    """x's low n bits, least significant first, as a trailing axis of 0/1."""
    return (x[..., None] >> np.arange(n)) & 1


def sign_bits(code7):
    """A 7-bit sign code completed by the page's parity rule to 8 sign bits."""
    b = bits_of(code7, 7)
    return np.concatenate([b, b.sum(-1, keepdims=True) & 1], -1)


def u16(b, off, n):
    return b[:, off:off + 2 * n:2].astype(np.int64) | b[:, off + 1:off + 2 * n:2].astype(np.int64) << 8


def ints(t, b, G):
    """Blocks b [nb, bytes] into (d [nb] float32 with its factor, sc [nb, 16], q [nb, 256])."""
    nb = b.shape[0]
    if t in (IQ2_XXS, IQ3_XXS):
        words = u16(b, 2 if t == IQ2_XXS else 66, 32 if t == IQ2_XXS else 16).reshape(nb, 8, -1)
        if t == IQ2_XXS:  # per 32 weights: 4 index bytes, then a 32-bit word of signs and scale
            aux = words[:, :, 2] | words[:, :, 3] << 16
            idx = b[:, 2:66].reshape(nb, 8, 8)[:, :, :4].astype(np.int64)
            mag = G["iq2xxs"][idx].reshape(nb, 8, 4, 8)
        else:
            aux = words[:, :, 0] | words[:, :, 1] << 16
            idx = b[:, 2:66].reshape(nb, 8, 4, 2).astype(np.int64)
            mag = G["iq3xxs"][idx].reshape(nb, 8, 4, 8)
        s = sign_bits((aux[..., None] >> (7 * np.arange(4))) & 127)
        q = np.where(s == 1, -mag, mag).reshape(nb, 256)
        sc = np.repeat(2 * (aux >> 28) + 1, 2, axis=1)
        d = f16(b, 0) * np.float32(0.125 if t == IQ2_XXS else 0.25)
    elif t == IQ2_XS:
        v = u16(b, 2, 32)
        mag = G["iq2xs"][v & 511]
        q = np.where(sign_bits(v >> 9) == 1, -mag, mag).reshape(nb, 256)
        sc = 2 * np.stack([b[:, 66:74] & 15, b[:, 66:74] >> 4], -1).reshape(nb, 16).astype(np.int64) + 1
        d = f16(b, 0) * np.float32(0.125)
    elif t == IQ2_S:
        hi = (b[:, 66:74, None].astype(np.int64) >> (2 * np.arange(4))) & 3
        idx = b[:, 2:34].astype(np.int64) | hi.reshape(nb, 32) << 8
        mag = G["iq2s"][idx]
        q = np.where(bits_of(b[:, 34:66], 8) == 1, -mag, mag).reshape(nb, 256)
        sc = 2 * np.stack([b[:, 74:82] & 15, b[:, 74:82] >> 4], -1).reshape(nb, 16).astype(np.int64) + 1
        d = f16(b, 0) * np.float32(0.125)
    elif t == IQ3_S:
        hi = bits_of(b[:, 66:74].astype(np.int64), 8).reshape(nb, 64)
        idx = b[:, 2:66].astype(np.int64) | hi << 8
        mag = G["iq3s"][idx].reshape(nb, 32, 8)
        q = np.where(bits_of(b[:, 74:106], 8) == 1, -mag, mag).reshape(nb, 256)
        s32 = np.stack([b[:, 106:110] & 15, b[:, 106:110] >> 4], -1).reshape(nb, 8).astype(np.int64)
        sc = np.repeat(2 * s32 + 1, 2, axis=1)
        d = f16(b, 0)
    elif t in (IQ1_S, IQ1_M):
        if t == IQ1_S:
            h = u16(b, 34, 8)
            high = ((h[..., None] >> (3 * np.arange(4))) & 7).reshape(nb, 32)
            minus = np.repeat(h >> 15, 4, axis=1)
            sc = np.repeat(2 * ((h >> 12) & 7) + 1, 2, axis=1)
            idx = b[:, 2:34].astype(np.int64) | high << 8
            d = f16(b, 0)
        else:
            nib = np.stack([b[:, 32:48] & 15, b[:, 32:48] >> 4], -1).reshape(nb, 32).astype(np.int64)
            idx = b[:, 0:32].astype(np.int64) | (nib & 7) << 8
            minus = nib >> 3
            w = u16(b, 48, 4)
            sc = 2 * ((w[..., None] >> (3 * np.arange(4))) & 7).reshape(nb, 16) + 1
            top = (w[:, 0] >> 12) | (w[:, 1] >> 12) << 4 | (w[:, 2] >> 12) << 8 | (w[:, 3] >> 12) << 12
            d = top.astype("<u2").view("<f2").astype(np.float32)
        q = (8 * G["iq1s"][idx] + np.where(minus == 1, -1, 1)[..., None]).reshape(nb, 256)
        d = d * np.float32(0.125)
    elif t == TQ1_0:
        def trits(x, n):  # the page's fixed-point digits: the top base-3 digit of x·3^k mod 256
            k = (x[..., None].astype(np.int64) * 3 ** np.arange(n)) & 255
            return (k * 3 >> 8) - 1
        q = np.concatenate([trits(b[:, 0:32], 5).transpose(0, 2, 1).reshape(nb, 160),
                            trits(b[:, 32:48], 5).transpose(0, 2, 1).reshape(nb, 80),
                            trits(b[:, 48:52], 4).transpose(0, 2, 1).reshape(nb, 16)], 1)
        sc = np.ones((nb, 16), np.int64)
        d = f16(b, 52)
    else:  # TQ2_0
        c = (b[:, 0:64].reshape(nb, 2, 1, 32).astype(np.int64) >> (2 * np.arange(4))[:, None]) & 3
        q = (c - 1).reshape(nb, 256)
        sc = np.ones((nb, 16), np.int64)
        d = f16(b, 64)
    return d, sc, q


def decode(t, raw, G):
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, BLOCK_BYTES[t])
    d, sc, q = ints(t, b, G)
    # (d·sc)·q, each product rounded to float32, as the page says
    ds = (d[:, None] * sc.astype(np.float32)).astype(np.float32)
    return (np.repeat(ds, 16, axis=1) * q.astype(np.float32)).astype(np.float32).reshape(-1)


class Traits(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("block_size", ctypes.c_int),
                ("block_bytes", ctypes.c_size_t), ("bits_per_weight", ctypes.c_double),
                ("to_float", ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64))]


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.elm_type_get.restype = ctypes.POINTER(Traits)
    G = grids(sys.argv[2])
    bad_total = 0
    for path in sys.argv[3:]:
        data, table = layout(path)
        n_tensors = n_blocks = bad = 0
        for name, ne, t, off in table:
            if t not in BLOCK_BYTES:
                continue
            n = int(np.prod(ne))
            raw = bytearray(data[off:off + n // 256 * BLOCK_BYTES[t]])
            samples = [raw]
            if t == TQ1_0:
                patched = bytearray(raw)
                patched[0:52] = bytes(243 + i % 13 for i in range(52))
                samples.append(patched)
            tt = lib.elm_type_get(t)
            if not tt:
                sys.exit(f"{path}: {name}: libedgelm does not know type {t}")
            for r in samples:
                buf = (ctypes.c_uint8 * len(r)).from_buffer(r)
                out = np.zeros(n, np.float32)
                tt.contents.to_float(ctypes.addressof(buf), out.ctypes.data, n)
                ref = decode(t, bytes(r), G)
                bad += int((out.view(np.uint32) != ref.view(np.uint32)).sum())
            n_tensors += 1
            n_blocks += n // 256
        print(f"{os.path.basename(path)}: {n_tensors} tensors, {n_blocks} blocks, {bad} weights differ")
        if n_tensors == 0 or n_blocks < 100:
            print(f"{path}: too few i-quant blocks to check")
            bad += 1
        bad_total += bad
    sys.exit(1 if bad_total else 0)


if __name__ == "__main__":
    main()
