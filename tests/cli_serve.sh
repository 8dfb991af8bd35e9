#!/usr/bin/env bash
# `edgelm serve` through curl on loopback: /health, /v1/models, chat (content as a string or as
# text parts) and completions, streamed
# (Server-Sent Events ending in data: [DONE]) and not; greedy replies equal to `edgelm chat`'s for
# the same conversation (two turns); prefix caching (the second turn reports its cached tokens);
# bad input answered with OpenAI-shaped 400/404/405/413 errors naming the field; --api-key (401,
# /health open); a full queue answered 503; a client leaving mid-stream frees its slot; n = 3
# streamed (choices interleaved by index, equal to the whole reply's); SIGTERM and SIGINT stop the
# server with exit status 0, ending open streams properly; bad command lines.
# usage: cli_serve.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
command -v curl >/dev/null || skip "curl is not installed"

start_server -m "$model" -t 1 --parallel 2 -c 256

# --- health, models, the page
expect_status health 200 '"status":"ok".*"slots_idle":2' GET /health
expect_status models 200 '"object":"list".*"id":"stories260K-f32.gguf"' GET /v1/models
expect_status page 200 '<title>edgelm chat</title>' GET /
grep -q 'src=\|href="http' "$tmp/body" && fail "the page fetches something: $(grep -o 'src=[^ ]*\|href="http[^"]*' "$tmp/body")" || ok

# --- greedy chat equals edgelm chat, over two turns; the second turn reuses the first's cache
sys="You tell stories."
printf 'Once upon a time\nWhat did Lily see?\n' |
    "$bin" chat -t 1 -m "$model" -c 256 -n 24 --temp 0 --system "$sys" >"$tmp/chat.out" 2>/dev/null
r1=$(sed -n 1p "$tmp/chat.out") r2=$(sed -n 2p "$tmp/chat.out")
[ -n "$r1" ] && [ -n "$r2" ] && ok || fail "edgelm chat replied '$r1' / '$r2'"
body1=$(python3 -c 'import json,sys; print(json.dumps({"messages":[{"role":"system","content":sys.argv[1]},{"role":"user","content":"Once upon a time"}],"max_tokens":24,"temperature":0}))' "$sys")
[ "$(status_of POST /v1/chat/completions "$body1")" = 200 ] && ok || fail "chat: $(cat "$tmp/body")"
got1=$(json_get 'j["choices"][0]["message"]["content"]' <"$tmp/body")
[ "$got1" = "$r1" ] && ok || fail "turn 1: serve '$got1', chat '$r1'"
json_get 'j["usage"]["prompt_tokens"] > 0 and j["usage"]["completion_tokens"] == 24 and j["choices"][0]["finish_reason"] == "length" and j["object"] == "chat.completion"' <"$tmp/body" | grep -q True && ok ||
    fail "turn 1 usage/finish: $(cat "$tmp/body")"
p1=$(json_get 'j["usage"]["prompt_tokens"]' <"$tmp/body")
# the same user message as an array of text parts, joined in order
bodyp=$(python3 -c 'import json,sys; print(json.dumps({"messages":[{"role":"system","content":sys.argv[1]},{"role":"user","content":[{"type":"text","text":"Once"},{"type":"text","text":" upon a"},{"type":"text","text":" time"}]}],"max_tokens":24,"temperature":0}))' "$sys")
[ "$(status_of POST /v1/chat/completions "$bodyp")" = 200 ] && ok || fail "chat with text parts: $(cat "$tmp/body")"
gotp=$(json_get 'j["choices"][0]["message"]["content"]' <"$tmp/body")
[ "$gotp" = "$r1" ] && ok || fail "text parts: serve '$gotp', chat '$r1'"
body2=$(python3 -c 'import json,sys; print(json.dumps({"messages":[{"role":"system","content":sys.argv[1]},{"role":"user","content":"Once upon a time"},{"role":"assistant","content":sys.argv[2]},{"role":"user","content":"What did Lily see?"}],"max_tokens":24,"temperature":0}))' "$sys" "$r1")
[ "$(status_of POST /v1/chat/completions "$body2")" = 200 ] && ok || fail "chat turn 2: $(cat "$tmp/body")"
got2=$(json_get 'j["choices"][0]["message"]["content"]' <"$tmp/body")
[ "$got2" = "$r2" ] && ok || fail "turn 2: serve '$got2', chat '$r2'"
cached=$(json_get 'j["usage"]["prompt_tokens_details"]["cached_tokens"]' <"$tmp/body")
[ "$cached" -ge "$p1" ] && ok || fail "turn 2 cached $cached tokens, want >= turn 1's prompt ($p1)"

# --- streaming gives the same text in chunks, then usage, then [DONE]
sbody=$(echo "$body1" | python3 -c 'import json,sys; j=json.load(sys.stdin); j["stream"]=True; print(json.dumps(j))')
curl -sN -H 'Content-Type: application/json' -d "$sbody" "$url/v1/chat/completions" >"$tmp/sse"
python3 - "$tmp/sse" "$r1" <<'PY' && ok || fail "chat stream: $(head -c 600 "$tmp/sse")"
import json, sys
events = [e for e in open(sys.argv[1]).read().split("\n\n") if e]
assert all(e.startswith("data: ") for e in events), events
assert events[-1] == "data: [DONE]", events[-1]
chunks = [json.loads(e[6:]) for e in events[:-1]]
assert all(c["object"] == "chat.completion.chunk" for c in chunks)
text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
assert text == sys.argv[2], (text, sys.argv[2])
assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
assert chunks[-1]["choices"][0]["finish_reason"] == "length" and chunks[-1]["usage"]["completion_tokens"] == 24
PY

# --- completions: as `edgelm run` continues the prompt
want=$("$bin" run -t 1 -m "$model" -p "Once upon a time" -n 16 --temp 0 2>/dev/null)
[ "$(status_of POST /v1/completions '{"prompt":"Once upon a time","max_tokens":16,"temperature":0}')" = 200 ] && ok || fail "completions: $(cat "$tmp/body")"
got=$(json_get 'j["choices"][0]["text"]' <"$tmp/body")
[ "Once upon a time$got" = "$want" ] && ok || fail "completions '$got', run '$want'"
curl -sN -d '{"prompt":"Once upon a time","max_tokens":16,"temperature":0,"stream":true,"stop":["girl"]}' "$url/v1/completions" >"$tmp/sse"
python3 - "$tmp/sse" "${want#Once upon a time}" <<'PY' && ok || fail "completions stream with stop: $(head -c 600 "$tmp/sse")"
import json, sys
events = [e for e in open(sys.argv[1]).read().split("\n\n") if e]
assert events[-1] == "data: [DONE]"
chunks = [json.loads(e[6:]) for e in events[:-1]]
text = "".join(c["choices"][0]["text"] for c in chunks)
full = sys.argv[2]
want = full[:full.index("girl")] if "girl" in full else full
assert text == want, (text, want)
assert chunks[-1]["choices"][0]["finish_reason"] == ("stop" if "girl" in full else "length")
PY

# --- bad input: OpenAI-shaped errors naming the field
err='"error":\{"message":"[^"]*%s[^"]*","type":"invalid_request_error"'
chat=/v1/chat/completions
expect_status "invalid JSON" 400 "$(printf "$err" 'request body: invalid JSON')" POST $chat '{"messages": ['
expect_status "not an object" 400 "$(printf "$err" 'request body')" POST $chat '[1,2]'
expect_status "NUL escape" 400 "$(printf "$err" 'request body: a string holds')" POST $chat \
    '{"messages":[{"role":"user","content":"a\u0000b"}]}'
expect_status "responses NUL" 400 "$(printf "$err" 'request body: a string holds')" POST /v1/responses \
    '{"input":"a\u0000b"}'
expect_status "no messages" 400 "$(printf "$err" 'messages: required')" POST $chat '{"model":"x"}'
expect_status "messages type" 400 "$(printf "$err" 'messages: expected an array')" POST $chat '{"messages":"hi"}'
expect_status "bad role" 400 'messages\[0\].role: expected .*"type":"invalid_request_error"' POST $chat '{"messages":[{"role":"robot","content":"hi"}]}'
expect_status "content type" 400 "$(printf "$err" 'messages\[0\].content')" POST $chat '{"messages":[{"role":"user","content":7}]}'
expect_status "late system" 400 "$(printf "$err" 'messages\[1\].role')" POST $chat '{"messages":[{"role":"user","content":"a"},{"role":"system","content":"b"}]}'
expect_status "negative max_tokens" 400 "$(printf "$err" 'max_tokens')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"max_tokens":-1}'
expect_status "huge max_tokens" 400 "$(printf "$err" 'max_tokens')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"max_tokens":100000000000}'
expect_status "fractional max_tokens" 400 "$(printf "$err" 'max_tokens: expected an integer')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"max_tokens":1.5}'
expect_status "temperature type" 400 "$(printf "$err" 'temperature: expected a number')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"temperature":"hot"}'
expect_status "top_p range" 400 "$(printf "$err" 'top_p')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"top_p":3}'
expect_status "stream type" 400 "$(printf "$err" 'stream')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"stream":"yes"}'
expect_status "stop type" 400 "$(printf "$err" 'stop')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"stop":5}'
expect_status "n over the slots" 400 "$(printf "$err" 'n: 3 out of range 1..2')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"n":3}'
expect_status "no prompt" 400 "$(printf "$err" 'prompt: required')" POST /v1/completions '{"max_tokens":3}'
long=$(python3 -c 'print("Once upon a time " * 200)')
expect_status "prompt over context" 400 "$(printf "$err" 'prompt: the prompt has [0-9]+ tokens, a slot.s context holds 256')" POST /v1/completions "{\"prompt\":\"$long\"}"
expect_status "unknown route" 404 '"code":"not_found"' GET /v1/nothing
expect_status "wrong method" 405 '"code":"method_not_allowed"' GET $chat
python3 -c 'print("{\"prompt\":\"" + "a" * (1 << 20) + "\"}")' >"$tmp/big.json"
got=$(curl -s -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$tmp/big.json" "$url/v1/completions")
[ "$got" = 413 ] && grep -q '"code":"request_too_large"' "$tmp/body" && ok || fail "1 MiB body: status $got, $(head -c 300 "$tmp/body")"
expect_status "health after errors" 200 '"slots_busy":0' GET /health
stop_server TERM

# --- API key: every route but /health
start_server -m "$model" -t 1 --api-key s3cret -c 128
expect_status "health without key" 200 '"status":"ok"' GET /health
expect_status "models without key" 401 '"type":"authentication_error"' GET /v1/models
expect_status "wrong key" 401 '"code":"invalid_api_key"' GET /v1/models '' -H 'Authorization: Bearer s3cres'
expect_status "longer key" 401 '"code":"invalid_api_key"' GET /v1/models '' -H 'Authorization: Bearer s3cret2'
expect_status "right key" 200 '"object":"list"' GET /v1/models '' -H 'Authorization: Bearer s3cret'
expect_status "chat without key" 401 'invalid_api_key' POST $chat '{"messages":[{"role":"user","content":"hi"}]}'
expect_status "chat with key" 200 '"chat.completion"' POST $chat '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}' -H 'Authorization: Bearer s3cret'
stop_server INT

# --- one slot, no queue: a second request while the first streams gets 503; the first's client
# leaves mid-stream and its slot is free again at once (its 4000 tokens would take far longer)
start_server -m "$model" -t 1 --parallel 1 --queue 0 -c 4096
long='{"prompt":"Once","max_tokens":4000,"ignore_eos":true,"temperature":0,"stream":true}'
exec 3< <(curl -sN -d "$long" "$url/v1/completions")
curl_pid=$!
read -r -t 20 first <&3
case "$first" in "data: {"*) ok ;; *) fail "no first chunk: '$first'" ;; esac
expect_status "busy" 200 '"slots_busy":1' GET /health
expect_status "queue full" 503 '"type":"server_error","code":"server_busy"' POST /v1/completions '{"prompt":"Hi","max_tokens":2}'
# leave: the client ($curl_pid on fd 3) goes; every slot must be free within 2 s
leave() {
    local t0 t1 busy=1
    kill "$curl_pid" 2>/dev/null
    exec 3<&-
    t0=$(date +%s%N)
    for i in $(seq 100); do
        busy=$(curl -s "$url/health" | json_get 'j["slots_busy"]')
        [ "$busy" = 0 ] && break
        sleep 0.02
    done
    t1=$(date +%s%N)
    [ "$busy" = 0 ] && ok || fail "$busy slots still busy 2 s after the client left"
    echo "slots freed $(( (t1 - t0) / 1000000 )) ms after the client left"
}
leave
# SIGTERM during a stream: the stream ends properly (last chunk, [DONE]) and the server exits 0
curl -sN -d "$long" "$url/v1/completions" >"$tmp/sigterm.sse" &
curl_pid=$!
for i in $(seq 200); do grep -q '^data: {' "$tmp/sigterm.sse" 2>/dev/null && break; sleep 0.05; done
stop_server TERM
wait "$curl_pid"
python3 - "$tmp/sigterm.sse" <<'PY' && ok || fail "stream cut by SIGTERM: $(tail -c 400 "$tmp/sigterm.sse")"
import json, sys
events = [e for e in open(sys.argv[1]).read().split("\n\n") if e]
assert events[-1] == "data: [DONE]", events[-1]
assert json.loads(events[-2][6:])["choices"][0]["finish_reason"] == "cancelled", events[-2]
PY

