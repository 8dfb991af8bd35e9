"""edgelm.quantize: `edgelm quantize` as a function, over the library's quantizer (quant.h:
elm_quantize, with RTN, GPTQ and AWQ, llama-quantize's recipes and importance matrices)."""

import ctypes
import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from . import _lib
from .errors import ArgumentError, error_for
from .model import _int32, _load, _sigint_stops

Path = "str | os.PathLike"


def _path(p: Any, what: str) -> bytes:
    """A file argument as the bytes C takes (TypeError for anything but str, bytes or a path)."""
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise TypeError(f"{what} must be a path, not {type(p).__name__}")
    return os.fsencode(p)


def _type(name: str, what: str) -> int:
    """The elm_type a writable type's name stands for; ArgumentError listing them otherwise."""
    lib, t = _lib.lib(), ctypes.c_int()
    if (not isinstance(name, str) or not lib.elm_type_from_name(name.encode(), ctypes.byref(t))
            or not lib.elm_type_writable(t.value)):
        raise ArgumentError(f"{what}: unknown type {name!r} (use a type: "
                            f"{lib.elm_type_names(True).decode()}; or a recipe: "
                            f"{lib.elm_quant_recipe_names().decode()})", 5)
    return t.value


def _type_name(t: int) -> str:
    return _lib.lib().elm_type_get(t).contents.name.decode()


