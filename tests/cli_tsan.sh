#!/usr/bin/env bash
# ThreadSanitizer check of the "no global state" promise: builds tests/test_api.c (two contexts on
# one model generating in two threads, plus the thread pool inside each) and the edgelm CLI with
# -fsanitize=thread in a build folder of its own, cached between runs, and runs test_api and every
# command that runs the thread pool (run, chat, bench, bench --membw, perplexity, eval, calib,
# quantize --method gptq and awq, imatrix, each with -t 2, and serve with two slots answering two
# requests at once while /metrics is scraped) on the fixture; any race report fails the test.
# Skipped (exit 77, ctest's skip code) when the compiler or the kernel cannot run TSan programs.
# The TSan build is cached in build-tsan/ (shared by the release and ASan suites).
# usage: cli_tsan.sh EDGELM FIXTURES   (run from the repository root)
set -u
fx=$2
repo=$(pwd)
dir=$repo/build-tsan
mkdir -p "$dir"

probe=$dir/probe
if ! printf 'int main(void) { return 0; }\n' | cc -fsanitize=thread -x c - -o "$probe" 2>/dev/null ||
   ! "$probe" >/dev/null 2>&1; then
  echo "SKIPPED: this compiler or kernel cannot run ThreadSanitizer programs"
  exit 77
fi

# one build at a time (ctest may run the release and ASan suites at once)
exec 9>"$dir/lock"
flock 9
# -g1: line tables for the reports, without the variables' locations (CMakeLists.txt: the ASan tree)
if ! cmake -S "$repo" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGELM_SHARED="$fx/.." \
       -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
       -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
       -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >"$dir/configure.log" 2>&1 ||
   ! cmake --build "$dir/build" --target test_api edgelm-cli -j 2 >"$dir/build.log" 2>&1; then
  echo "FAIL: TSan build (see $dir/*.log)" >&2
  tail -20 "$dir/build.log" >&2
  exit 1
fi

log=$dir/run.log
TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$dir/build/test_api" "$fx" >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ] || grep -q "ThreadSanitizer" "$log"; then
  echo "FAIL: test_api under ThreadSanitizer (rc $rc)" >&2
  head -60 "$log" >&2
  exit 1
fi
tail -1 "$log"

# every command that runs the thread pool, 2 threads, small sizes (TSan is ~10x slower)
st=$fx/stories260K
f32=$st/stories260K-f32.gguf q4=$st/reference-quants/llamacpp-q4_0-pure.gguf
cli=$dir/build/edgelm
work=$(mktemp -d -t edgelm-tsan.XXXXXX)
trap 'rm -rf "$work"' EXIT
head -c 3000 "$st/text/valid.txt" > "$work/text.txt"
printf 'Hello\nTell me a story\n' > "$work/chat.txt"
passed=1 failed=0
tsan_cli() {
  local name=$1
  shift
  TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$@" >"$work/out" 2>"$work/err" <"$work/chat.txt"
  local rc=$?
  if [ $rc -ne 0 ] || grep -q "ThreadSanitizer" "$work/err"; then
    echo "FAIL: edgelm $name under ThreadSanitizer (rc $rc)" >&2
    head -60 "$work/err" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}
tsan_cli run "$cli" run -m "$f32" -p "Once upon a time" -n 16 --temp 0 -t 2
tsan_cli chat "$cli" chat -m "$f32" --temp 0 -n 16 -t 2
tsan_cli bench "$cli" bench -m "$q4" -p 32 -n 8 -r 1 -t 2 --membw-mib 16
tsan_cli "bench --membw" "$cli" bench --membw --membw-mib 16 -t 2
tsan_cli perplexity "$cli" perplexity -m "$q4" -f "$work/text.txt" -c 128 -t 2
tsan_cli eval "$cli" eval -m "$q4" --ref "$f32" -f "$work/text.txt" -c 128 -t 2
tsan_cli calib "$cli" calib -m "$f32" -i "$st/text/calib.txt" -n 4 --seq-len 64 -o "$work/calib.jsonl"
for method in gptq awq; do
  tsan_cli "quantize --method $method" "$cli" quantize -m "$f32" -o "$work/$method.gguf" --type q4_0 \
    --pure --method "$method" --calib "$work/calib.jsonl" -t 2
done
tsan_cli imatrix "$cli" imatrix -m "$f32" -f "$work/text.txt" -c 64 -t 2 -o "$work/imatrix.gguf"

# serve: two slots answering a chat and a completion at once (the scheduler, the HTTP threads and
# each slot's thread pool) while /metrics is scraped, then SIGTERM
if command -v curl >/dev/null; then
  TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$cli" serve -m "$f32" --host 127.0.0.1 --port 0 \
    -t 2 --parallel 2 -c 128 2>"$work/serve.err" &
  spid=$!
  port=
  for _ in $(seq 600); do # TSan starts slowly: up to 30 s
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/serve.err" 2>/dev/null | head -1 | cut -d: -f3)
    [ -n "$port" ] || ! kill -0 "$spid" 2>/dev/null && break
    sleep 0.05
  done
  codes=
  if [ -n "$port" ]; then
    curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d \
      '{"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 12}' \
      "http://127.0.0.1:$port/v1/chat/completions" >"$work/code1" &
    c1=$!
    # /metrics scraped while the scheduler and the HTTP threads count into it
    (for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/metrics"; done) >"$work/code3" &
    c3=$!
    curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d \
      '{"prompt": "Lily went", "max_tokens": 12, "stream": true}' \
      "http://127.0.0.1:$port/v1/completions" >"$work/code2"
    wait "$c1" "$c3"
    codes="$(cat "$work/code1") $(cat "$work/code2") $(sort -u "$work/code3")"
  fi
  kill -TERM "$spid" 2>/dev/null
  wait "$spid"
  rc=$?
  if [ "$codes" != "200 200 200" ] || [ $rc -ne 0 ] || grep -q "ThreadSanitizer" "$work/serve.err"; then
    echo "FAIL: edgelm serve under ThreadSanitizer (HTTP '$codes', rc $rc)" >&2
    head -60 "$work/serve.err" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
else
  echo "serve not checked: curl is not installed"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
