#!/usr/bin/env bash
# Installs the official OpenAI Node client (openai, pinned; 4.x runs on Debian 12's Node 18/20)
# into build/npm once, for the `edgelm serve` client tests. Safe to call from several tests at
# once (flock). EDGELM_NPM_DIR chooses another folder (a shared install). Prints the install
# folder; exit 2 when npm is missing or the registry cannot be reached (the tests then skip with
# one clear line), 1 on any other failure.
set -u
version=4.104.0
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${EDGELM_NPM_DIR:-$root/build/npm}
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ "$(cat "$dir/node_modules/openai/package.json" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])' 2>/dev/null)" != "$version" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found" >&2; exit 2; }
  if ! npm view "openai@$version" version >/dev/null 2>&1; then
    echo "npm registry unreachable" >&2
    exit 2
  fi
  (cd "$dir" && { [ -f package.json ] || npm init -y >/dev/null 2>&1; } &&
    npm i -E --no-audit --no-fund "openai@$version" >/dev/null 2>&1) ||
    { echo "npm install openai@$version failed" >&2; exit 1; }
fi
echo "$dir"