def quantize(src: Path, dst: Path, type: str, method: str = "rtn", calib: Optional[Path] = None,
             calib_samples: int = 0, seq_len: int = 512, imatrix: Optional[Path] = None,
             damp: float = 0.01, act_order: bool = False, pure: bool = False,
             keep_sensitive: Optional[str] = None,
             tensor_types: Optional[Mapping[str, str]] = None, threads: int = 0,
             resume: bool = False, target_size: int = 0, target_bpw: float = 0.0,
             candidates: Optional[Sequence[str]] = None,
             progress: Optional[Callable[[int, int, str], Any]] = None) -> Dict[str, Any]:
    """quantize(src, dst, type, method="rtn", calib=None, ...) -> dict: `edgelm quantize`.

    Writes the model at src as GGUF at dst in ggml's standard block types. Default policy: token
    embedding and output projection at q8_0, norms f32, every other matrix at type; matrices
    whose rows are not a multiple of 32 fall back to f16. pure=True puts every matrix at type
    (with method "rtn": the bytes llama-quantize --pure writes). A k-quant or i-quant name
    without pure is llama-quantize's recipe of that name: each tensor's type by its rules
    (q4_k_m: the file llama-quantize Q4_K_M writes).

      src             GGUF file, Hugging Face folder or llama2.c model.bin  (-m)
      dst             output GGUF file, written atomically: no file on any error  (-o)
      type            a tensor type or a llama-quantize recipe (both listed below)  (--type)
      method          "rtn" (round to nearest, default), "gptq" (Hessian error feedback) or
                      "awq" (activation-aware scales and clipping)  (--method)
      calib           calibration text for gptq/awq: JSONL from `edgelm calib` ("text" field)
                      or plain text, one sample per line  (--calib)
      calib_samples   use the first N samples (0: all)  (--calib-samples)
      seq_len         tokens per calibration sample, longer cut (default 512)  (--seq-len)
      imatrix         importance matrix (llama-imatrix / `edgelm imatrix` GGUF): rtn weighted
                      by it, as llama-quantize --imatrix  (--imatrix)
      damp            gptq damping, fraction of mean diag(H) (default 0.01)  (--damp)
      act_order       gptq: columns by descending diag(H), static block scales  (--act-order)
      pure            every matrix at type (no sensitive-tensor rule)  (--pure)
      keep_sensitive  type of token embedding and output (default q8_0; f16)  (--keep-sensitive)
      tensor_types    {glob: type} for tensors matching the glob, e.g.
                      {"blk.*.ffn_down": "q8_0"} (the last match wins)  (--tensor-type)
      threads         threads for the calibration passes, GPTQ's linear algebra and RTN's rows
                      (0: all cores)  (-t)
      resume          gptq/awq: keep a checkpoint dst + ".ckpt" after each block (deleted on
                      success) and continue from it when an interrupted run left one  (--resume;
                      without it no checkpoint is written, so a run that fails leaves no file)
      target_size     size budget: each matrix's type chosen from its measured sensitivity
                      (needs calib) so that the tensor data (the sum of the tensors' bytes; not
                      the GGUF header and metadata) are at most this many bytes  (--target-size)
      target_bpw      size budget as bits per weight: tensor data at most
                      target_bpw * weights / 8 bytes (at most 16)  (--target-bpw)
      candidates      the budget's types, e.g. ["q4_0", "q5_0", "q8_0"] (default: q2_k .. q6_k,
                      q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs; with imatrix also iq2_xs,
                      iq3_s)  (--candidates)
      progress        progress(done, total, name) after each tensor (rtn) or block (gptq/awq:
                      "blk.N", "output", "written"); an exception it raises stops the run and
                      is raised here, with no file left at dst. Ctrl-C stops it the same way
                      (KeyboardInterrupt) at the next tensor or block.

    types:   f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, iq2_xxs, iq2_xs, iq3_xxs, iq1_s, iq4_nl, iq3_s, iq2_s, iq4_xs, iq1_m, bf16, tq1_0, tq2_0, mxfp4
    recipes: q2_k, q3_k_s, q3_k_m, q3_k, q3_k_l, q4_k_s, q4_k_m, q4_k, q5_k_s, q5_k_m, q5_k, q6_k, iq4_nl, iq4_xs, mxfp4_moe, q2_k_s, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq2_m, iq3_xxs, iq3_xs, iq3_s, iq3_m

    Returns what `edgelm quantize --json` prints: method, type, pure, bits_per_weight,
    file_bytes, tensor_bytes, compression, seconds, peak_rss_mib, peak_anon_mib, n_fallback,
    (a budget) target_bytes, target_bpw, (gptq/awq/a budget) calib_samples, calib_tokens,
    (gptq/awq) expert_fallback [{name, expert, tokens, needed}],
    (gptq) damp_raised, tensors [{name, type, reason, (a budget) predicted_cost,
    (gptq/awq) out_err_before, out_err_after, (gptq) damp, dead_inputs}], and warnings (the
    lines the CLI prints as warnings and notes: fallbacks, raised damping, resuming).
    Raises FileError (a missing model, calib or imatrix file, naming it; dst not writable),
    FormatError, UnsupportedError, ArgumentError (an unknown type or method, gptq/awq without
    calib, an imatrix that does not match the model, a type llama-quantize writes only with an
    importance matrix without one, a recipe type edgelm does not write yet) with the library's
    message."""
    lib = _lib.lib()
    p = _lib.QuantParams(damp=damp, act_order=act_order, n_threads=_int32("threads", threads))
    recipe, base = ctypes.c_uint32(), ctypes.c_int()
    if isinstance(type, str) and lib.elm_quant_recipe_from_name(type.encode(), ctypes.byref(recipe),
                                                                ctypes.byref(base)):
        p.policy.recipe, p.policy.type = recipe.value, base.value
    else:
        p.policy.type = _type(type, "type")
    if pure and keep_sensitive:
        raise ArgumentError("keep_sensitive has no effect with pure (every matrix is at type)", 5)
    p.policy.pure = pure
    p.policy.sensitive_type = _type(keep_sensitive or "q8_0", "keep_sensitive")
    m = ctypes.c_int()
    if not isinstance(method, str) or not lib.elm_quant_method_from_name(method.encode(),
                                                                         ctypes.byref(m)):
        raise ArgumentError(f"method: unknown method {method!r} (use rtn, gptq or awq)", 5)
    p.method = m.value
    if method != "rtn" and calib is None:
        raise ArgumentError(f"method {method} needs calibration text (calib=FILE)", 5)
    if imatrix is not None and method != "rtn":
        raise ArgumentError("imatrix is used by method rtn only", 5)
    budget = bool(target_size) or target_bpw > 0
    if budget and calib is None:
        raise ArgumentError("a size budget measures each tensor on calibration text: give "
                            "calib=FILE", 5)
    if target_size and target_bpw > 0:
        raise ArgumentError("give target_size or target_bpw, not both", 5)
    p.target_bytes, p.target_bpw = int(target_size), float(target_bpw)
    menu = [_type(c, "candidates") for c in (candidates or [])]
    menu_arr = (ctypes.c_int * max(len(menu), 1))(*menu)
    if menu:
        p.candidates, p.n_candidates = menu_arr, len(menu)
    patterns = list((tensor_types or {}).items())
    overrides = (_lib.TypeOverride * max(len(patterns), 1))(
        *[_lib.TypeOverride(k.encode(), _type(v, f"tensor_types[{k!r}]")) for k, v in patterns])
    p.policy.overrides, p.policy.n_overrides = overrides, len(patterns)
    out = _path(dst, "dst")
    checkpoint = out + b".ckpt"
    if method != "rtn" and resume:
        p.checkpoint, p.resume = checkpoint, True

    raised, notes = [], []

    def on_progress(done, total, name, user):
        try:
            if progress is not None and not raised:
                progress(done, total, name.decode("utf-8", "replace"))
        except BaseException as e:  # C cannot unwind a Python exception: stop, raise below
            raised.append(e)
        return int(bool(raised))

    def on_note(message, user):
        notes.append(message.decode("utf-8", "replace"))

    callbacks = _lib.QuantCallbacks(progress=_lib.QuantProgress(on_progress),
                                    warn=_lib.QuantWarn(on_note), note=_lib.QuantWarn(on_note))
    handle = _load(_path(src, "src"), mapped=True)
    calib_set, im = _lib.CalibSet(), _lib.Imatrix()
    report, err = _lib.QuantReport(), _lib.ElmError()
    try:
        model = lib.edgelm_model_get(handle)
        if imatrix is not None:
            path = _path(imatrix, "imatrix")
            if lib.elm_imatrix_load(path, ctypes.byref(im), ctypes.byref(err)):
                raise error_for(err.code, err.msg)
            p.imatrix, p.imatrix_path = ctypes.addressof(im), path
        if method != "rtn" or budget:
            if lib.elm_calib_load(lib.elm_model_vocab(model), _path(calib, "calib"),
                                  _int32("seq_len", seq_len), _int32("calib_samples", calib_samples),
                                  ctypes.byref(calib_set), ctypes.byref(err)):
                raise error_for(err.code, err.msg)
            p.calib = ctypes.addressof(calib_set)
        with _sigint_stops(raised):
            status = lib.elm_quantize(model, ctypes.byref(p), out, ctypes.byref(callbacks),
                                      ctypes.byref(report), ctypes.byref(err))
        if raised:
            raise raised[0]
        if status:
            raise error_for(status, err.msg)
        try:
            return _summary(method, p, calib_set, report, notes)
        finally:
            lib.elm_quant_report_free(ctypes.byref(report))
    finally:
        lib.elm_calib_free(ctypes.byref(calib_set))
        lib.elm_imatrix_free(ctypes.byref(im))
        lib.edgelm_model_free(handle)


