#!/usr/bin/env bash
# Replays the fuzzing corpora (build-fuzz/corpus/HARNESS: seeds written from the fixtures for a
# harness without one, and whatever `make fuzz` grew there) and every saved crash input
# (tests/fuzz/crashes/HARNESS/*) through the harnesses of the ASan+UBSan tree (fuzz/ beside the
# CLI: each harness with a replaying main, tests/fuzz/replay_main.c; registered in that tree
# only): each input must load or fail cleanly, with no sanitizer report.
# usage: cli_fuzz.sh EDGELM FIXTURES   (run from the repository root)
set -u
export EDGELM_FIXTURES=$2 EDGELM_CLI=$1 EDGELM_FUZZ_BIN
EDGELM_FUZZ_BIN=$(cd "$(dirname "$1")" && pwd)/fuzz
mkdir -p build-fuzz
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
