#!/usr/bin/env bash
# Installs ONNX Runtime for Node (onnxruntime-node, pinned) into build/npm once, for the export
# tests that run edgelm's ONNX folders in the real runtime. --ignore-scripts: the package's install
# script only fetches optional GPU binaries from a host these machines cannot reach; the CPU library
# is inside the package. Safe to call from several tests at once (flock). Prints the install folder;
# exit 2 when npm or its registry cannot be reached (the tests then skip with one clear line), 1 on
# any other failure.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${EDGELM_NPM_DIR:-$root/build/npm}
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ ! -f "$dir/node_modules/onnxruntime-node/package.json" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found" >&2; exit 2; }
  if ! npm view onnxruntime-node@1.30.0 version >/dev/null 2>&1; then
    echo "npm registry unreachable" >&2
    exit 2
  fi
  [ -f "$dir/package.json" ] || (cd "$dir" && npm init -y >/dev/null 2>&1)
  (cd "$dir" && npm i -E --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30.0 >/dev/null 2>&1) ||
    { echo "npm install onnxruntime-node@1.30.0 failed" >&2; exit 1; }
fi
echo "$dir"