def _summary(method: str, p: "_lib.QuantParams", calib: "_lib.CalibSet",
             r: "_lib.QuantReport", warnings: list) -> Dict[str, Any]:
    """The report as `edgelm quantize --json` writes it (tools/edgelm/cmd_quantize.c), and the
    warnings."""
    s = r.summary
    d = {"method": method, "type": _type_name(p.policy.type), "pure": p.policy.pure,
         "bits_per_weight": s.bits_per_weight, "file_bytes": s.file_bytes,
         "tensor_bytes": s.bytes_out, "compression": s.ratio, "seconds": s.seconds,
         "peak_rss_mib": s.peak_rss / 1048576.0, "peak_anon_mib": s.peak_anon / 1048576.0,
         "n_fallback": s.n_fallback}
    if p.target_bytes or p.target_bpw > 0:
        d["target_bytes"], d["target_bpw"] = p.target_bytes, p.target_bpw
    if p.calib:
        d["calib_samples"], d["calib_tokens"] = calib.n, calib.n_tokens
    if method != "rtn":
        d["expert_fallback"] = [
            {"name": f.name.decode(), "expert": f.expert, "tokens": f.tokens, "needed": f.needed}
            for f in (r.expert_fallback[i] for i in range(r.n_expert_fallback))]
    if method == "gptq":
        d["damp_raised"] = r.n_damp_raised
    tensors = []
    for i in range(r.n_tensors):
        t = r.tensors[i]
        e = {"name": t.name.decode(), "type": _type_name(t.type), "reason": t.reason.decode()}
        if t.predicted_cost >= 0:
            e["predicted_cost"] = t.predicted_cost
        if t.err_before >= 0:
            e["out_err_before"], e["out_err_after"] = t.err_before, t.err_after
        if t.damp > 0:
            e["damp"], e["dead_inputs"] = t.damp, t.dead_inputs
        tensors.append(e)
    d["tensors"], d["warnings"] = tensors, warnings
    return d
