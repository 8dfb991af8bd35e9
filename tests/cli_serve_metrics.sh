#!/usr/bin/env bash
# `edgelm serve`'s observability: GET /metrics parses as Prometheus text (tests/lib/prometheus.py:
# every line a comment or a sample, counters ending in _total, histograms cumulative with +Inf
# equal to _count) and its counters equal what was sent: requests by route and status, prompt,
# cached and generated tokens against the replies' usage, prefix-cache hits, the latency
# histograms' counts against the tokens sampled, the slot gauges. The access log on stderr: with
# --log-format json one object per request matching it (method, path, status, the usage of each
# completion, times, slot); by default one text line each; a bad --log-format refused.
# usage: cli_serve_metrics.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
command -v curl >/dev/null || skip "curl is not installed"
lib=$(cd "$(dirname "$0")/lib" && pwd)

start_server -m "$model" -t 1 --parallel 2 -c 256 --log-format json

# scrape NAME: GET /metrics into $tmp/NAME.prom (fails the check unless 200 and text/plain 0.0.4)
scrape() {
    curl -s -D "$tmp/$1.head" -o "$tmp/$1.prom" "$url/metrics"
    grep -qi '^content-type: text/plain; version=0.0.4' "$tmp/$1.head" && grep -q ' 200' "$tmp/$1.head" && ok ||
        fail "/metrics $1: $(head -1 "$tmp/$1.head") $(grep -i content-type "$tmp/$1.head")"
}

# --- before any request: parses, everything zero, the slots' gauges
scrape empty
python3 - "$lib" "$tmp/empty.prom" <<'PY' && ok || fail "empty /metrics: $(head -c 1500 "$tmp/empty.prom")"
import sys; sys.path.insert(0, sys.argv[1]); import prometheus as p
s = p.parse(open(sys.argv[2]).read())
assert p.get(s, "edgelm_slots_total") == 2 and p.get(s, "edgelm_slots_busy") == 0, s
assert p.get(s, "edgelm_requests_waiting") == 0
for n in ("prompt_tokens_total", "tokens_generated_total", "prefix_cache_hits_total",
          "time_to_first_token_seconds_count", "time_per_output_token_seconds_count"):
    assert p.get(s, "edgelm_" + n) == 0, n
PY

# --- traffic: 3 chats (the third repeats the first, so its slot reuses the cached prompt), one
# streamed completion, a 400, a 404, a 405; each reply's usage kept in $tmp/usage
chat='{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":12,"temperature":0}'
: >"$tmp/usage"
for body in "$chat" '{"messages":[{"role":"user","content":"Lily and the dog"}],"max_tokens":7}' "$chat"; do
    [ "$(status_of POST /v1/chat/completions "$body")" = 200 ] && ok || fail "chat: $(cat "$tmp/body")"
    json_get 'json.dumps({"usage": j["usage"], "finish": j["choices"][0]["finish_reason"]})' <"$tmp/body" >>"$tmp/usage"
done
curl -sN -d '{"prompt":"Once upon a time","max_tokens":9,"stream":true}' "$url/v1/completions" >"$tmp/sse"
python3 - "$tmp/sse" >>"$tmp/usage" <<'PY' || fail "stream: $(head -c 600 "$tmp/sse")"
import json, sys
events = [e for e in open(sys.argv[1]).read().split("\n\n") if e]
last = json.loads(events[-2][6:])
print(json.dumps({"usage": last["usage"], "finish": last["choices"][0]["finish_reason"]}))
PY
expect_status "bad field" 400 '"temperature' POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"temperature":"hot"}'
expect_status "no route" 404 'no route' GET /nowhere
expect_status "wrong method" 405 'use GET' POST /metrics '{}'
status_of GET /health >/dev/null
# a request is counted as it completes, just after its client has the response: wait for the log
# line of the last one (written right after it was counted)
for _ in $(seq 40); do [ "$(grep -c '^{' "$server_err")" -ge 9 ] && break; sleep 0.05; done

