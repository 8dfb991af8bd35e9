"""A vocabulary-only GGUF (v3) file written from a list of tokens, without numpy: a tokenizer of
the test's own making ("llama": SentencePiece-style, byte fallback when the 256 <0xXX> tokens are
there) for `edgelm synth --tiny --vocab`, where the fixtures' vocabularies lack what a test needs
(tool-call markers as control tokens: tests/python/check_package.py)."""
import os
import struct

# GGUF value types used here
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
# llama.cpp's token types
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def write(path, tokens, bos, eos, unk):
    """Writes tokens [(piece, token type)] with score 0 each, BOS, EOS and unknown ids bos, eos and
    unk, BOS added to text, as a GGUF of key/values only."""
    n = len(tokens)
    kvs = [("general.architecture", STRING, _string("llama")),
           ("tokenizer.ggml.model", STRING, _string("llama")),
           ("tokenizer.ggml.tokens", ARRAY,
            struct.pack("<IQ", STRING, n) + b"".join(_string(p) for p, _ in tokens)),
           ("tokenizer.ggml.scores", ARRAY, struct.pack(f"<IQ{n}f", F32, n, *[0] * n)),
           ("tokenizer.ggml.token_type", ARRAY,
            struct.pack(f"<IQ{n}i", I32, n, *(t for _, t in tokens))),
           ("tokenizer.ggml.bos_token_id", U32, struct.pack("<I", bos)),
           ("tokenizer.ggml.eos_token_id", U32, struct.pack("<I", eos)),
           ("tokenizer.ggml.unknown_token_id", U32, struct.pack("<I", unk)),
           ("tokenizer.ggml.add_bos_token", BOOL, struct.pack("<?", True))]
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)))
        for key, t, value in kvs:
            f.write(_string(key) + struct.pack("<I", t) + value)


def set_pre(src, dst, pre):
    """Copies the tensor-less GGUF src to dst with tokenizer.ggml.pre set to pre: the same
    vocabulary under another pre-tokenizer, for comparing two tokenizers on one file."""
    from gguf_tensors import Reader
    r = Reader(open(src, "rb").read())
    if r.take("4s") != b"GGUF" or r.take("I") != 3:
        raise SystemExit(f"{src}: not a GGUF v3 file")
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    if n_tensors:
        raise SystemExit(f"{src}: has tensors (a vocabulary-only file expected)")
    out, seen = [], False
    for _ in range(n_kv):
        start = r.p
        key, t = r.string(), r.take("I")
        r.skip_value(t)
        if key == "tokenizer.ggml.pre":
            out.append(_string(key) + struct.pack("<I", STRING) + _string(pre))
            seen = True
        else:
            out.append(r.d[start:r.p])
    if not seen:
        out.append(_string("tokenizer.ggml.pre") + struct.pack("<I", STRING) + _string(pre))
    with open(dst + ".tmp", "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(out)) + b"".join(out))
    os.replace(dst + ".tmp", dst)


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 5 or sys.argv[1] != "set-pre":
        raise SystemExit("usage: gguf_vocab.py set-pre SRC.gguf DST.gguf NAME")
    set_pre(*sys.argv[2:])
