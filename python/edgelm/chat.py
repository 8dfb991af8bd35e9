"""Model.chat's parts: OpenAI's messages rendered by a chat template, the grammar that holds a
reply to forced tool calls or a JSON format, and the tool calls read back from the reply.

The request is read as `edgelm serve`'s /v1/chat/completions reads it (src/server/request.c,
tools.c, constraint.c) and goes through the same C functions (chat.h, grammar.h), so a chat here
and one through the server render, constrain and parse alike."""

import ctypes
import json
import secrets
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _lib
from .errors import ArgumentError, error_for


@dataclass(frozen=True)
class ChatResult:
    """What Model.chat returns: the reply's text (content: the text before its tool calls, "" when
    it has none), its tool calls in OpenAI's shape ([{"id", "type": "function", "function":
    {"name", "arguments": a JSON string}}]), finish_reason ("stop": an end of turn or of sequence;
    "length": max_tokens reached; "tool_calls": the reply made calls), the generation's stats, the
    generated ids (the end-of-turn token left out), the template it was rendered with and, for a
    template whose replies come in channels (gpt-oss), the reasoning of its analysis channel (""
    when none; the text is then its final channel's)."""

    text: str
    tool_calls: List[Dict[str, Any]]
    finish_reason: str
    stats: "GenerationStats"  # noqa: F821 (model.py's; this module does not import it)
    ids: List[int] = field(repr=False)
    template: str = ""
    reasoning: str = ""

    @property
    def message(self) -> Dict[str, Any]:
        """The reply as an assistant message to append to the conversation for the next turn:
        {"role": "assistant", "content": text or None, "tool_calls": [...] when there are,
        "reasoning_content": reasoning when there is (gpt-oss writes it back before the calls)}."""
        m: Dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            m["tool_calls"] = self.tool_calls
        if self.reasoning:
            m["reasoning_content"] = self.reasoning
        return m


def template_of(name: Optional[str], jinja: Optional[str]) -> int:
    """The elm_chat_template named name (one of edgelm.chat_templates()), or with None the one
    the model's own Jinja template is recognised as (plain when it has none or none matches), as
    `edgelm serve --template auto` does. ArgumentError for an unknown name."""
    lib = _lib.lib()
    if name is None:
        return lib.elm_chat_template_detect(jinja.encode() if jinja else None)
    t = ctypes.c_int()
    if not isinstance(name, str) or not lib.elm_chat_template_parse(name.encode(), ctypes.byref(t)):
        raise ArgumentError(f"template: unknown chat template {name!r} (known: "
                            f"{lib.elm_chat_template_names().decode()})", 5)
    return t.value


def chat_templates() -> List[str]:
    """The names of the built-in chat templates, for Model.chat(template=...)."""
    return _lib.lib().elm_chat_template_names().decode().split(", ")


