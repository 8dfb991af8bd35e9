#!/usr/bin/env bash
# The Python package (python/, docs/python.md) as a user gets it: a fresh venv of the system's
# python3, `pip install --no-index` of a copy of python/ (offline: its build backend is in the tree
# and needs only the standard library), then tests/python/check_package.py against the libedgelm.so beside
# the binary: the greedy goldens, the CLI's ids, text and logits, streaming and cancelling it,
# tokenize/detokenize, the errors, two models in two threads, 1,000 load/unload cycles; then
# logits as numpy arrays from the tree's package where a python3 has numpy.
# Skipped when no venv can be made (Debian: python3-venv), and in a sanitizer build (the library
# would need its sanitizer runtime preloaded into python: the release and clang trees run it).
# Usage: bash tests/cli_python.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
lib=$(cd "$(dirname "$bin")" && pwd)/libedgelm.so
. "$(dirname "$0")/lib/cli.sh"
grep -q '^EDGELM_SANITIZE:BOOL=ON' "$(dirname "$bin")/CMakeCache.txt" 2>/dev/null &&
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

# logits as numpy arrays, through a python3 that has numpy (Debian: python3-numpy; the venv has
# none: lists above)
py=$(for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && echo "$p" && break; done)
if [ -n "$py" ]; then
  EDGELM_LIBRARY=$lib PYTHONPATH=python "$py" - "$fix/stories260K/stories260K-f32.gguf" <<'PY' && ok || fail "numpy logits: see above"
import sys, numpy, edgelm
with edgelm.Model(sys.argv[1], n_ctx=64, n_threads=1) as m:
    last, rows = m.logits([1, 403, 407]), m.logits([1, 403, 407], all=True)
    assert last.dtype == numpy.float32 and last.shape == (512,), (last.dtype, last.shape)
    assert rows.shape == (3, 512) and (rows[2] == last).all(), rows.shape
PY
fi

[ "$failed" -eq 0 ] && echo "cli_python: all $passed passed"
exit $((failed > 0))
