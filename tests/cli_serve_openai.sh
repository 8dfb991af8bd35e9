#!/usr/bin/env bash
# `edgelm serve` with the official OpenAI Node client (npm openai, pinned by
# scripts/npm-clients.sh): models, chat and completions, streamed and not, prefix caching seen in
# usage, errors as the client's APIError / AuthenticationError (tests/lib/serve_openai.cjs).
# Skipped when node is missing or the npm registry cannot be reached.
# usage: cli_serve_openai.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
require_npm_clients

start_server -m "$model" -t 1 --parallel 2 -c 256 --api-key test-key
node "$(dirname "$0")/lib/serve_openai.cjs" "$npm_dir" "$url" test-key && ok || fail "openai client checks"
stop_server TERM
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