def _text(content: Any, where: str) -> str:
    """A message's content: a string, or a list of {"type": "text", "text": ...} parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)) and all(
            isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
            for p in content):
        return "".join(p["text"] for p in content)
    raise ArgumentError(f"{where}.content: expected a string or a list of text parts", 5)


def _calls(message: Mapping, where: str) -> List[Tuple[str, str, Optional[str]]]:
    """An assistant message's tool_calls as (name, arguments JSON text, id or None) triples;
    arguments given as a dict are written as JSON (OpenAI's are a string already)."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, (list, tuple)):
        raise ArgumentError(f"{where}.tool_calls: expected a list", 5)
    out = []
    for j, c in enumerate(calls):
        f = c.get("function") if isinstance(c, Mapping) else None
        name = f.get("name") if isinstance(f, Mapping) else None
        args = f.get("arguments") if isinstance(f, Mapping) else None
        if isinstance(args, Mapping):
            args = json.dumps(args, ensure_ascii=False)
        if not isinstance(name, str) or not isinstance(args, str):
            raise ArgumentError(f'{where}.tool_calls[{j}].function: expected "name" and '
                                '"arguments" (a JSON string)', 5)
        call_id = c.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise ArgumentError(f"{where}.tool_calls[{j}].id: expected a string", 5)
        out.append((name, args, call_id))
    return out


def render(tmpl: int, messages: Sequence[Mapping], tools_json: Optional[str],
           reasoning_effort: Optional[str] = None) -> str:
    """messages rendered by template tmpl with the generation prompt after them
    (elm_chat_render_with; reasoning_effort "low", "medium" or "high" for gpt-oss, None: its
    default): the library's ArgumentError for an unknown role, a system message that is not
    first or another effort, UnsupportedError for tools on a template without them."""
    if reasoning_effort is not None and not isinstance(reasoning_effort, str):
        raise ArgumentError("reasoning_effort: expected \"low\", \"medium\" or \"high\"", 5)
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ArgumentError("messages: expected a non-empty list of {role, content} dicts", 5)
    keep, msgs = [], (_lib.ChatMsg * len(messages))()
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise ArgumentError(f'{where}: expected a dict with a "role" string', 5)
        calls = _calls(m, where)
        content = m.get("content")
        text = "" if content is None and calls else _text(content, where)
        c_calls = (_lib.ToolCall * max(len(calls), 1))(
            *[_lib.ToolCall(n.encode(), a.encode(), k.encode() if k else None) for n, a, k in calls])
        keep.append(c_calls)
        call_id = m.get("tool_call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise ArgumentError(f"{where}.tool_call_id: expected a string", 5)
        reasoning = m.get("reasoning_content")
        if reasoning is not None and not isinstance(reasoning, str):
            raise ArgumentError(f"{where}.reasoning_content: expected a string", 5)
        msgs[i] = _lib.ChatMsg(m["role"].encode(), text.encode("utf-8", "surrogatepass"),
                               c_calls if calls else None, len(calls),
                               call_id.encode() if call_id else None,
                               reasoning.encode("utf-8", "surrogatepass") if reasoning else None)
    out, err = ctypes.c_void_p(), _lib.ElmError()
    opts = _lib.ChatOpts(reasoning_effort.encode() if reasoning_effort else None, 0)
    status = _lib.lib().elm_chat_render_with(
        tmpl, msgs, len(messages), tools_json.encode() if tools_json else None, True,
        ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err))
    if status:
        msg = err.msg.decode("utf-8", "replace")
        raise error_for(status, msg if msg.startswith("reasoning_effort") else "messages: " + msg)
    return _lib.take_string(out.value)


def tool_mode(tmpl: int, tools: Optional[Sequence[Mapping]], tool_choice: Any
              ) -> Tuple[Optional[str], str, Optional[str]]:
    """(tools as JSON text or None, mode "none" | "auto" | "required", the one function a
    tool_choice names or None): elm_tool_choice_parse, the server's reading of them. tool_choice
    None: "auto" with tools, "none" without."""
    tools_json = json.dumps(list(tools), ensure_ascii=False) if tools else None
    choice = json.dumps(tool_choice) if tool_choice is not None else None
    out, err = _lib.ToolChoice(), _lib.ElmError()
    status = _lib.lib().elm_tool_choice_parse(
        tmpl, tools_json.encode() if tools_json else None, choice.encode() if choice else None,
        ctypes.byref(out), ctypes.byref(err))
    if status:
        raise error_for(status, err.msg.decode("utf-8", "replace"))
    return (tools_json, ("none", "auto", "required")[out.mode],
            out.only.decode() if out.only else None)


def grammar_text(tmpl: int, tools_json: Optional[str], mode: str, only: Optional[str],
                 parallel: bool, response_format: Optional[Mapping]
                 ) -> Tuple[Optional[bytes], Optional[bytes]]:
    """(GBNF the reply must follow or None, the text that starts it or None: from the start),
    from the tool mode (elm_chat_tool_grammar; "auto" lazy, after the family's call opening) or
    response_format ({"type": "text" | "json_object" | "json_schema", "json_schema": {"schema":
    ...}}: elm_json_object_gbnf, elm_json_schema_to_gbnf). ArgumentError for both at once or a
    malformed format; UnsupportedError for a schema the translation cannot enforce."""
    lib, err = _lib.lib(), _lib.ElmError()
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if response_format is not None and kind not in ("text", "json_object", "json_schema"):
        raise ArgumentError('response_format.type: expected "text", "json_object" or '
                            '"json_schema"', 5)
    constrained = kind in ("json_object", "json_schema")
    if mode != "none":
        if constrained:
            raise ArgumentError("tools: cannot be combined with response_format", 5)
        gbnf, trigger = ctypes.c_void_p(), ctypes.c_char_p()
        lazy = mode == "auto"
        status = lib.elm_chat_tool_grammar(tmpl, tools_json.encode(),
                                           only.encode() if only else None, parallel, lazy,
                                           ctypes.byref(gbnf), ctypes.byref(trigger),
                                           ctypes.byref(err))
        if status:
            raise error_for(status, err.msg)
        return _lib.take_string(gbnf.value).encode(), trigger.value if lazy else None
    if not constrained:
        return None, None
    js = response_format.get("json_schema")
    schema = js.get("schema") if isinstance(js, Mapping) else None
    if kind == "json_object" or schema is None:
        if kind == "json_schema" and not isinstance(js, Mapping):
            raise ArgumentError("response_format.json_schema: expected a dict", 5)
        return lib.elm_json_object_gbnf(), None
    text = json.dumps(schema).encode()
    gbnf = ctypes.c_void_p()
    status = lib.elm_json_schema_to_gbnf(text, len(text), b"response_format.json_schema.schema",
                                         ctypes.byref(gbnf), ctypes.byref(err))
    if status:
        raise error_for(status, err.msg)
    return _lib.take_string(gbnf.value).encode(), None


class Grammar:
    """A parsed GBNF grammar (elm_grammar) for the length of a `with` block; None inside for no
    grammar. FormatError (the library's, with line and column) for a GBNF that does not parse."""

    def __init__(self, gbnf: Optional[bytes]):
        self._gbnf, self.ptr = gbnf, None

    def __enter__(self) -> Optional[int]:
        if self._gbnf is None:
            return None
        g, err = ctypes.c_void_p(), _lib.ElmError()
        status = _lib.lib().elm_grammar_parse(self._gbnf, len(self._gbnf), b"grammar",
                                              ctypes.byref(g), ctypes.byref(err))
        if status:
            raise error_for(status, err.msg)
        self.ptr = g.value
        return self.ptr

    def __exit__(self, *exc) -> None:
        if self.ptr:
            _lib.lib().elm_grammar_free(self.ptr)
            self.ptr = None


def parse_tool_calls(tmpl: int, tools_json: Optional[str],
                     reply: str) -> Tuple[str, List[Dict[str, Any]], str]:
    """(content, tool calls, reasoning) of a reply (elm_chat_parse_tool_calls with the request's
    tools, None for none; reasoning "" but for templates with channels). A reply whose calls do
    not parse (cut short by max_tokens) is all content, as the server reads it."""
    calls, err = _lib.ToolCalls(), _lib.ElmError()
    lib = _lib.lib()
    status = lib.elm_chat_parse_tool_calls(tmpl, tools_json.encode() if tools_json else None,
                                           reply.encode("utf-8", "surrogatepass"),
                                           ctypes.byref(calls), ctypes.byref(err))
    if status == 4:
        raise error_for(status, err.msg)
    if status:
        return reply, [], ""
    try:
        tag, ids = secrets.token_hex(6).encode(), []
        for i in range(calls.n):
            buf = ctypes.create_string_buffer(96)  # ELM_TOOL_CALL_ID_MAX
            lib.elm_chat_tool_call_id(tmpl, tag, i, buf)
            ids.append(buf.value.decode())
        out = [{"id": ids[i], "type": "function",
                "function": {"name": calls.calls[i].name.decode("utf-8", "replace"),
                             "arguments": calls.calls[i].arguments.decode("utf-8", "replace")}}
               for i in range(calls.n)]
        return ((calls.content or b"").decode("utf-8", "replace"), out,
                (calls.reasoning or b"").decode("utf-8", "replace"))
    finally:
        lib.elm_tool_calls_free(ctypes.byref(calls))
