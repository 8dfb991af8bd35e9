#!/usr/bin/env bash
# A bounded load test of `edgelm serve` on loopback (tests/lib/serve_load.py): 8 clients x 25
# mixed requests plus 200 malformed ones against 4 slots; every well-formed request completes, no
# 5xx, RSS flat; then SIGTERM stops it with exit status 0. Under AddressSanitizer (the build-asan
# binary) a short version: 4 clients x 6 and 40 malformed, the leak check at exit instead of RSS.
# usage: cli_serve_load.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
clients=8 per=25 bad=200 rss=rss
if ldd "$bin" 2>/dev/null | grep -q libasan; then clients=4 per=6 bad=40 rss=no-rss; fi
start_server -m "$model" -t 2 --parallel 4 -c 512
python3 "$(dirname "$0")/lib/serve_load.py" "$url" "$pid" $clients $per $bad $rss && ok || fail "load test"
stop_server TERM
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