# --- n = 3 streamed: each chunk carries one choice, by index, as its tokens come; each choice ends
# with a finish chunk of its own, the last one with the usage of all, then [DONE]. Choice i is
# drawn with seed + i whether streamed or not, so at temperature 1 the streamed texts equal the
# whole reply's. A client leaving frees all three slots; n over the slots is still a 400.
start_server -m "$model" -t 1 --parallel 3 --queue 0 -c 4096
for path in /v1/chat/completions /v1/completions; do
    case $path in
    *chat*) body='{"messages":[{"role":"user","content":"Once upon a time"}]' ;;
    *) body='{"prompt":"Once upon a time"' ;;
    esac
    body="$body"',"max_tokens":24,"temperature":1,"seed":11,"n":3'
    [ "$(status_of POST $path "$body}")" = 200 ] && cp "$tmp/body" "$tmp/whole.json" || fail "n 3 $path: $(cat "$tmp/body")"
    curl -sN -H 'Content-Type: application/json' -d "$body"',"stream":true}' "$url$path" >"$tmp/sse"
    python3 - "$tmp/whole.json" "$tmp/sse" <<'PY' && ok || fail "n 3 stream $path: $(head -c 800 "$tmp/sse")"
import json, sys
whole = json.load(open(sys.argv[1]))
events = [e for e in open(sys.argv[2]).read().split("\n\n") if e]
assert events[-1] == "data: [DONE]" and "[DONE]" not in "".join(events[:-1]), events[-1]
chunks = [json.loads(e[6:]) for e in events[:-1]]
texts, finish = {}, {}
for k, c in enumerate(chunks):
    assert len(c["choices"]) == 1, c
    ch = c["choices"][0]
    i = ch["index"]
    assert i not in finish, "a chunk of choice %d after its finish" % i
    texts[i] = texts.get(i, "") + ((ch["delta"].get("content") if "delta" in ch else ch["text"]) or "")
    if ch["finish_reason"]:
        finish[i] = ch["finish_reason"]
    assert ("usage" in c) == (k == len(chunks) - 1), "usage on chunk %d of %d" % (k, len(chunks))
