"""Finds libedgelm.so and declares the C functions the package calls.

Where the library is looked for, first found wins:
  1. $EDGELM_LIBRARY, a path to the library (only it, when set);
  2. the build tree of the repository this package sits in (build/libedgelm.so: a checkout used
     without installing);
  3. the installed library by its soname (the dynamic linker's paths: `make install` puts it in
     /usr/local/lib), then by ctypes.util.find_library.

The app API (edgelm.h) gives models and tokenization; contexts, generation and logits go through
the elm_* library API (context.h, generate.h), whose structs are mirrored below field for field:
a change to one of them in include/edgelm/ must be made here too (tests/cli_python.sh would
fail)."""

import ctypes
import ctypes.util
import os
import pathlib
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char, c_char_p, c_double, c_float,
                    c_int, c_int32, c_size_t, c_uint64, c_void_p)

from .errors import Error

# The soname of the C library this package is written against (cmake/shared_lib.cmake).
SONAME = "libedgelm.so.0.1"


class ElmError(Structure):
    """elm_error (error.h): a status and its message."""

    _fields_ = [("code", c_int), ("msg", c_char * 512)]


class ContextParams(Structure):
    """elm_context_params (context.h)."""

    _fields_ = [("n_ctx", c_int32), ("n_batch", c_int32), ("n_threads", c_int32),
                ("type_k", c_int), ("type_v", c_int), ("ggml_rounding", c_bool),
                ("swa_full", c_bool), ("n_seq", c_int32)]


class SamplerParams(Structure):
    """elm_sampler_params (sampler.h)."""

    _fields_ = [("temp", c_float), ("top_k", c_int32), ("top_p", c_float), ("min_p", c_float),
                ("repeat_penalty", c_float), ("repeat_last_n", c_int32), ("seed", c_uint64)]


class GenParams(Structure):
    """elm_gen_params (generate.h)."""

    _fields_ = [("n_predict", c_int32), ("ignore_eos", c_bool), ("sampling", SamplerParams),
                ("n_keep", c_int32), ("no_context_shift", c_bool),
                ("grammar", c_void_p), ("grammar_vocab", c_void_p)]


class GenStats(Structure):
    """elm_gen_stats (generate.h)."""

    _fields_ = [("prompt_tokens", c_int32), ("generated_tokens", c_int32),
                ("prefill_ms", c_double), ("ttft_ms", c_double), ("decode_ms", c_double),
                ("prefill_tps", c_double), ("decode_tps", c_double)]


# elm_token_cb: (text, len, id, user) -> non-zero stops the generation.
TokenCallback = CFUNCTYPE(c_int, POINTER(c_char), c_size_t, c_int32, c_void_p)

_I32P = POINTER(c_int32)
_PROTOTYPES = {
    "edgelm_model_load": (c_int, [c_char_p, POINTER(c_void_p), c_char_p, c_size_t]),
    "edgelm_model_load_mapped": (c_int, [c_char_p, POINTER(c_void_p), c_char_p, c_size_t]),
    "edgelm_model_free": (None, [c_void_p]),
    "edgelm_model_get": (c_void_p, [c_void_p]),
    "edgelm_model_info": (c_void_p, [c_void_p]),
    "edgelm_tokenize": (c_int32, [c_void_p, c_char_p, c_int, c_int, _I32P, c_int32]),
    "edgelm_detokenize": (c_void_p, [c_void_p, _I32P, c_int32]),
    "edgelm_free": (None, [c_void_p]),
    "elm_context_new": (c_int, [c_void_p, POINTER(ContextParams), POINTER(c_void_p),
                                POINTER(ElmError)]),
    "elm_context_free": (None, [c_void_p]),
    "elm_context_reset": (None, [c_void_p]),
    "elm_forward": (c_int, [c_void_p, _I32P, c_int32, POINTER(c_float), c_bool,
                            POINTER(ElmError)]),
    "elm_generate": (c_int, [c_void_p, _I32P, c_int32, POINTER(GenParams), TokenCallback,
                             c_void_p, _I32P, c_int32, _I32P, POINTER(GenStats),
                             POINTER(ElmError)]),
    "elm_sampler_defaults": (SamplerParams, []),
}


class LibraryNotFoundError(Error):
    """libedgelm.so could not be loaded from any of the places the package looks (the message
    lists them); set EDGELM_LIBRARY to its path."""


def _candidates() -> "list[str]":
    """The paths and names to try, in order (the module docstring)."""
    env = os.environ.get("EDGELM_LIBRARY")
    if env:
        return [env]
    tree = pathlib.Path(__file__).resolve().parents[2] / "build" / "libedgelm.so"
    found = ctypes.util.find_library("edgelm")
    return [str(tree)] * tree.is_file() + [SONAME] + [found] * bool(found)


_lock = threading.Lock()
_lib = None


def lib() -> ctypes.CDLL:
    """The loaded library with its prototypes declared (loaded once, on first use).
    Raises LibraryNotFoundError when no candidate loads."""
    global _lib
    with _lock:
        if _lib is None:
            tried = []
            for name in _candidates():
                try:
                    handle = ctypes.CDLL(name)
                    break
                except OSError as e:
                    tried.append(f"{name} ({e})")
            else:
                raise LibraryNotFoundError("libedgelm.so not found; tried: " + "; ".join(tried) +
                                           " (set EDGELM_LIBRARY to its path)")
            for fn, (restype, argtypes) in _PROTOTYPES.items():
                f = getattr(handle, fn)
                f.restype, f.argtypes = restype, argtypes
            _lib = handle
        return _lib
