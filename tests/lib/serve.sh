# Helpers of the `edgelm serve` tests, sourced after lib/cli.sh: start_server starts one on a free
# loopback port (--port 0, the port read from its first stderr line) and sets $port, $pid and
# $url; stop_server sends SIGTERM and checks that it exits 0 within 10 s. Servers still running
# when the test exits are killed. $model is the tests' model, stories260K in the fixtures folder
# that every CLI test gets as its second argument.
model=$2/stories260K/stories260K-f32.gguf
servers=()
trap 'for p in "${servers[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT

# start_server ARGS...: edgelm serve -m ... ARGS on 127.0.0.1, port 0; its stderr in $tmp/server.N.err
start_server() {
    local err="$tmp/server.${#servers[@]}.err" i
    "$bin" serve --host 127.0.0.1 --port 0 "$@" 2>"$err" &
    pid=$!
    servers+=("$pid")
    port=
    for i in $(seq 200); do
        port=$(grep -o 'http://127.0.0.1:[0-9]*' "$err" 2>/dev/null | head -1 | cut -d: -f3)
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    url=http://127.0.0.1:$port
    server_err=$err
    [ -n "$port" ] || { echo "FAIL: server did not start: $(cat "$err")" >&2; exit 1; }
}

# stop_server [SIGNAL]: stops $pid (SIGTERM by default); fails the check unless it exits 0 in 10 s
stop_server() {
    local sig=${1:-TERM} i rc
    kill -"$sig" "$pid"
    for i in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then
        fail "server did not stop within 10 s of SIG$sig"
        kill -9 "$pid"
        return
    fi
    wait "$pid"
    rc=$?
    [ "$rc" = 0 ] && grep -q "SIG$sig: stopping" "$server_err" && ok ||
        fail "SIG$sig: exit status $rc, stderr '$(cat "$server_err")'"
}

# status_of METHOD PATH [BODY [CURL ARGS...]]: prints the HTTP status; the body goes to $tmp/body
status_of() {
    local method=$1 path=$2 body=${3-}
    shift 3 2>/dev/null || shift $#
    if [ -n "$body" ]; then
        curl -s -o "$tmp/body" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' \
            --data-binary "$body" "$@" "$url$path"
    else
        curl -s -o "$tmp/body" -w '%{http_code}' -X "$method" "$@" "$url$path"
    fi
}

# expect_status NAME WANT_STATUS PATTERN METHOD PATH [BODY [CURL ARGS...]]: the status is WANT
# and the body matches PATTERN (grep -E)
expect_status() {
    local name=$1 want=$2 pattern=$3 got
    shift 3
    got=$(status_of "$@")
    if [ "$got" = "$want" ] && grep -qE -- "$pattern" "$tmp/body"; then ok
    else fail "$name: status $got (want $want), body '$(head -c 300 "$tmp/body")' (want /$pattern/)"; fi
}

# json_get EXPR < JSON: prints the Python expression EXPR of the parsed JSON `j`
json_get() {
    python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}
