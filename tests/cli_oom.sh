#!/usr/bin/env bash
# `run` and `chat` with memory exhausted (ulimit -v): from the lowest address-space limit the binary
# starts under, through limits where loading, the thread pool or the KV cache runs out, every
# outcome is success or one clean error line naming the model (exit status 1), never a crash; at
# least one limit must end in that error for each command. Skipped under ASan, whose shadow memory
# needs terabytes of address space.
# usage: cli_oom.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
model=$fx/stories260K/stories260K-f32.gguf
. "$(dirname "$0")/lib/cli.sh"

grep -q __asan_init "$bin" && skip "AddressSanitizer builds cannot run under ulimit -v"
export OPENBLAS_NUM_THREADS=1

# the lowest limit (KiB, 10 MiB steps) under which the binary loads its shared libraries without
# a word: just below it GnuTLS's constructor (through libmicrohttpd) prints an error and goes on,
# a line that is not edgelm's
low=0
for kb in $(seq 20480 10240 409600); do
    if (ulimit -v "$kb"; "$bin" --help >/dev/null 2>"$tmp/err") && [ ! -s "$tmp/err" ]; then
        low=$kb
        break
    fi
done
[ "$low" -gt 0 ] || skip "edgelm does not start under any limit up to 400 MiB"

# CMD...: runs under each limit from $low up; counts the clean out-of-memory errors in $clean
sweep() {
    local name=$1 kb rc
    shift
    clean=0
    for kb in $(seq "$low" 10240 $((low + 307200))); do
        (ulimit -v "$kb"; exec "$@" </dev/null >"$tmp/out" 2>"$tmp/err")
        rc=$?
        if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^edgelm: $model: " "$tmp/err"; then
            clean=$((clean + 1))
        elif [ "$rc" -ne 0 ]; then
            fail "$name under ulimit -v $kb: exit status $rc, stderr '$(head -c 400 "$tmp/err")'"
            return
        fi
    done
    ok
}

for c in 512 200000; do
    sweep "run -c $c" "$bin" run -m "$model" -p "Once upon a time" -n 8 --temp 0 -t 2 -c "$c"
    [ "$c" -eq 512 ] || { [ "$clean" -gt 0 ] && ok || fail "run -c $c: no limit gave the out-of-memory error"; }
done
printf 'Hello\nTell me a story\n' > "$tmp/chat.txt"
sweep "chat" bash -c 'exec "$0" chat -m "$1" --temp 0 -n 8 -t 2 -c 200000 <"$2"' "$bin" "$model" "$tmp/chat.txt"
[ "$clean" -gt 0 ] && ok || fail "chat: no limit gave the out-of-memory error"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
