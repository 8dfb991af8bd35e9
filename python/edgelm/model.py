"""Model: a loaded model with one inference context, and what its calls return.

A Model owns an edgelm_model handle (the weights, read-only) and one elm_context (its KV cache,
n_ctx tokens). Each generate / chat / logits / embed call starts from an empty cache, so calls are
independent. Calls on one Model are serialised by a lock; several Models run in parallel threads
(the C calls release the GIL)."""

import contextlib
import ctypes
import json
import os
import queue
import random
import signal
import threading
from dataclasses import dataclass
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Union

from . import _lib, chat as _chat
from .chat import ChatResult
from .errors import ArgumentError, ClosedError, Error, error_for

try:
    import numpy
except ImportError:  # optional: logits come back as lists without it
    numpy = None

Text = Union[str, bytes]


@dataclass(frozen=True)
class GenerationStats:
    """Figures of one generation (elm_gen_stats): token counts, and times in milliseconds and
    rates in tokens per second."""

    prompt_tokens: int
    generated_tokens: int
    prefill_ms: float
    ttft_ms: float       # prompt submitted -> first token sampled
    decode_ms: float     # the decode steps after the first token
    prefill_tps: float
    decode_tps: float    # tokens after the first per second


@dataclass(frozen=True)
class GenerationResult:
    """What Model.generate returns: the generated text, the generated token ids (EOS not
    included), the prompt's ids as fed, and the stats."""

    text: str
    ids: List[int]
    prompt_ids: List[int]
    stats: GenerationStats


def _encode(text: Text, what: str) -> bytes:
    """text as the NUL-terminated UTF-8 the C library takes; ArgumentError for bytes that are not
    UTF-8 and for NUL characters (C would stop reading there)."""
    if isinstance(text, str):
        data = text.encode("utf-8", "surrogatepass")
    elif isinstance(text, (bytes, bytearray)):
        data = bytes(text)
    else:
        raise TypeError(f"{what} must be str or bytes, not {type(text).__name__}")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ArgumentError(f"{what} is not valid UTF-8: {e}", 5) from None
    if b"\0" in data:
        raise ArgumentError(f"{what} contains a NUL character at byte {data.index(0)}", 5)
    return data


def _int32(name: str, value: int) -> int:
    """value, checked to fit the C int32_t it is passed as (ctypes would wrap it silently)."""
    if not -2**31 <= value < 2**31:
        raise ArgumentError(f"{name} {value} out of range for int32", 5)
    return value


def _load(path: "str | os.PathLike", mapped: bool = False) -> ctypes.c_void_p:
    """edgelm_model_load (mapped: edgelm_model_load_mapped): the model handle, or the library's
    error raised."""
    handle, msg = ctypes.c_void_p(), ctypes.create_string_buffer(512)
    lib = _lib.lib()
    load = lib.edgelm_model_load_mapped if mapped else lib.edgelm_model_load
    status = load(os.fsencode(path), ctypes.byref(handle), msg, len(msg))
    if status:
        raise error_for(status, msg.value)
    return handle


def _info(handle: ctypes.c_void_p) -> dict:
    """edgelm_model_info parsed."""
    return json.loads(_lib.take_string(_lib.lib().edgelm_model_info(handle)))


def inspect(path: "str | os.PathLike") -> dict:
    """What the model at path (GGUF file, Hugging Face folder or llama2.c checkpoint) is, as a
    dict: path, architecture, n_vocab, n_ctx_train, dim, n_layers, n_heads, n_kv_heads,
    head_dim, ffn_dim, params, bytes (of the weights), bos_id, eos_id (-1: none), add_bos,
    chat_template (str or None). A GGUF file is mapped to read them, not read: its weights stay on
    disk. Raises FileError for a missing file, FormatError or UnsupportedError for one edgelm
    cannot run."""
    handle = _load(path, mapped=True)
    try:
        return _info(handle)
    finally:
        _lib.lib().edgelm_model_free(handle)


