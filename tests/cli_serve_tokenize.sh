#!/usr/bin/env bash
# `edgelm serve`'s llama-server endpoints: POST /tokenize gives the ids `edgelm tokenize` gives
# (add_special puts BOS in front; with_pieces pairs each id with its text, or its bytes when not
# whole UTF-8), POST /detokenize gives the text back, GET /props its settings; bad bodies get a
# 400 naming the field, and the server answers normally afterwards.
# usage: cli_serve_tokenize.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
command -v curl >/dev/null || skip "curl is not installed"

start_server -m "$model" -t 1 --parallel 3 -c 200 --temp 0.7 -n 33

text="Once upon a time, Lily saw a big dog."
want=$("$bin" tokenize -m "$model" -p "$text" --ids)   # with BOS
body=$(python3 -c 'import json,sys; print(json.dumps({"content": sys.argv[1]}))' "$text")

# --- /tokenize: no BOS by default, BOS with add_special
[ "$(status_of POST /tokenize "$body")" = 200 ] && ok || fail "tokenize: $(cat "$tmp/body")"
python3 - "$tmp/body" "$want" <<'PY' && ok || fail "tokenize ids: $(cat "$tmp/body"), edgelm tokenize $want"
import json, sys
got, want = json.load(open(sys.argv[1]))["tokens"], json.loads(sys.argv[2])
assert want[0] == 1 and got == want[1:], (got, want)
PY
special=$(echo "$body" | python3 -c 'import json,sys; j=json.load(sys.stdin); j["add_special"]=True; print(json.dumps(j))')
[ "$(status_of POST /tokenize "$special")" = 200 ] && ok || fail "tokenize add_special: $(cat "$tmp/body")"
[ "$(json_get 'j["tokens"]' <"$tmp/body")" = "$want" ] && ok || fail "add_special: $(cat "$tmp/body"), want $want"
ids=$(json_get 'json.dumps(j["tokens"])' <"$tmp/body")

# --- /detokenize round-trips (the BOS and the leading space the tokenizer adds do not show)
[ "$(status_of POST /detokenize "{\"tokens\":$ids}")" = 200 ] && ok || fail "detokenize: $(cat "$tmp/body")"
[ "$(json_get 'j["content"]' <"$tmp/body")" = "$text" ] && ok || fail "round trip: '$(cat "$tmp/body")', want '$text'"
expect_status "detokenize empty" 200 '^\{"content":""\}$' POST /detokenize '{"tokens":[]}'

# --- with_pieces: the pieces spell the text; a byte token of a 3-byte character is its byte
utext="Tom said héllo 日"
ubody=$(python3 -c 'import json,sys; print(json.dumps({"content": sys.argv[1], "with_pieces": True, "add_special": True}))' "$utext")
[ "$(status_of POST /tokenize "$ubody")" = 200 ] && ok || fail "with_pieces: $(cat "$tmp/body")"
python3 - "$tmp/body" "$utext" <<'PY' && ok || fail "with_pieces: $(cat "$tmp/body")"
import json, sys
toks = json.load(open(sys.argv[1]))["tokens"]
assert toks[0] == {"id": 1, "piece": "<s>"}, toks[0]
raw = b"".join(bytes(t["piece"]) if isinstance(t["piece"], list) else t["piece"].encode() for t in toks[1:])
assert raw.decode() == " " + sys.argv[2], raw
assert any(isinstance(t["piece"], list) for t in toks), "no byte piece: the fixture has no token for 日: three byte tokens"
assert all(isinstance(t["id"], int) for t in toks)
PY
python3 -c 'import json,sys; print(json.dumps({"content": sys.argv[1]}))' "$utext" >"$tmp/u.json"
status_of POST /tokenize "$(cat "$tmp/u.json")" >/dev/null
[ "$(status_of POST /detokenize "$(cat "$tmp/body")")" = 200 ] && [ "$(json_get 'j["content"]' <"$tmp/body")" = "$utext" ] && ok ||
    fail "round trip of UTF-8: $(cat "$tmp/body")"

# --- /props
[ "$(status_of GET /props)" = 200 ] && ok || fail "props: $(cat "$tmp/body")"
python3 - "$tmp/body" "$model" <<'PY' && ok || fail "props fields: $(cat "$tmp/body")"
import json, sys
p = json.load(open(sys.argv[1]))
g = p["default_generation_settings"]
assert g["n_ctx"] == 200 and g["params"]["temperature"] == 0.7 and g["params"]["n_predict"] == 33, g
assert g["params"]["seed"] == -1 and g["params"]["top_k"] == 40, g
assert p["total_slots"] == 3 and p["model_path"] == sys.argv[2], p
assert p["model_alias"] == "stories260K-f32.gguf" and p["chat_template_name"] == "plain", p
assert p["bos_token"] == "<s>" and p["eos_token"] == "</s>" and p["build_info"].startswith("edgelm "), p
assert isinstance(p["chat_template"], str)
PY
expect_status "props by POST" 405 'use GET' POST /props '{}'
expect_status "tokenize by GET" 405 'use POST' GET /tokenize

# --- bad bodies: 400 naming the field
bad() { expect_status "$1" 400 "\"message\":\"$2" POST "$3" "$4"; }
bad "tokenize no content" 'content: required' /tokenize '{}'
bad "tokenize content number" 'content: expected a string' /tokenize '{"content":7}'
bad "tokenize with_pieces" 'with_pieces: expected true or false' /tokenize '{"content":"a","with_pieces":1}'
bad "tokenize add_special" 'add_special: expected true or false' /tokenize '{"content":"a","add_special":"yes"}'
bad "tokenize array body" 'request body: expected a JSON object' /tokenize '["a"]'
bad "tokenize not JSON" 'request body: invalid JSON' /tokenize '{"content":'
bad "tokenize NUL escape" 'request body: a string holds' /tokenize '{"content":"a\u0000b"}'
bad "detokenize no tokens" 'tokens: required' /detokenize '{"content":"a"}'
bad "detokenize not array" 'tokens: expected an array' /detokenize '{"tokens":5}'
bad "detokenize string id" 'tokens\[1\]: expected an integer' /detokenize '{"tokens":[1,"2"]}'
bad "detokenize fraction" 'tokens\[0\]: expected an integer' /detokenize '{"tokens":[2.5]}'
bad "detokenize negative" 'tokens\[2\]: -1 is not in the vocabulary \(0\.\.511\)' /detokenize '{"tokens":[1,2,-1]}'
bad "detokenize too big" 'tokens\[0\]: 512 is not in the vocabulary' /detokenize '{"tokens":[512]}'
bad "detokenize huge" 'tokens\[0\]: 1e\+300 is not in the vocabulary' /detokenize '{"tokens":[1e300]}'

# --- and it still serves
expect_status "after bad input" 200 '"finish_reason"' POST /v1/completions '{"prompt":"Once","max_tokens":3}'
expect_status "health after" 200 '"slots_idle":3' GET /health

stop_server
echo "cli_serve_tokenize: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
