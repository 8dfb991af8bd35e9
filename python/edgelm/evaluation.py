"""edgelm.evaluate: `edgelm eval --json` as a function, over the library's evaluation (eval.h:
elm_evaluate runs the passes, elm_report_json and elm_report_svg write the report and the plot),
so the figures are the CLI's own."""

import ctypes
import json
import os
import tempfile
from typing import Any, Dict, Optional, Sequence, Union

from . import _lib
from .errors import ArgumentError, error_for
from .model import _encode, _int32
from .quant import Path, _path


def evaluate(ref: Optional[Path], models: Union[Path, Sequence[Path]], text: Path,
             n_ctx: int = 512, n_batch: int = 0, prompts: Optional[Sequence[str]] = None,
             n_predict: int = 64, threads: int = 0, ref_logits: Optional[Path] = None,
             save_ref: Optional[Path] = None, svg: Optional[Path] = None, plot_y: str = "kld",
             mmap: bool = False, cache_type_k: str = "f32",
             cache_type_v: str = "f32") -> Dict[str, Any]:
    """evaluate(ref, models, text, n_ctx=512, ...) -> dict: `edgelm eval --json`.

    Compares each quantized model with the baseline on the chunks `edgelm perplexity` scores (KL
    divergence, top-1/top-5 agreement, Δp, perplexity change) and on greedy continuations of
    prompts (similarity, exact match, completion), with verdicts (PPL change < 5%: excellent,
    similarity > 90%: acceptable).

      ref         the full-precision baseline model (None with ref_logits)  (--ref)
      models      a quantized model's path, or a list of them  (-m)
      text        the UTF-8 evaluation text's file (at least 2 x n_ctx tokens)  (-f)
      n_ctx       tokens per chunk (default 512)  (-c)
      n_batch     tokens per forward pass (0: n_ctx)  (-b)
      prompts     prompts whose greedy continuations are compared (needs ref)  (--prompts)
      n_predict   tokens per continuation (default 64)  (-n)
      threads     0: all cores  (-t)
      ref_logits  the baseline's log-probs saved by save_ref, instead of its pass  (--ref-logits)
      save_ref    keep the baseline's log-probs in this file  (--save-ref)
      svg         also write a plot of file size against KLD (plot_y "ppl": perplexity), an
                  SVG file  (--plot, --plot-y)
      mmap        map GGUF files instead of reading them into memory  (--mmap)
      cache_type_k, cache_type_v
                  the KV cache of the models under test: "f32", "f16", "q8_0" or "q4_0";
                  the baseline's stays f32 (the same file as ref measures the cache's cost)
                  (--cache-type-k, --cache-type-v)

    Returns the report as a dict with the schema of docs/eval.schema.json: text, n_ctx, chunks,
    scored_tokens, prompts, n_predict, thresholds, baseline {name, path, size_mib, ppl, ...},
    models [{name, path, size_mib, ppl, ppl_change_pct, kld_mean, kld_p99, top1_pct, ...,
    verdicts {ppl, similarity}}]. Raises FileError for a missing file (naming it),
    ArgumentError for a text shorter than 2 x n_ctx tokens, a vocabulary that differs from the
    baseline's or arguments out of range, with the library's message."""
    lib = _lib.lib()
    if isinstance(models, (str, bytes, os.PathLike)):
        models = [models]
    if prompts is not None and (isinstance(prompts, (str, bytes)) or
                                not all(isinstance(x, str) for x in prompts)):
        raise ArgumentError("prompts: expected a list of strings", 5)
    if plot_y not in ("kld", "ppl"):
        raise ArgumentError(f"plot_y: {plot_y!r} is not kld or ppl", 5)
    kv = []
    for what, name in (("cache_type_k", cache_type_k), ("cache_type_v", cache_type_v)):
        t = ctypes.c_int()
        if not isinstance(name, str) or not lib.elm_kv_type_from_name(name.encode(), ctypes.byref(t)):
            raise ArgumentError(f"{what}: {name!r} is not f32, f16, q8_0 or q4_0", 5)
        kv.append(t.value)
    paths = [_path(m, f"models[{i}]") for i, m in enumerate(models)]
    texts = [_encode(x, f"prompts[{i}]") for i, x in enumerate(prompts or [])]
    c_models = (ctypes.c_char_p * max(len(paths), 1))(*paths)
    c_prompts = (ctypes.c_char_p * max(len(texts), 1))(*texts)
    opt = lambda p, what: None if p is None else _path(p, what)  # noqa: E731
    params = _lib.EvalParams(
        ref=opt(ref, "ref"), ref_logits=opt(ref_logits, "ref_logits"),
        save_ref=opt(save_ref, "save_ref"), models=c_models, n_models=len(paths),
        text=_path(text, "text"), prompts=c_prompts if texts else None, n_prompts=len(texts),
        n_ctx=_int32("n_ctx", n_ctx), n_batch=_int32("n_batch", n_batch),
        n_predict=_int32("n_predict", n_predict), n_threads=_int32("threads", threads),
        mmap=mmap, type_k=kv[0], type_v=kv[1])
    run, err = ctypes.c_void_p(), _lib.ElmError()
    try:
        status = lib.elm_evaluate(ctypes.byref(params), None, ctypes.byref(run), ctypes.byref(err))
        if status:
            raise error_for(status, err.msg)
        report = lib.elm_eval_run_report(run)
        doc = json.loads(_lib.take_string(lib.elm_report_json(report)))
        if svg is not None:
            plot = _lib.take_string(lib.elm_report_svg(report, 0 if plot_y == "kld" else 1))
            _write_atomic(svg, plot)
        return doc
    finally:
        lib.elm_eval_run_free(run)


def _write_atomic(path: Path, text: str) -> None:
    """text into path through a temporary file beside it, renamed: never a partial file."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".edgelm-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
