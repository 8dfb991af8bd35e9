#!/usr/bin/env bash
# CLI checks of `edgelm inspect` and `edgelm quantize`: bad input fails with exit status 1 and one
# line on stderr naming the file; a failed quantize leaves no output; --json output is JSON; a good
# quantize writes a file inspect reads back as the requested type.
# Usage: bash tests/cli_gguf_bad.sh EDGELM_BINARY FIXTURES_DIR
set -u
BIN=$1
FIX=$2
MODEL=$FIX/stories260K/stories260K-f32.gguf
T=$(mktemp -d /tmp/edgelm-cli-gguf-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# expect_error NAME PATTERN CMD...: exit 1, exactly one stderr line, containing PATTERN
expect_error() {
    local name=$1 pattern=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ "$rc" -eq 1 ] || fail "$name: exit status $rc, expected 1"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$name: stderr has $(wc -l <"$T/err") lines: $(cat "$T/err")"
    grep -qF -- "$pattern" "$T/err" || fail "$name: stderr lacks '$pattern': $(cat "$T/err")"
}

# inspect: missing file, wrong magic
expect_error "inspect missing" "$T/missing.gguf" "$BIN" inspect "$T/missing.gguf"
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[0:4] = b"GGUX"; open(sys.argv[2], "wb").write(b)' \
    "$MODEL" "$T/magic.gguf"
expect_error "inspect wrong magic" "$T/magic.gguf" "$BIN" inspect "$T/magic.gguf"
# a truncated GGUF names the file and the problem
head -c 5000 "$MODEL" >"$T/cut.gguf"
expect_error "inspect truncated" "$T/cut.gguf: truncated" "$BIN" inspect "$T/cut.gguf"

# inspect --json is one JSON object with the tensor table
"$BIN" inspect "$MODEL" --json >"$T/json" 2>"$T/err" || fail "inspect --json failed: $(cat "$T/err")"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hparams"]["dim"] == 64 and d["vocab"]["n_tokens"] == 512, d["hparams"]
assert len(d["tensors"]) == 48 and d["tensors"][0]["shape"] == [512, 64], d["tensors"][0]
' "$T/json" || fail "inspect --json output is not the expected JSON"
"$BIN" inspect "$MODEL" | grep -q "token_embd.weight  *\[512, 64\]  *f32" || fail "inspect text table"
"$BIN" inspect --help | grep -q "usage: edgelm inspect" || fail "inspect --help"

# quantize: bad --type, missing folder, output path that is a folder
expect_error "quantize bad type" "unknown --type 'q3_k'" \
    "$BIN" quantize -m "$MODEL" -o "$T/x.gguf" --type q3_k
[ -e "$T/x.gguf" ] && fail "bad --type left $T/x.gguf"
expect_error "quantize missing -o" "required" "$BIN" quantize -m "$MODEL" --type q4_0
expect_error "quantize into missing folder" "$T/nodir/out.gguf" \
    "$BIN" quantize -m "$MODEL" -o "$T/nodir/out.gguf" --type q4_0
mkdir "$T/adir"
"$BIN" quantize -m "$MODEL" -o "$T/adir" --type q8_0 >"$T/out" 2>"$T/err"
[ $? -eq 1 ] || fail "quantize onto a folder did not fail"
tail -n 1 "$T/err" | grep -qF "$T/adir" || fail "quantize onto a folder: last stderr line lacks the path"
leftover=$(find "$T" -name '*.tmp.*' | head -n 1)
[ -z "$leftover" ] || fail "partial output left behind: $leftover"

# quantize: a good run writes the file, warns about the f16 fallbacks and prints a summary
"$BIN" quantize -m "$MODEL" -o "$T/q4.gguf" --type q4_0 >"$T/out" 2>"$T/err" ||
    fail "quantize q4_0 failed: $(cat "$T/err")"
[ "$(grep -c "warning: tensor 'blk\.[0-9]\.ffn_down.weight'" "$T/err")" -eq 5 ] ||
    fail "expected 5 ffn_down fallback warnings: $(cat "$T/err")"
grep -q "bits/weight" "$T/out" || fail "no summary line: $(cat "$T/out")"
"$BIN" inspect "$T/q4.gguf" | grep -q "blk.0.attn_q.weight  *\[64, 64\]  *q4_0" ||
    fail "inspect of the q4_0 output"
"$BIN" quantize --help | grep -q "usage: edgelm quantize" || fail "quantize --help"

[ "$fails" -eq 0 ] && echo "cli_gguf_bad: all passed"
exit $((fails > 0))
