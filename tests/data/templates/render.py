#!/usr/bin/env python3
"""Renders the tool conversations of tests/test_chat_template.c with the published Jinja templates
beside this file, as Hugging Face transformers renders a chat template (jinja2 with trim_blocks,
lstrip_blocks and the loop-controls extension; tojson as json.dumps with ensure_ascii off;
raise_exception; strftime_now), into tests/data/prompts/TEMPLATE-CASE.txt: the goldens the
C renderer is checked against. Run again only when a template or a conversation changes.

usage: python3 tests/data/templates/render.py   (needs python3-jinja2)
"""
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "prompts")

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city, \"now\" \u2014 \u00fcn\u00efcode",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "t": {"type": "number", "minimum": 0.5}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}},
]
# every form of gpt-oss's TypeScript-like rendering of a schema (its "schema" case)
SCHEMA_TOOLS = [{"type": "function", "function": {
    "name": "f", "description": "d", "parameters": {"type": "object", "required": ["a", "n"], "properties": {
        "a": {"type": "string", "description": "the a", "enum": ["x", "y"], "default": "x"},
        "b": {"type": "array", "items": {"type": "object", "required": ["p"], "properties": {
            "p": {"type": "integer"}, "q": {"type": "array", "items": {"type": "string"}}}}},
        "b2": {"type": "array", "items": {"type": "object", "properties": {"p": {"type": "integer"}}}},
        "c": {"type": ["string", "null"]},
        "d": {"oneOf": [{"type": "string", "description": "s"}, {"type": "number", "default": 1}]},
        "e": {"type": "object"},
        "g": {"type": "boolean", "default": False},
        "h": {"type": "string", "nullable": True, "default": "zz"},
        "i": {"type": "array", "nullable": True},
        "j": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        "k": {"description": "any thing"},
        "n": {"type": "object", "required": ["x"], "properties": {"x": {"type": "string", "enum": ["u", "v"]},
                                                                    "y": {"type": "integer"}}},
        "o": {"oneOf": [{"type": "string"}], "default": "q"}}}}}]
SYSTEM = {"role": "system", "content": "You are helpful."}
USER = {"role": "user", "content": "Weather in Paris?"}


def call(name, args, id):
    # arguments as an object: what llama.cpp hands templates that need objects, and what every
    # template here renders alike from a string where it takes one; ids of 9 characters, as
    # Mistral Small 3.2's template requires, which tie results to calls where a template names a
    # result's function (Gemma 4's)
    return {"type": "function", "id": id, "function": {"name": name, "arguments": args}}


TWO_CALLS = {"role": "assistant", "content": "",
             "tool_calls": [call("get_weather", {"city": "Paris", "days": 2, "t": 1.5}, "a1b2c3d4e"),
                            call("now", {}, "f5g6h7i8j")]}
ONE_CALL = {"role": "assistant", "content": "",
            "tool_calls": [call("get_weather", {"city": "Paris\nFrance", "days": 2}, "a1b2c3d4e")]}
RESULTS = [{"role": "tool", "content": "sunny", "tool_call_id": "a1b2c3d4e"},
           {"role": "tool", "content": "noon", "tool_call_id": "f5g6h7i8j"}]
