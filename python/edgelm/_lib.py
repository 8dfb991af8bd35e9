"""Finds libedgelm.so and declares the C functions the package calls.

Where the library is looked for, first found wins:
  1. $EDGELM_LIBRARY, a path to the library (only it, when set);
  2. the build tree of the repository this package sits in (build/libedgelm.so: a checkout used
     without installing);
  3. the installed library by its soname (the dynamic linker's paths: `make install` puts it in
     /usr/local/lib), then by ctypes.util.find_library.

The app API (edgelm.h) gives models and tokenization; contexts, generation, logits, chat,
grammars, embeddings, quantization and evaluation go through the elm_* library API (context.h,
generate.h, chat.h, grammar.h, embed.h, quant.h, eval.h), whose structs are mirrored below field
for field: a change to one of them in include/edgelm/ must be made here too (tests/cli_python.sh
would fail)."""

import ctypes
import ctypes.util
import os
import pathlib
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char, c_char_p, c_double, c_float,
                    c_int, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p)

from .errors import Error, error_for

# The soname of the C library this package is written against (cmake/shared_lib.cmake).
SONAME = "libedgelm.so.0.1"
# ELM_TOOL_PRESERVED_MAX (chat.h): the most ids elm_chat_tool_preserved_ids writes
TOOL_PRESERVED_MAX = 8


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
                ("grammar", c_void_p), ("grammar_vocab", c_void_p), ("grammar_trigger", c_char_p),
                ("preserved", POINTER(c_int32)), ("n_preserved", c_int32)]


class GenStats(Structure):
    """elm_gen_stats (generate.h)."""

    _fields_ = [("prompt_tokens", c_int32), ("generated_tokens", c_int32),
                ("prefill_ms", c_double), ("ttft_ms", c_double), ("decode_ms", c_double),
                ("prefill_tps", c_double), ("decode_tps", c_double)]


# elm_token_cb: (text, len, id, user) -> non-zero stops the generation.
TokenCallback = CFUNCTYPE(c_int, POINTER(c_char), c_size_t, c_int32, c_void_p)


class ToolCall(Structure):
    """elm_tool_call (chat.h)."""

    _fields_ = [("name", c_char_p), ("arguments", c_char_p), ("id", c_char_p)]


class ToolChoice(Structure):
    """elm_tool_choice (chat.h): mode 0 none, 1 auto, 2 required; the function it names."""

    _fields_ = [("mode", c_int), ("only", c_char * 65)]


class ChatMsg(Structure):
    """elm_chat_msg (chat.h)."""

    _fields_ = [("role", c_char_p), ("content", c_char_p), ("tool_calls", POINTER(ToolCall)),
                ("n_tool_calls", c_int32), ("tool_call_id", c_char_p), ("reasoning", c_char_p)]


class ChatOpts(Structure):
    """elm_chat_opts (chat.h): reasoning effort (gpt-oss), the day (time_t, 0: today)."""

    _fields_ = [("reasoning_effort", c_char_p), ("now", ctypes.c_int64)]


class ToolCalls(Structure):
    """elm_tool_calls (chat.h)."""

    _fields_ = [("content", c_char_p), ("n", c_int32), ("calls", POINTER(ToolCall)),
                ("reasoning", c_char_p)]


class EmbedParams(Structure):
    """elm_embed_params (embed.h)."""

    _fields_ = [("pooling", c_int), ("no_normalize", c_bool)]


class TypeTraits(Structure):
    """elm_type_traits (types.h)."""

    _fields_ = [("name", c_char_p), ("block_size", c_int), ("block_bytes", c_size_t),
                ("bits_per_weight", c_double), ("to_float", c_void_p), ("from_float", c_void_p),
                ("file_type", c_uint32), ("fallback", c_int), ("bad_block", c_void_p),
                ("needs_imatrix", c_bool)]


class TypeOverride(Structure):
    """elm_type_override (quant.h)."""

    _fields_ = [("pattern", c_char_p), ("type", c_int)]


class QuantPolicy(Structure):
    """elm_quant_policy (quant.h)."""

    _fields_ = [("type", c_int), ("pure", c_bool), ("sensitive_type", c_int),
                ("overrides", POINTER(TypeOverride)), ("n_overrides", c_int32),
                ("recipe", c_uint32), ("imatrix", c_bool)]


class QuantParams(Structure):
    """elm_quant_params (quant.h)."""

    _fields_ = [("policy", QuantPolicy), ("method", c_int), ("calib", c_void_p),
                ("damp", c_double), ("act_order", c_bool), ("n_threads", c_int32),
                ("imatrix", c_void_p), ("imatrix_path", c_char_p), ("checkpoint", c_char_p),
                ("resume", c_bool), ("target_bytes", c_uint64),
                ("target_bpw", c_double), ("candidates", POINTER(c_int)),
                ("n_candidates", c_int32)]


