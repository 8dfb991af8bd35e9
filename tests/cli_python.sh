#!/usr/bin/env bash
# The Python package (python/, docs/python.md) as a user gets it: a fresh venv of the system's
# python3, `pip install --no-index` of a copy of python/ (offline: its build backend is in the tree
# and needs only the standard library), then tests/python/check_package.py against the libedgelm.so beside
# the binary: the greedy goldens, the CLI's ids, text and logits, streaming and cancelling it,
# tokenize/detokenize, chat (a forced tool call, JSON schemas), embeddings, quantize and evaluate
# against the CLI's, the errors, two models in two threads, 1,000 load/unload cycles; the
# ctypes copies of C structs laid out as the headers' (a C program of offsetof and sizeof);
# logits and embeddings as numpy arrays from the tree's package where a python3 has numpy; the
# example examples/python/quantize_and_validate.py on stories260K.
# Skipped when no venv can be made (Debian: python3-venv), and in a sanitizer build (the library
# would need its sanitizer runtime preloaded into python: the release and clang trees run it).
# Usage: bash tests/cli_python.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
lib=$(cd "$(dirname "$bin")" && pwd)/libedgelm.so
. "$(dirname "$0")/lib/cli.sh"
! $sanitized ||
  skip "sanitizer build: libedgelm.so would need libasan preloaded into python3"
python3 -m venv "$tmp/venv" >"$tmp/venv.log" 2>&1 || skip "python3 -m venv failed (apt-get install python3-venv): $(tail -1 "$tmp/venv.log")"

cp -r python "$tmp/src"
if "$tmp/venv/bin/pip" install -q --no-index "$tmp/src" >"$tmp/pip.log" 2>&1; then
  ok
  EDGELM_LIBRARY=$lib "$tmp/venv/bin/python" tests/python/check_package.py "$bin" "$fix" && ok ||
    fail "check_package.py: see above"
  version=$(sed -n 's/^project(edgelm VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  got=$(cd "$tmp" && "$tmp/venv/bin/python" -c 'import edgelm; print(edgelm.__version__)')
  [ "$got" = "$version" ] && ok || fail "edgelm.__version__ '$got', CMakeLists.txt says '$version'"
else
  fail "pip install ./python: $(cat "$tmp/pip.log")"
fi

# the package's copies of C structs (python/edgelm/_lib.py) laid out as the headers lay them out:
# each field's offset and each struct's size from a C program made from the ctypes fields (a field
# renamed in C stops its build)
PYTHONPATH=python python3 - "$tmp/layout.c" <<'PY' >"$tmp/want.txt" || fail "struct layout: cannot list the ctypes fields"
import ctypes, sys
from edgelm import _lib
structs = {"ElmError": "elm_error", "ContextParams": "elm_context_params",
           "SamplerParams": "elm_sampler_params", "GenParams": "elm_gen_params",
           "GenStats": "elm_gen_stats", "ToolCall": "elm_tool_call", "ChatMsg": "elm_chat_msg",
           "ToolCalls": "elm_tool_calls", "ToolChoice": "elm_tool_choice",
           "EmbedParams": "elm_embed_params",
           "TypeTraits": "elm_type_traits", "TypeOverride": "elm_type_override",
           "QuantPolicy": "elm_quant_policy", "QuantParams": "elm_quant_params",
           "QuantCallbacks": "elm_quantize_callbacks", "QuantSummary": "elm_quantize_summary",
           "QuantTensorInfo": "elm_quant_tensor_info", "QuantReport": "elm_quant_report",
           "QuantExpertFallback": "elm_quant_expert_fallback",
           "CalibSet": "elm_calib_set", "Imatrix": "elm_imatrix", "EvalParams": "elm_eval_params",
           "EvalCallbacks": "elm_eval_callbacks"}
headers = ["context", "generate", "chat", "embed", "quant", "eval"]
lines = []
with open(sys.argv[1], "w") as c:
    c.write("#include <stddef.h>\n#include <stdio.h>\n" +
            "".join(f'#include "edgelm/{h}.h"\n' for h in headers) + "int main(void) {\n")
    for py, cn in structs.items():
        cls = getattr(_lib, py)
        c.write(f'    printf("{cn} %zu\\n", sizeof({cn}));\n')
        lines.append(f"{cn} {ctypes.sizeof(cls)}")
        for name, _ in cls._fields_:
            c.write(f'    printf("{cn}.{name} %zu\\n", offsetof({cn}, {name}));\n')
            lines.append(f"{cn}.{name} {getattr(cls, name).offset}")
    c.write("    return 0;\n}\n")
print("\n".join(lines))
PY
if cc -Iinclude -o "$tmp/layout" "$tmp/layout.c" 2>"$tmp/cc.err" && "$tmp/layout" >"$tmp/got.txt"; then
  diff "$tmp/want.txt" "$tmp/got.txt" >"$tmp/layout.diff" && ok ||
    fail "python/edgelm/_lib.py's structs differ from the headers' (ctypes < > C): $(cat "$tmp/layout.diff")"
else
  fail "struct layout program: $(head -3 "$tmp/cc.err")"
fi

# logits as numpy arrays, through a python3 that has numpy (Debian: python3-numpy; the venv has
# none: lists above)
py=$(for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && echo "$p" && break; done)
[ -n "$py" ] || fail "numpy logits: no python3 with numpy (scripts/deps.sh installs python3-numpy)"
if [ -n "$py" ]; then
  EDGELM_LIBRARY=$lib PYTHONPATH=python "$py" - "$fix/stories260K/stories260K-f32.gguf" <<'PY' && ok || fail "numpy logits: see above"
import sys, numpy, edgelm
with edgelm.Model(sys.argv[1], n_ctx=64, n_threads=1) as m:
    last, rows = m.logits([1, 403, 407]), m.logits([1, 403, 407], all=True)
    assert last.dtype == numpy.float32 and last.shape == (512,), (last.dtype, last.shape)
    assert rows.shape == (3, 512) and (rows[2] == last).all(), rows.shape
    v = m.embed(["Once upon a time", "Lily"])
    assert v.dtype == numpy.float32 and v.shape == (2, 64), (v.dtype, v.shape)
    assert abs(float((v * v).sum(axis=1)[0]) - 1) < 1e-5
PY
fi

# the example goes from the Hugging Face folder to a GPTQ Q4_K_M file, evaluates it, prints the
# verdict and writes the plot (docs/python.md, README.md)
st=$fix/stories260K
mkdir -p "$tmp/example"
if EDGELM_LIBRARY=$lib "$tmp/venv/bin/python" examples/python/quantize_and_validate.py "$st/hf-f32" \
     "$st/text/calib.txt" "$st/text/valid.txt" "$tmp/example" --ctx 128 --calib-samples 64 \
     --seq-len 128 >"$tmp/example.out" 2>&1; then
  grep -q '^verdict: \(excellent\|flagged\)' "$tmp/example.out" &&
    grep -q '</svg>' "$tmp/example/size_vs_kld.svg" &&
    [ -s "$tmp/example/model-gptq-q4_k_m.gguf" ] && ok ||
    fail "examples/python/quantize_and_validate.py: $(tail -3 "$tmp/example.out")"
else
  fail "examples/python/quantize_and_validate.py: $(tail -5 "$tmp/example.out")"
fi

[ "$failed" -eq 0 ] && echo "cli_python: all $passed passed"
exit $((failed > 0))