CASES = {
    "tools": [SYSTEM, USER],
    "calls": [SYSTEM, USER, TWO_CALLS] + RESULTS,
    "nosystem": [USER, TWO_CALLS] + RESULTS,
    "onecall": [SYSTEM, USER, ONE_CALL, RESULTS[0]],
    "plain": [SYSTEM, USER, {"role": "assistant", "content": " Sunny. "}, {"role": "user", "content": "Thanks"}],
    "schema": [USER],
    "effort": [SYSTEM, USER],
    # reasoning before a call (the "thinking" the template takes, reasoning_content in edgelm)
    "thinking": [USER, {**ONE_CALL, "thinking": "Paris: call get_weather."}, RESULTS[0]],
    "answer": [USER, ONE_CALL, RESULTS[0], {"role": "assistant", "content": " Sunny. "},
               {"role": "user", "content": "Thanks"}],
}
def py_literal(v):
    """v as LFM2 writes an argument: json.dumps, but Python's True, False and None"""
    if v is True or v is False or v is None:
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(py_literal(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + py_literal(x)
                               for k, x in v.items()) + "}"
    return json.dumps(v, ensure_ascii=False)


def lfm2_calls(message):
    # LFM2's templates render no tool_calls: the model writes its calls into its reply, and a
    # conversation sends them back there, so the calls go into the content as the model writes them
    if not message.get("tool_calls"):
        return message
    calls = ", ".join(c["function"]["name"] + "(" + ", ".join(
        f"{k}={py_literal(v)}" for k, v in c["function"]["arguments"].items()) + ")"
                      for c in message["tool_calls"])
    return {"role": message["role"],
            "content": message["content"] + "<|tool_call_start|>[" + calls + "]<|tool_call_end|>"}


TEMPLATES = {  # file: (name in edgelm, extra variables, cases)
    "Qwen3.5-4B.jinja": ("qwen35", {}, ["tools", "calls", "nosystem", "onecall"]),
    "ibm-granite-granite-4.0.jinja": ("granite4", {}, ["tools", "calls", "nosystem", "onecall"]),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ("llama31", {}, ["tools", "onecall", "plain"]),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": ("llama32", {}, ["tools", "onecall", "plain"]),
    "google-gemma-4-31B-it.jinja": ("gemma4", {}, ["tools", "calls", "nosystem", "onecall", "answer"]),
    "microsoft-Phi-4-mini-instruct.jinja": ("phi4-mini", {}, ["tools", "calls", "nosystem", "onecall"]),
    "LFM2-8B-A1B.jinja": ("lfm2", {}, ["tools", "calls", "nosystem", "onecall"]),
    "LFM2.5-Instruct.jinja": ("lfm25", {}, ["tools", "calls", "nosystem", "onecall"]),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja":
        ("ministral3", {}, ["tools", "calls", "nosystem", "onecall", "plain"]),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja":
        ("mistral-small32", {}, ["tools", "calls", "nosystem", "onecall", "plain"]),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja":
        ("mistral-nemo", {}, ["tools", "calls", "nosystem", "onecall", "plain"]),
    # one call a message (the template writes a message's first call only)
    "openai-gpt-oss-120b.jinja": ("gpt-oss", {}, ["tools", "onecall", "plain", "answer", "schema", "effort", "thinking"]),
}
CASE_VARIABLES = {"effort": {"reasoning_effort": "high"}}  # beyond the template's own
BOS = {"llama31": "<|begin_of_text|>", "llama32": "<|begin_of_text|>", "lfm2": "<|startoftext|>",
       "lfm25": "<|startoftext|>", "ministral3": "<s>", "mistral-small32": "<s>",
       "mistral-nemo": "<s>", "gemma4": "<bos>"}
EOS = {"ministral3": "</s>", "mistral-small32": "</s>", "mistral-nemo": "</s>"}  # where written


def phi4_mini_messages(messages, tools):
    """Phi-4-mini's template takes the tools as the system message's "tools" text and writes only an
    assistant message's content: the functions go there as one JSON list (its model card's form),
    a system message with no text carries them when there is none, and the calls are written into
    the content as functools[...] (the form the parser Microsoft wrote for vLLM reads)."""
    out = [dict(m) for m in messages]
    if tools:
        if not out or out[0]["role"] != "system":
            out.insert(0, {"role": "system", "content": ""})
        out[0]["tools"] = json.dumps([t["function"] for t in tools], ensure_ascii=False)
    for m in out:
        if m.get("tool_calls"):
            calls = ", ".join(json.dumps({"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
                                         ensure_ascii=False) for c in m["tool_calls"])
            m["content"] = m["content"] + ("\n" if m["content"] else "") + "functools[" + calls + "]"
    return out


def described(tools):
    """gpt-oss's template adds "// " + description for each tool, an error in jinja2 for a tool
    without one: rendered with an empty one, which is what edgelm writes then."""
    return [{**t, "function": {"description": "", **t["function"]}} for t in tools]


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    # a fixed day, so that the goldens do not change: the C test renders with the same
    env.globals["strftime_now"] = lambda fmt: datetime(2026, 12, 5).strftime(fmt)
    os.makedirs(OUT, exist_ok=True)
    for file, (name, extra, cases) in TEMPLATES.items():
        with open(os.path.join(HERE, file), encoding="utf-8") as f:
            tmpl = env.from_string(f.read())
        for case in cases:
            tools = None if case == "plain" else SCHEMA_TOOLS if case == "schema" else TOOLS
            messages = CASES[case]
            if name.startswith("lfm"):
                messages = [lfm2_calls(m) for m in messages]
            if name == "phi4-mini":
                messages = phi4_mini_messages(messages, tools)
            if name == "gpt-oss" and tools:
                tools = described(tools)
            text = tmpl.render(messages=messages, tools=tools, add_generation_prompt=True,
                               bos_token=BOS.get(name, ""), eos_token=EOS.get(name, ""),
                               **extra, **CASE_VARIABLES.get(case, {}))
            with open(os.path.join(OUT, f"{name}-{case}.txt"), "w", encoding="utf-8") as f:
                f.write(text)
            print(f"{name}-{case}.txt: {len(text)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
