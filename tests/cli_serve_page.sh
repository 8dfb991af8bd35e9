#!/usr/bin/env bash
# The chat page of `edgelm serve` in headless Chromium (Debian's chromium, installed with apt-get
# here when missing and root), driven by tests/lib/serve_page.cjs: the page's Markdown renderer on
# a fixed text (code block, lists, inline code, bold, a link; a <script>, an <img onerror> and a
# javascript: link stay text); load /, send a message, see the reply stream in, rendered, with its
# first-token and tok/s line, no request leaving the server; Stop cuts a long reply short and
# frees the server's slot; with a tools array (Qwen3's template, tool_choice "required") the reply
# shows get_weather's call as a card, and the result typed into it goes back as the assistant's
# tool_calls and a tool message before a reply; with --docs (an index whose best chunk for the
# question holds HTML and a script) the reply's documents panel lists the server's citations,
# each opening its chunk's text, the markup shown as text. The screenshot of the first reply is saved as
# test-output/serve_page.png beside the edgelm binary. Skipped when chromium or node is missing
# and cannot be installed. usage: cli_serve_page.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
command -v node >/dev/null || skip "node is not installed"
node --experimental-websocket -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' 2>/dev/null ||
    skip "node has no WebSocket (needs Node >= 20.10)"
if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; }
    fi
    command -v chromium >/dev/null || skip "chromium is not installed and could not be installed"
fi

start_server -m "$model" -t 1 -c 4096 -n 4000 --ignore-eos
stop_pid=$pid stop_url=$url stop_err=$server_err
start_server -m "$model" -t 1 -c 2048 -n 200 --template qwen3
tools_pid=$pid tools_url=$url tools_err=$server_err
mkdir -p "$tmp/docs"
printf '# Gadgets\n\n## Manual\n\nThe zorblat gadget manual says: <img src=x onerror="window.pwned = 3"> and <script>window.pwned = 4</script> stay text.\n' >"$tmp/docs/markup.md"
sed -n 1,12p "$fx/stories260K/text/valid.txt" >"$tmp/docs/stories.txt"
"$bin" index -o "$tmp/docs.db" "$tmp/docs" --chunk-tokens 30 --overlap 0 >/dev/null 2>&1 || { echo "FAIL: index" >&2; exit 1; }
start_server -m "$model" -t 1 -c 2048 -n 32 --docs "$tmp/docs.db"
docs_pid=$pid docs_url=$url docs_err=$server_err
start_server -m "$model" -t 1 -c 256
profile=$tmp/chromium-profile
mkdir -p "$profile"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --remote-debugging-address=127.0.0.1 --remote-debugging-port=0 \
    about:blank 2>"$tmp/chromium.err" &
chrome=$!
servers+=("$chrome")
ws=
for i in $(seq 300); do
    ws=$(grep -o 'ws://127.0.0.1:[0-9]*/devtools/browser/[a-z0-9-]*' "$tmp/chromium.err" | head -1)
    [ -n "$ws" ] && break
    sleep 0.05
done
[ -n "$ws" ] || { echo "FAIL: chromium did not start: $(tail -5 "$tmp/chromium.err")" >&2; exit 1; }
out=$(dirname "$bin")/test-output
mkdir -p "$out"
rm -f "$out/serve_page.png"
node --experimental-websocket --no-warnings "$(dirname "$0")/lib/serve_page.cjs" "$ws" "$url/" \
    "$out/serve_page.png" "$stop_url/" "$tools_url/" "$docs_url/" && ok || fail "page checks"
[ -s "$out/serve_page.png" ] && ok || fail "no screenshot"
kill "$chrome" 2>/dev/null
wait "$chrome" 2>/dev/null
stop_server TERM
pid=$stop_pid server_err=$stop_err
stop_server TERM
pid=$tools_pid server_err=$tools_err
stop_server TERM
pid=$docs_pid server_err=$docs_err
stop_server TERM
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