assert sorted(finish) == [0, 1, 2], finish
for c in whole["choices"]:
    i = c["index"]
    want = c["message"]["content"] if "message" in c else c["text"]
    assert texts[i] == want and finish[i] == c["finish_reason"], (i, texts[i], finish[i], c)
assert len(set(texts.values())) > 1, texts  # three seeds, not one reply thrice
u, w = chunks[-1]["usage"], whole["usage"]
assert u["completion_tokens"] == w["completion_tokens"] and u["prompt_tokens"] == w["prompt_tokens"], (u, w)
PY
done
expect_status "n over the slots, streamed" 400 "$(printf "$err" 'n: 4 out of range 1..3')" POST $chat '{"messages":[{"role":"user","content":"hi"}],"n":4,"stream":true}'
# the three choices advance together (none waits for another's 4000 tokens); then the client
# leaves. No process per line: the jobs must still run when /health is asked.
exec 3< <(curl -sN -d "${long%\}}"',"n":3}' "$url/v1/completions")
curl_pid=$!
seen=
for i in $(seq 40); do
    read -r -t 20 line <&3 || break
    [[ $line =~ \"index\":([0-9]+) ]] && seen="$seen${BASH_REMATCH[1]}"
    [[ $seen == *0* && $seen == *1* && $seen == *2* ]] && break
done
[[ $seen == *0* && $seen == *1* && $seen == *2* ]] && ok || fail "n 3 stream: the first chunks' indices '$seen'"
expect_status "3 busy" 200 '"slots_busy":3' GET /health
leave
stop_server TERM

# --- command line
expect_error "no model" "-m MODEL is required" "$bin" serve
expect_error "bad host" "--host: 'localhost:1' is not an IPv4 address" "$bin" serve -m "$model" --host localhost:1 --port 0
expect_error "bad port" "--port: invalid value '70000'" "$bin" serve -m "$model" --port 70000
expect_error "draft" "--draft and --lookup are not supported" "$bin" serve -m "$model" --draft "$model"
start_server -m "$model" -t 1 -c 64
expect_error "port in use" "cannot listen on 127.0.0.1:$port" "$bin" serve -m "$model" --port "$port"
stop_server TERM

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