# elm_quantize_progress_fn: (done, total, tensor, user) -> non-zero stops the run.
QuantProgress = CFUNCTYPE(c_int, c_int32, c_int32, c_char_p, c_void_p)
# elm_quantize_warn_fn: (message, user).
QuantWarn = CFUNCTYPE(None, c_char_p, c_void_p)


class QuantCallbacks(Structure):
    """elm_quantize_callbacks (quant.h)."""

    _fields_ = [("progress", QuantProgress), ("warn", QuantWarn), ("user", c_void_p),
                ("note", QuantWarn)]


class QuantSummary(Structure):
    """elm_quantize_summary (quant.h)."""

    _fields_ = [("n_tensors", c_int32), ("n_fallback", c_int32), ("n_params", c_int64),
                ("bytes_in", c_uint64), ("bytes_out", c_uint64), ("file_bytes", c_uint64),
                ("bits_per_weight", c_double), ("ratio", c_double), ("seconds", c_double),
                ("peak_rss", c_int64), ("peak_anon", c_int64)]


class QuantTensorInfo(Structure):
    """elm_quant_tensor_info (quant.h; ELM_NAME_MAX 96, ELM_REASON_MAX 80)."""

    _fields_ = [("name", c_char * 96), ("type", c_int), ("reason", c_char * 80),
                ("err_before", c_double), ("err_after", c_double), ("damp", c_double),
                ("dead_inputs", c_int64), ("predicted_cost", c_double)]


class QuantExpertFallback(Structure):
    """elm_quant_expert_fallback (quant.h; ELM_NAME_MAX 96)."""

    _fields_ = [("name", c_char * 96), ("expert", c_int32), ("tokens", c_int64),
                ("needed", c_int64)]


class QuantReport(Structure):
    """elm_quant_report (quant.h)."""

    _fields_ = [("summary", QuantSummary), ("n_tensors", c_int32),
                ("tensors", POINTER(QuantTensorInfo)), ("n_damp_raised", c_int32),
                ("n_expert_fallback", c_int32),
                ("expert_fallback", POINTER(QuantExpertFallback))]


class CalibSet(Structure):
    """elm_calib_set (quant.h)."""

    _fields_ = [("n", c_int32), ("ids", c_void_p), ("n_ids", c_void_p), ("n_tokens", c_int64)]


class Imatrix(Structure):
    """elm_imatrix (imatrix.h)."""

    _fields_ = [("n", c_int32), ("entries", c_void_p), ("dataset", c_char * 256),
                ("chunk_count", c_uint32), ("chunk_size", c_uint32)]


# elm_eval_callbacks' chunk: (model name, chunk, n_chunks, running ppl, user).
EvalChunk = CFUNCTYPE(None, c_char_p, c_int32, c_int32, c_double, c_void_p)


class EvalParams(Structure):
    """elm_eval_params (eval.h)."""

    _fields_ = [("ref", c_char_p), ("ref_logits", c_char_p), ("save_ref", c_char_p),
                ("models", POINTER(c_char_p)), ("n_models", c_int32), ("text", c_char_p),
                ("prompts", POINTER(c_char_p)), ("n_prompts", c_int32), ("n_ctx", c_int32),
                ("n_batch", c_int32), ("n_predict", c_int32), ("n_threads", c_int32),
                ("tokenizer", c_char_p), ("mmap", c_bool), ("type_k", c_int), ("type_v", c_int)]


