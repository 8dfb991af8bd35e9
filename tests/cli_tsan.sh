#!/usr/bin/env bash
# ThreadSanitizer check of the "no global state" promise: builds tests/test_api.c (two contexts on
# one model generating in two threads, plus the thread pool inside each) with -fsanitize=thread in
# a build folder of its own, cached between runs, and runs it; any race report fails the test.
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
if ! cmake -S "$repo" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGELM_SHARED="$fx/.." \
       -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
       -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >"$dir/configure.log" 2>&1 ||
   ! cmake --build "$dir/build" --target test_api -j 2 >"$dir/build.log" 2>&1; then
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
echo "1 passed, 0 failed"
