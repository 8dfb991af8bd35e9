#!/usr/bin/env bash
# `edgelm serve` replies held to a JSON schema, json_object or a GBNF grammar, tool calls and the
# Responses API (stories260K on Qwen3's template; the tool calls also in the syntaxes of Qwen3.5,
# Granite 4.0, Llama 3.2, Gemma 4, Phi-4-mini, LFM2, whose call markers this vocabulary spells in
# bytes, Ministral 3, Mistral Small 3.2, Mistral Nemo and gpt-oss, whose channel markers it spells
# in bytes too: its replies' reasoning and answer), checked by the OpenAI Node client and ajv
# (tests/lib/serve_json.cjs, serve_tools.cjs, serve_channels.cjs, serve_responses.cjs; packages pinned by
# scripts/npm-clients.sh).
# Skipped when node is missing or the npm registry cannot be reached.
# usage: cli_serve_json.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
require_npm_clients

start_server -m "$model" -t 1 --parallel 2 -c 2048 --template qwen3
node "$(dirname "$0")/lib/serve_json.cjs" "$npm_dir" "$url" && ok || fail "constrained replies"
node "$(dirname "$0")/lib/serve_tools.cjs" "$npm_dir" "$url" && ok || fail "tool calls"
node "$(dirname "$0")/lib/serve_responses.cjs" "$npm_dir" "$url" && ok || fail "Responses API"
stop_server TERM
for tpl in qwen35 granite4 llama32 gemma4 phi4-mini lfm2 ministral3 mistral-small32 mistral-nemo gpt-oss; do
    start_server -m "$model" -t 1 --parallel 2 -c 2048 --template $tpl
    node "$(dirname "$0")/lib/serve_tools.cjs" "$npm_dir" "$url" && ok || fail "tool calls, $tpl"
    if [ "$tpl" = gpt-oss ]; then
        node "$(dirname "$0")/lib/serve_channels.cjs" "$npm_dir" "$url" && ok || fail "channels, $tpl"
    fi
    stop_server TERM
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