class EvalCallbacks(Structure):
    """elm_eval_callbacks (eval.h)."""

    _fields_ = [("chunk", EvalChunk), ("note", QuantWarn), ("user", c_void_p)]

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
    "elm_model_vocab": (c_void_p, [c_void_p]),
    # chat.h, grammar.h
    "elm_chat_template_parse": (c_bool, [c_char_p, POINTER(c_int)]),
    "elm_chat_template_detect": (c_int, [c_char_p]),
    "elm_chat_template_name": (c_char_p, [c_int]),
    "elm_chat_template_names": (c_char_p, []),
    "elm_chat_template_has_tools": (c_bool, [c_int]),
    "elm_chat_template_channels": (c_bool, [c_int]),
    "elm_chat_tool_template_names": (c_char_p, []),
    "elm_chat_template_eot": (c_char_p, [c_int]),
    "elm_chat_special_id": (c_int32, [c_void_p, c_char_p]),
    "elm_chat_tool_preserved_ids": (c_int32, [c_int, c_void_p, _I32P]),
    "elm_chat_render_with": (c_int, [c_int, POINTER(ChatMsg), c_int32, c_char_p, c_bool,
                                     POINTER(ChatOpts), POINTER(c_void_p), POINTER(ElmError)]),
    "elm_tool_choice_parse": (c_int, [c_int, c_char_p, c_char_p, POINTER(ToolChoice),
                                      POINTER(ElmError)]),
    "elm_chat_tool_grammar": (c_int, [c_int, c_char_p, c_char_p, c_bool, c_bool,
                                      POINTER(c_void_p), POINTER(c_char_p), POINTER(ElmError)]),
    "elm_chat_parse_tool_calls": (c_int, [c_int, c_char_p, c_char_p, POINTER(ToolCalls),
                                          POINTER(ElmError)]),
    "elm_tool_calls_free": (None, [POINTER(ToolCalls)]),
    "elm_chat_tool_call_id": (None, [c_int, c_char_p, c_int32, c_char_p]),
    "elm_json_schema_to_gbnf": (c_int, [c_char_p, c_size_t, c_char_p, POINTER(c_void_p),
                                        POINTER(ElmError)]),
    "elm_json_object_gbnf": (c_char_p, []),
    "elm_grammar_parse": (c_int, [c_char_p, c_size_t, c_char_p, POINTER(c_void_p),
                                  POINTER(ElmError)]),
    "elm_grammar_free": (None, [c_void_p]),
    "elm_grammar_vocab_new_preserved": (c_void_p, [c_void_p, _I32P, c_int32, _I32P, c_int32]),
    "elm_grammar_vocab_free": (None, [c_void_p]),
    # embed.h
    "elm_embed_tokenize": (c_int, [c_void_p, c_char_p, c_size_t, POINTER(_I32P),
                                   POINTER(c_int64), POINTER(ElmError)]),
    "elm_embed": (c_int, [c_void_p, _I32P, c_int32, POINTER(EmbedParams), POINTER(c_float),
                          POINTER(ElmError)]),
    "elm_embed_dim": (c_int32, [c_void_p]),
    "elm_embed_pooling": (c_int, [c_void_p, c_int]),
    "elm_pooling_name": (c_char_p, [c_int]),
    "elm_pooling_from_name": (c_bool, [c_char_p, POINTER(c_int)]),
    # quant.h, imatrix.h, types.h
    "elm_type_from_name": (c_bool, [c_char_p, POINTER(c_int)]),
    "elm_kv_type_from_name": (c_bool, [c_char_p, POINTER(c_int)]),
    "elm_type_get": (POINTER(TypeTraits), [c_uint32]),
    "elm_type_names": (c_char_p, [c_bool]),
    "elm_type_writable": (c_bool, [c_int]),
    "elm_quant_recipe_from_name": (c_bool, [c_char_p, POINTER(c_uint32), POINTER(c_int)]),
    "elm_quant_recipe_names": (c_char_p, []),
    "elm_quant_method_from_name": (c_bool, [c_char_p, POINTER(c_int)]),
    "elm_calib_load": (c_int, [c_void_p, c_char_p, c_int32, c_int32, POINTER(CalibSet),
                               POINTER(ElmError)]),
    "elm_calib_free": (None, [POINTER(CalibSet)]),
    "elm_imatrix_load": (c_int, [c_char_p, POINTER(Imatrix), POINTER(ElmError)]),
    "elm_imatrix_free": (None, [POINTER(Imatrix)]),
    "elm_quantize": (c_int, [c_void_p, POINTER(QuantParams), c_char_p, POINTER(QuantCallbacks),
                             POINTER(QuantReport), POINTER(ElmError)]),
    "elm_quant_report_free": (None, [POINTER(QuantReport)]),
    # eval.h
    "elm_evaluate": (c_int, [POINTER(EvalParams), POINTER(EvalCallbacks), POINTER(c_void_p),
                             POINTER(ElmError)]),
    "elm_eval_run_report": (c_void_p, [c_void_p]),
    "elm_eval_run_free": (None, [c_void_p]),
    "elm_report_json": (c_void_p, [c_void_p]),
    "elm_report_svg": (c_void_p, [c_void_p, c_int]),
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


def take_string(ptr: "int | None") -> str:
    """The text of a malloc'd C string the library returned, freed (edgelm_free); OutOfMemoryError
    for NULL, which the library's string builders return only for lack of memory."""
    if not ptr:
        raise error_for(4, "out of memory")
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib().edgelm_free(ptr)


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
