#!/usr/bin/env bash
# Installs llama.cpp's prebuilt CPU library for Node (node-llama-cpp, pinned) into build/npm once,
# for the interop tests that load edgelm's GGUF files in the reference runtime. Safe to call from
# several tests at once (flock). Prints the install folder; exit 2 when the npm registry cannot be
# reached (the tests then skip with one clear line), 1 on any other failure.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${EDGELM_NPM_DIR:-$root/build/npm}
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ ! -f "$dir/node_modules/node-llama-cpp/package.json" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found" >&2; exit 2; }
  if ! npm view node-llama-cpp@3.21.1 version >/dev/null 2>&1; then
    echo "npm registry unreachable" >&2
    exit 2
  fi
  (cd "$dir" && npm init -y >/dev/null 2>&1 && npm i -E --no-audit --no-fund node-llama-cpp@3.21.1 >/dev/null 2>&1) ||
    { echo "npm install node-llama-cpp@3.21.1 failed" >&2; exit 1; }
fi
echo "$dir"
