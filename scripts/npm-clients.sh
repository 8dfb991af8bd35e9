#!/usr/bin/env bash
# Installs the Node packages the `edgelm serve` client tests use, pinned, into build/npm once:
# the official OpenAI client (openai; 4.x runs on Debian 12's Node 18/20) and the JSON-schema
# validator ajv with ajv-formats (the constrained replies are checked by it). Safe to call from several tests at
# once (flock). EDGELM_NPM_DIR chooses another folder (a shared install). Prints the install
# folder; exit 2 when npm is missing or the registry cannot be reached (the tests then skip with
# one clear line), 1 on any other failure.
set -u
packages="openai@4.104.0 ajv@8.17.1 ajv-formats@3.0.1"
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${EDGELM_NPM_DIR:-$root/build/npm}
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
installed() { # NAME@VERSION: whether that version is in node_modules
  [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
        "$dir/node_modules/${1%@*}/package.json" 2>/dev/null)" = "${1##*@}" ]
}
missing=
for p in $packages; do installed "$p" || missing="$missing $p"; done
if [ -n "$missing" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found" >&2; exit 2; }
  if ! npm view "openai@4.104.0" version >/dev/null 2>&1; then
    echo "npm registry unreachable" >&2
    exit 2
  fi
  (cd "$dir" && { [ -f package.json ] || npm init -y >/dev/null 2>&1; } &&
    npm i -E --no-audit --no-fund $missing >/dev/null 2>&1) ||
    { echo "npm install$missing failed" >&2; exit 1; }
fi
echo "$dir"
