#!/usr/bin/env bash
# Prints the tests that were skipped (ctest's "(Skipped)" lines of each suite's ctest.log, and the
# ARM64 suite's skipped.txt), or that none was: the closing lines of `make test`.
# usage: scripts/skipped.sh BUILD_DIR...
for dir in "$@"; do
  if [ -f "$dir/ctest.log" ]; then
    while read -r line; do
      echo "  $dir: $line"
    done < <(grep -E '\(Skipped\)' "$dir/ctest.log" | sed -E 's/^[[:space:]]*[0-9]+ - //')
  fi
  if [ -f "$dir/skipped.txt" ]; then
    echo "  $dir: $(cat "$dir/skipped.txt")"
  fi
done | { lines=$(cat); if [ -n "$lines" ]; then echo "skipped:"; echo "$lines"; else echo "skipped: none"; fi; }
