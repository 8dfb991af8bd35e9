#!/usr/bin/env bash
# Replays the fuzzing corpora and every saved crash input (tests/fuzz/crashes/HARNESS/*) through
# the libFuzzer harnesses (scripts/fuzz.sh: built with clang in build-fuzz/, cached; seeds written
# from the fixtures for a harness without a corpus yet): each input must load or fail cleanly, with no
# sanitizer report. Skipped (exit 77) when clang is missing.
# usage: cli_fuzz.sh EDGELM FIXTURES   (run from the repository root)
set -u
export EDGELM_FIXTURES=$2 EDGELM_CLI=$1
bash scripts/fuzz.sh build || exit $?
exec 9>"build-fuzz/lock"
flock 9
if bash scripts/fuzz.sh replay; then
  n=$(ls build-fuzz/corpus/*/* tests/fuzz/crashes/*/* 2>/dev/null | wc -l)
  echo "$n inputs replayed"
  echo "1 passed, 0 failed"
else
  echo "0 passed, 1 failed"
  exit 1
fi