scrape after
python3 - "$lib" "$tmp/after.prom" "$tmp/usage" <<'PY' && ok || fail "/metrics after traffic: $(head -c 3000 "$tmp/after.prom")"
import json, sys; sys.path.insert(0, sys.argv[1]); import prometheus as p
s = p.parse(open(sys.argv[2]).read())
replies = [json.loads(l) for l in open(sys.argv[3])]
assert len(replies) == 4, replies
req = lambda e, c: p.get(s, "edgelm_requests_total", endpoint=e, code=str(c))
assert req("/v1/chat/completions", 200) == 3, req("/v1/chat/completions", 200)
assert req("/v1/chat/completions", 400) == 1
assert req("/v1/completions", 200) == 1
assert req("other", 404) == 1 and req("/metrics", 405) == 1 and req("/health", 200) == 1
assert req("/metrics", 200) == 1, "the first scrape is counted, this one not yet"
u = [r["usage"] for r in replies]
assert p.get(s, "edgelm_prompt_tokens_total") == sum(x["prompt_tokens"] for x in u)
assert p.get(s, "edgelm_tokens_generated_total") == sum(x["completion_tokens"] for x in u)
cached = [x["prompt_tokens_details"]["cached_tokens"] for x in u]
assert cached[2] > 0, "the repeated chat reused no cache"
assert p.get(s, "edgelm_prompt_tokens_cached_total") == sum(cached)
assert p.get(s, "edgelm_prefix_cache_hits_total") == sum(c > 0 for c in cached)
# every request sampled a first token; the later ones are per-token latencies (an end-of-text
# token is sampled but not counted in completion_tokens)
sampled = sum(x["completion_tokens"] + (r["finish"] == "stop") for x, r in zip(u, replies))
assert p.get(s, "edgelm_time_to_first_token_seconds_count") == 4
assert p.get(s, "edgelm_time_per_output_token_seconds_count") == sampled - 4
assert 0 < p.get(s, "edgelm_time_to_first_token_seconds_sum") < 60
assert p.get(s, "edgelm_slots_busy") == 0 and p.get(s, "edgelm_requests_waiting") == 0
PY

# --- the parser itself rejects what the format forbids (so the checks above can fail)
python3 - "$lib" <<'PY' && ok || fail "prometheus.py accepted a malformed exposition"
import sys; sys.path.insert(0, sys.argv[1]); import prometheus as p
bad = ["# TYPE a counter\na 1\n",                                        # counter without _total
       "b_total 1\n",                                                    # no TYPE
       "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 2\n",
       "# TYPE g gauge\ng one\n"]
for text in bad:
    try: p.parse(text)
    except (AssertionError, ValueError): continue
    raise SystemExit(f"accepted {text!r}")
PY

# --- the JSON access log: one line per request above (10), in any order, with each reply's usage
for _ in $(seq 40); do [ "$(grep -c '^{' "$server_err")" -ge 10 ] && break; sleep 0.05; done
python3 - "$server_err" "$tmp/usage" <<'PY' && ok || fail "JSON access log: $(cat "$server_err")"
import collections, json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
got = collections.Counter((l["method"], l["path"], l["status"]) for l in lines)
want = collections.Counter({("GET", "/metrics", 200): 2, ("POST", "/v1/chat/completions", 200): 3,
                            ("POST", "/v1/completions", 200): 1, ("POST", "/v1/chat/completions", 400): 1,
                            ("GET", "/nowhere", 404): 1, ("POST", "/metrics", 405): 1, ("GET", "/health", 200): 1})
assert got == want, got
for l in lines:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", l["time"]), l
    assert 0 <= l["total_ms"] < 60000, l
    done = l["status"] == 200 and l["path"].startswith("/v1/")
    assert ("completion_tokens" in l) == done and ("slot" in l) == done, l
    if done: assert 0 <= l["ttft_ms"] <= l["total_ms"] and l["slot"] in (0, 1), l
usage = sorted((u["usage"]["prompt_tokens"], u["usage"]["prompt_tokens_details"]["cached_tokens"],
                u["usage"]["completion_tokens"]) for u in map(json.loads, open(sys.argv[2])))
logged = sorted((l["prompt_tokens"], l["cached_tokens"], l["completion_tokens"]) for l in lines if "completion_tokens" in l)
assert usage == logged, (usage, logged)
PY
stop_server

# --- the default text log: one line per request, space-separated fields
start_server -m "$model" -t 1 -c 128
status_of POST /v1/completions '{"prompt":"Once","max_tokens":4}' >/dev/null
status_of GET '/no%20where' >/dev/null
for _ in $(seq 40); do [ "$(grep -c ' 404 ' "$server_err")" -ge 1 ] && break; sleep 0.05; done
t='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z'
grep -qE "^$t POST /v1/completions 200 prompt=[0-9]+ cached=0 gen=4 ttft_ms=[0-9.]+ total_ms=[0-9.]+ slot=0 finish=length$" "$server_err" &&
    grep -qE "^$t GET /no%20where 404 total_ms=[0-9.]+$" "$server_err" && ok || fail "text access log: $(cat "$server_err")"
stop_server
expect_error "bad --log-format" "--log-format: invalid value 'xml'" "$bin" serve -m "$model" --log-format xml
echo "cli_serve_metrics: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