@contextlib.contextmanager
def _sigint_stops(raised: list):
    """While a generation runs in the main thread under Python's default SIGINT handler, Ctrl-C
    appends a KeyboardInterrupt to raised (which the token callback answers with "stop")
    instead of raising it wherever the callback happens to be, where ctypes could only print it.
    Other threads, and handlers the program installed, are left alone."""
    if (threading.current_thread() is not threading.main_thread() or
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: raised.append(KeyboardInterrupt()))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Model:
    """A model loaded for inference, with a KV cache of n_ctx tokens.

    path: a GGUF file, a Hugging Face folder or a llama2.c checkpoint.
    n_ctx: KV cache size in tokens; 0: the trained context, at most 4096 (as `edgelm run`).
    n_threads: threads of the forward pass; 0: all online cores.
    n_batch: most prompt tokens per forward pass; 0: n_ctx.

    Use as a context manager, or call close(). Raises FileError (missing file), FormatError,
    UnsupportedError, ArgumentError (n_ctx, n_threads out of range) with the library's message."""

    def __init__(self, path: "str | os.PathLike", n_ctx: int = 0, n_threads: int = 0,
                 n_batch: int = 0):
        self._lib = _lib.lib()
        self._lock = threading.Lock()
        self._streaming = set()  # ids of the threads iterating a stream of this model
        # (end-of-turn id, preserved ids) -> elm_grammar_vocab ending there (and at EOS), those
        # control tokens as their text
        self._grammar_vocabs = {}
        self._ctx = None
        self._model = _load(path)
        try:
            self.info = _info(self._model)
            if n_ctx == 0:
                train = self.info["n_ctx_train"]
                n_ctx = train if 0 < train < 4096 else 4096
            params = _lib.ContextParams(n_ctx=_int32("n_ctx", n_ctx),
                                        n_batch=_int32("n_batch", n_batch),
                                        n_threads=_int32("n_threads", n_threads))
            ctx, err = ctypes.c_void_p(), _lib.ElmError()
            status = self._lib.elm_context_new(self._lib.edgelm_model_get(self._model),
                                               ctypes.byref(params), ctypes.byref(ctx),
                                               ctypes.byref(err))
            if status:
                raise error_for(status, err.msg)
            self._ctx = ctx
            self.n_ctx = n_ctx
        except BaseException:
            self._lib.edgelm_model_free(self._model)
            self._model = None
            raise

    # ---- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Frees the context and the model (a second call does nothing), after the call running
        on it in another thread, if any. Raises Error when called inside the loop of one of its
        streams (close the stream first). tokenize and detokenize must not run meanwhile."""
        self._not_streaming_here()
        with self._lock:
            self._free()

    def _free(self) -> None:
        """Frees what the model owns, the grammar vocabularies (which point into its vocabulary)
        first."""
        if self._model is not None:
            for gv in self._grammar_vocabs.values():
                self._lib.elm_grammar_vocab_free(gv)
            self._grammar_vocabs.clear()
            self._lib.elm_context_free(self._ctx)
            self._lib.edgelm_model_free(self._model)
            self._ctx = self._model = None

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._model is None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_model", None) is not None and not self._streaming:
            self._free()

    def _not_streaming_here(self) -> None:
        """Error when this thread is iterating one of this model's streams: the stream's worker
        holds the model, so the call would wait for itself."""
        if threading.get_ident() in self._streaming:
            raise Error("the model is generating a stream in this thread: finish or close the "
                        "stream first")

    def _check_open(self) -> None:
        """ClosedError once close() was called."""
        if self._model is None:
            raise ClosedError("the model is closed")

    @contextlib.contextmanager
    def _use(self):
        """Holds the lock that serialises the calls on the context, checked (once the lock is
        held, so a close() in another thread cannot come between): ClosedError once closed,
        Error inside a stream of this thread."""
        self._not_streaming_here()
        with self._lock:
            self._check_open()
            yield

    # ---- tokens ---------------------------------------------------------------------------------

    def tokenize(self, text: Text, add_special: bool = True, parse_special: bool = False
                 ) -> List[int]:
        """Token ids of text (str, or UTF-8 bytes). add_special: BOS first where the model adds
        one (as `edgelm run`); parse_special: control tokens written in the text ("<|im_start|>")
        become their ids. ArgumentError for bytes that are not UTF-8 or a NUL character."""
        self._check_open()
        data = _encode(text, "text")
        bos = int(add_special and self.info["add_bos"])
        n = self._lib.edgelm_tokenize(self._model, data, bos, int(parse_special), None, 0)
        ids = (ctypes.c_int32 * max(n, 1))()
        if n < 0 or self._lib.edgelm_tokenize(self._model, data, bos, int(parse_special),
                                              ids, n) != n:
            raise Error("tokenization failed")
        return list(ids[:n])

    def _ids(self, ids: Sequence[int]) -> "ctypes.Array":
        """ids as a C array, each checked to be a token of the vocabulary (ArgumentError)."""
        n_vocab = self.info["n_vocab"]
        for i in ids:
            if not 0 <= i < n_vocab:
                raise ArgumentError(f"token id {i} out of range [0, {n_vocab})", 5)
        return (ctypes.c_int32 * len(ids))(*ids)

    def detokenize(self, ids: Sequence[int]) -> str:
        """The text of token ids (BOS and EOS write nothing). ArgumentError for an id outside the
        vocabulary."""
        self._check_open()
        return _lib.take_string(self._lib.edgelm_detokenize(self._model, self._ids(ids), len(ids)))

    # ---- logits ---------------------------------------------------------------------------------

    def logits(self, ids: Sequence[int], all: bool = False) -> "numpy.ndarray | List[float]":
        """The logits after the token ids, run from an empty cache in one pass: the row that
        predicts the next token, [n_vocab] floats; with all=True every position's, [len(ids),
        n_vocab]. A numpy float32 array when numpy is installed, lists of floats otherwise.
        ArgumentError for an empty list, ids out of the vocabulary or more than n_ctx of them."""
        n_vocab, n = self.info["n_vocab"], len(ids)
        rows = n if all else 1
        out = (ctypes.c_float * (rows * n_vocab))()
        with self._use():
            c_ids, err = self._ids(ids), _lib.ElmError()
            self._lib.elm_context_reset(self._ctx)
            status = self._lib.elm_forward(self._ctx, c_ids, n, out, all, ctypes.byref(err))
        if status:
            raise error_for(status, err.msg)
        if numpy is not None:
            a = numpy.frombuffer(out, dtype=numpy.float32).copy()
            return a.reshape(rows, n_vocab) if all else a
        flat = list(out)
        return [flat[r * n_vocab:(r + 1) * n_vocab] for r in range(rows)] if all else flat

    # ---- generation -----------------------------------------------------------------------------

    def generate(self, prompt: Text, max_tokens: int = 128, temperature: float = 0.8,
                 top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
                 repeat_penalty: float = 1.0, seed: Optional[int] = None,
                 ignore_eos: bool = False, stream: bool = False
                 ) -> Union[GenerationResult, Iterator[str]]:
        """Continues prompt (str, or UTF-8 bytes; BOS added where the model adds one) from an
        empty cache with up to max_tokens tokens, stopping at EOS unless ignore_eos.

        Sampling as `edgelm run` (llama.cpp's order and defaults): repeat_penalty, top_k (0: off),
        top_p (1: off), min_p (0: off), temperature (0: greedy); seed (None: a random one) makes a
        sampled run repeatable.

        Returns a GenerationResult (.text, .ids, .prompt_ids, .stats). With stream=True returns an
        iterator of text pieces instead, as they are generated; leaving the loop early (break,
        an exception, close()) stops the generation. Ctrl-C stops it too (KeyboardInterrupt).
        ArgumentError for max_tokens < 1, a prompt that is not UTF-8 or does not fit in n_ctx;
        ClosedError on a closed model."""
        gp = self._gen_params(max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed,
                              ignore_eos)
        prompt_ids = self.tokenize(prompt)
        if stream:
            return self._stream(prompt_ids, gp)
        pieces = []
        result = self._run(prompt_ids, gp, pieces.append)
        return GenerationResult("".join(pieces), *result)

    def _gen_params(self, max_tokens: int, temperature: float, top_k: int, top_p: float,
                    min_p: float, repeat_penalty: float, seed: Optional[int],
                    ignore_eos: bool) -> "_lib.GenParams":
        """elm_gen_params of generate's and chat's arguments (ArgumentError for max_tokens < 1);
        a random seed for None."""
        if _int32("max_tokens", max_tokens) < 1:
            raise ArgumentError(f"max_tokens must be > 0 (got {max_tokens})", 5)
        if seed is None:
            seed = random.getrandbits(64)
        sampling = self._lib.elm_sampler_defaults()  # repeat_last_n as `edgelm run`
        sampling.temp, sampling.top_k, sampling.top_p = temperature, _int32("top_k", top_k), top_p
        sampling.min_p, sampling.repeat_penalty, sampling.seed = min_p, repeat_penalty, seed
        return _lib.GenParams(n_predict=max_tokens, ignore_eos=ignore_eos, sampling=sampling)

    def _run(self, prompt_ids: List[int], gp: "_lib.GenParams", on_piece, stop=None,
             end_id: int = -1):
        """elm_generate from an empty cache, each piece of text to on_piece(str); stop() true
        ends it early, and so does the token end_id (a chat template's end of turn: generated,
        its text not passed on). Returns (ids, prompt_ids, stats); an exception raised by
        on_piece or stop stops the generation and is raised here, and so does Ctrl-C
        (_sigint_stops)."""
        raised = []

        def callback(text, length, token_id, user):
            try:
                if end_id >= 0 and token_id == end_id:
                    return 1
                if length:
                    on_piece(ctypes.string_at(text, length).decode("utf-8", "replace"))
                return int(bool(raised or (stop and stop())))
            except BaseException as e:  # C cannot unwind a Python exception: stop, raise below
                raised.append(e)
                return 1

        c_callback = _lib.TokenCallback(callback)
        out = (ctypes.c_int32 * gp.n_predict)()
        n_out, stats, err = ctypes.c_int32(), _lib.GenStats(), _lib.ElmError()
        with self._use(), _sigint_stops(raised):
            self._lib.elm_context_reset(self._ctx)
            status = self._lib.elm_generate(self._ctx, self._ids(prompt_ids), len(prompt_ids),
                                            ctypes.byref(gp), c_callback, None, out, gp.n_predict,
                                            ctypes.byref(n_out), ctypes.byref(stats),
                                            ctypes.byref(err))
        if raised:
            raise raised[0]
        if status:
            raise error_for(status, err.msg)
        figures = GenerationStats(*(getattr(stats, f) for f, _ in _lib.GenStats._fields_))
        return list(out[:n_out.value]), prompt_ids, figures

    def _stream(self, prompt_ids: List[int], gp: "_lib.GenParams") -> Iterator[str]:
        """Generator of generate(stream=True): the generation runs in a worker thread that hands
        its pieces over a queue; closing the generator sets the flag the worker's callback
        answers with "stop", then waits for the worker."""
        pieces, cancel, done, outcome = queue.Queue(), threading.Event(), object(), []

        def work():
            try:
                self._run(prompt_ids, gp, pieces.put, cancel.is_set)
            except BaseException as e:
                outcome.append(e)
            finally:
                pieces.put(done)

        self._not_streaming_here()  # raise before starting; the worker checks the rest
        self._check_open()
        worker = threading.Thread(target=work, name="edgelm-stream", daemon=True)
        worker.start()
        self._streaming.add(threading.get_ident())
        try:
            while (piece := pieces.get()) is not done:
                yield piece
        finally:
            cancel.set()
            worker.join()
            self._streaming.discard(threading.get_ident())
        if outcome:
            raise outcome[0]

    # ---- chat -----------------------------------------------------------------------------------

    def chat(self, messages: Sequence[Mapping[str, Any]],
             tools: Optional[Sequence[Mapping[str, Any]]] = None, tool_choice: Any = None,
             parallel_tool_calls: bool = True, response_format: Optional[Mapping[str, Any]] = None,
             template: Optional[str] = None, max_tokens: int = 256, temperature: float = 0.8,
             top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
             repeat_penalty: float = 1.0, seed: Optional[int] = None,
             reasoning_effort: Optional[str] = None) -> ChatResult:
        """A reply to messages, as `edgelm serve`'s /v1/chat/completions makes it.

        messages: OpenAI's shape, [{"role": "system" | "user" | "assistant" | "tool", "content":
        str or [{"type": "text", "text": ...}]}], an assistant message with "tool_calls": [{"id",
        "type": "function", "function": {"name", "arguments": JSON text}}] (content may then be
        None), rendered by the chat template with the assistant's generation prompt after them.
        template: a name of edgelm.chat_templates() ("qwen3", "llama31", ...); None: the one the
        model's own Jinja template is recognised as (as `edgelm serve --template auto`).
        tools: OpenAI's [{"type": "function", "function": {"name", "description", "parameters":
        a JSON schema}}], written into the prompt as the template does (templates with tools:
        qwen3, qwen3-no-think, qwen35, qwen35-no-think, granite4, llama31, llama32, lfm2, lfm25,
        ministral3, mistral-small32, mistral-nemo, gpt-oss).
        tool_choice: "auto" (the model may write text or calls: a call, once opened, is held to
        the tools' schemas), "required" (calls only), {"type": "function", "function": {"name":
        N}} (a call of N only), "none" (no calls: the tools are still in the prompt); None:
        "auto" with tools, "none" without. Any other choice without tools is an ArgumentError.
        parallel_tool_calls: several calls in one reply when forced.
        response_format: {"type": "json_object"} or {"type": "json_schema", "json_schema":
        {"schema": S}}: the reply is JSON (valid under S); {"type": "text"} or None: free text.
        Sampling as generate (temperature 0: greedy), max_tokens the reply's most tokens.
        reasoning_effort: "low", "medium" or "high", gpt-oss's (None: its default, medium).

        Returns a ChatResult: .text (content before any calls; gpt-oss: its final channel),
        .reasoning (gpt-oss: its analysis channel), .tool_calls (OpenAI's shape,
        arguments a JSON string valid under the function's parameters), .finish_reason ("stop",
        "length", "tool_calls"), .stats, .ids, .message (the assistant message for the next turn).
        Ctrl-C stops it (KeyboardInterrupt). ArgumentError for malformed messages, tools,
        tool_choice or response_format (the library's message when it finds it), an unknown
        template or a conversation longer than n_ctx; UnsupportedError for tools on a template
        without them or a schema the grammar translation cannot enforce; ClosedError on a closed
        model."""
        self._check_open()
        tmpl = _chat.template_of(template, self.info["chat_template"])
        tools_json, mode, only = _chat.tool_mode(tmpl, tools, tool_choice)
        gbnf, trigger = _chat.grammar_text(tmpl, tools_json, mode, only, parallel_tool_calls,
                                           response_format)
        gp = self._gen_params(max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed,
                              False)
        # the prompt as the server tokenizes it: control tokens parsed, BOS in front when wanted
        ids = self.tokenize(_chat.render(tmpl, messages, tools_json, reasoning_effort), add_special=False,
                            parse_special=True)
        bos = self.info["bos_id"]
        if self.info["add_bos"] and bos >= 0 and (not ids or ids[0] != bos):
            ids.insert(0, bos)
        pieces = []
        with _chat.Grammar(gbnf) as grammar:
            with self._use():
                eot = self._lib.elm_chat_special_id(self._vocab(),
                                                    self._lib.elm_chat_template_eot(tmpl))
                # a reply that may hold calls, or is written in channels, keeps the template's
                # control-token markers as text, for the lazy trigger, the grammar and the
                # parser (as the server does)
                channels = self._lib.elm_chat_template_channels(tmpl)
                keep = self._preserved(tmpl) if mode != "none" or channels else None
                gp.grammar, gp.grammar_trigger = grammar, trigger
                gp.grammar_vocab = self._grammar_vocab(eot, keep) if grammar else None
                gp.preserved, gp.n_preserved = keep, len(keep) if keep else 0
            out, _, stats = self._run(ids, gp, pieces.append, end_id=eot)
        ended = eot >= 0 and out and out[-1] == eot
        if ended:
            out.pop()
        finish = "stop" if ended or len(out) < max_tokens else "length"
        text, calls, reasoning = "".join(pieces), [], ""
        if mode != "none" or channels:
            text, calls, reasoning = _chat.parse_tool_calls(tmpl, tools_json, text)
        if calls and finish == "stop":
            finish = "tool_calls"
        return ChatResult(text, calls, finish, stats, out,
                          self._lib.elm_chat_template_name(tmpl).decode(), reasoning)

    def _vocab(self) -> int:
        """The elm_vocab of the model (held lock or not: it is read-only)."""
        return self._lib.elm_model_vocab(self._lib.edgelm_model_get(self._model))

    def _preserved(self, tmpl: int) -> "Optional[ctypes.Array]":
        """The control tokens template tmpl writes its tool calls with, as this vocabulary has
        them (elm_chat_tool_preserved_ids), in a ctypes int32 array; None when there are none."""
        ids = (ctypes.c_int32 * _lib.TOOL_PRESERVED_MAX)()
        n = self._lib.elm_chat_tool_preserved_ids(tmpl, self._vocab(), ids)
        return (ctypes.c_int32 * n)(*ids[:n]) if n else None

    def _grammar_vocab(self, eot: int, keep: "Optional[ctypes.Array]") -> int:
        """The elm_grammar_vocab whose end tokens are EOS and eot (-1: none) and where the control
        tokens keep (None: none) have their text (elm_grammar_vocab_new_preserved), built once per
        pair and kept until close (it sorts every token's bytes). Called with the lock held."""
        key = (eot, tuple(keep) if keep else ())
        gv = self._grammar_vocabs.get(key)
        if gv is None:
            ends = (ctypes.c_int32 * 2)(self.info["eos_id"], eot)
            gv = self._lib.elm_grammar_vocab_new_preserved(self._vocab(), ends, 2, keep,
                                                           len(key[1]))
            if not gv:
                raise error_for(4, "out of memory for the grammar's vocabulary")
            self._grammar_vocabs[key] = gv
        return gv

    # ---- embeddings -----------------------------------------------------------------------------

    def embed(self, texts: Union[Text, Sequence[Text]], pooling: Optional[str] = None,
              normalize: bool = True) -> "numpy.ndarray | List[List[float]]":
        """The embedding of each text (a str or UTF-8 bytes counts as a list of one), as `edgelm
        embed` and the server's /v1/embeddings compute it (elm_embed): the hidden states of its
        tokens (BOS and EOS as the tokenizer adds them, control tokens parsed) after the output
        norm, pooled by the model's pooling_type (mean for a model that says none) or pooling
        ("mean", "cls", "last"), an embedding model's Dense projections, scaled to unit length
        unless normalize=False. Each text runs from an empty cache and must fit n_ctx.

        Returns a numpy float32 array [len(texts), dim] when numpy is installed, else a list of
        lists of floats. ArgumentError for an empty list, a text with no tokens or more than
        n_ctx (or a non-causal model's n_batch), an unknown pooling, bytes that are not UTF-8;
        UnsupportedError for a reranker (rank pooling); ClosedError on a closed model."""
        if isinstance(texts, (str, bytes, bytearray)):
            texts = [texts]
        if not texts:
            raise ArgumentError("texts: no text to embed", 5)
        params = _lib.EmbedParams(pooling=-1, no_normalize=not normalize)
        if pooling is not None:
            p = ctypes.c_int()
            if not isinstance(pooling, str) or not self._lib.elm_pooling_from_name(
                    pooling.encode(), ctypes.byref(p)):
                raise ArgumentError(f"pooling: {pooling!r} is not mean, cls or last", 5)
            params.pooling = p.value
        data = [_encode(t, f"texts[{i}]") for i, t in enumerate(texts)]
        rows = []
        with self._use():
            model = self._lib.edgelm_model_get(self._model)
            dim = self._lib.elm_embed_dim(model)
            for i, d in enumerate(data):
                ids, n, err = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_int64(), _lib.ElmError()
                status = self._lib.elm_embed_tokenize(self._vocab(), d, len(d), ctypes.byref(ids),
                                                      ctypes.byref(n), ctypes.byref(err))
                if status:
                    raise error_for(status, f"texts[{i}]: " + err.msg.decode("utf-8", "replace"))
                try:
                    if n.value == 0:
                        raise ArgumentError(f"texts[{i}]: the text has no tokens (and the model "
                                            "adds no BOS or EOS)", 5)
                    if n.value > self.n_ctx:
                        raise ArgumentError(f"texts[{i}]: the text has {n.value} tokens, over "
                                            f"the model's n_ctx {self.n_ctx}", 5)
                    row = (ctypes.c_float * dim)()
                    status = self._lib.elm_embed(self._ctx, ids, n.value, ctypes.byref(params),
                                                 row, ctypes.byref(err))
                finally:
                    self._lib.edgelm_free(ids)
                if status:
                    raise error_for(status, f"texts[{i}]: " + err.msg.decode("utf-8", "replace"))
                rows.append(row)
        if numpy is not None:
            return numpy.array([numpy.frombuffer(r, dtype=numpy.float32) for r in rows])
        return [list(r) for r in rows]
