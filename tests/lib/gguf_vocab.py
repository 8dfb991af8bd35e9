"""A vocabulary-only GGUF (v3) file written from a list of tokens, without numpy: a tokenizer of
the test's own making ("llama": SentencePiece-style, byte fallback when the 256 <0xXX> tokens are
there) for `edgelm synth --tiny --vocab`, where the fixtures' vocabularies lack what a test needs
(tool-call markers as control tokens: tests/python/check_package.py)."""
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
