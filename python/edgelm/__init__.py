"""edgelm: run, quantize and validate edgelm models from Python through the C library
(libedgelm.so) with ctypes.

    import edgelm
    with edgelm.Model("model.gguf", n_ctx=2048) as model:
        print(model.generate("Once upon a time", max_tokens=64, temperature=0).text)
        for piece in model.generate("Hello", stream=True):
            print(piece, end="", flush=True)
        print(model.chat([{"role": "user", "content": "Hi"}]).text)
    edgelm.quantize("model.gguf", "model-q4_k_m.gguf", type="q4_k_m")
    report = edgelm.evaluate("model.gguf", ["model-q4_k_m.gguf"], "valid.txt")

Model (generate, chat, tokenize, detokenize, logits, embed), inspect(path), quantize,
evaluate, chat_templates, and the Error classes; the library is found as edgelm._lib describes
(EDGELM_LIBRARY overrides). docs/python.md in the repository."""

from .errors import (ArgumentError, ClosedError, Error, FileError, FormatError, OutOfMemoryError,
                     UnsupportedError)
from ._lib import LibraryNotFoundError
from .chat import ChatResult, chat_templates
from .model import GenerationResult, GenerationStats, Model, inspect
from .quant import quantize
from .evaluation import evaluate

__version__ = "0.1.0"

__all__ = ["Model", "GenerationResult", "GenerationStats", "ChatResult", "inspect", "quantize",
           "evaluate", "chat_templates", "Error", "FileError", "FormatError", "UnsupportedError",
           "OutOfMemoryError", "ArgumentError", "ClosedError", "LibraryNotFoundError",
           "__version__"]
