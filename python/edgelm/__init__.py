"""edgelm: run edgelm models from Python through the C library (libedgelm.so) with ctypes.

    import edgelm
    with edgelm.Model("model.gguf", n_ctx=2048) as model:
        print(model.generate("Once upon a time", max_tokens=64, temperature=0).text)
        for piece in model.generate("Hello", stream=True):
            print(piece, end="", flush=True)

Model (generate, tokenize, detokenize, logits), inspect(path), and the Error classes; the library
is found as edgelm._lib describes (EDGELM_LIBRARY overrides). docs/python.md in the repository."""

from .errors import (ArgumentError, ClosedError, Error, FileError, FormatError, OutOfMemoryError,
                     UnsupportedError)
from ._lib import LibraryNotFoundError
from .model import GenerationResult, GenerationStats, Model, inspect

__version__ = "0.1.0"

__all__ = ["Model", "GenerationResult", "GenerationStats", "inspect", "Error", "FileError",
           "FormatError", "UnsupportedError", "OutOfMemoryError", "ArgumentError", "ClosedError",
           "LibraryNotFoundError", "__version__"]
