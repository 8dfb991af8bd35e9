# Helpers shared by the CLI tests, sourced by each tests/cli_*.sh after it has read its arguments:
#   . "$(dirname "$0")/lib/cli.sh"
# It gives $tmp (a fresh folder under $TMPDIR, default /tmp, removed on exit), the counters
# $passed and $failed kept by ok and fail, expect_error for the CLI's error convention, and
# require_node_llama for the llama.cpp interop tests. Each script prints its own last line from the counters and exits 0 only when $failed is 0.

tmp=$(mktemp -d -t "edgelm-$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# sanitized: true when $bin is a sanitizer build's (the CMakeCache.txt beside it), where a test
# keeps its memory checks and may leave figures to the release run, or shrink its inputs.
sanitized=false
grep -q '^EDGELM_SANITIZE:BOOL=ON' "$(dirname "${bin:-.}")/CMakeCache.txt" 2>/dev/null && sanitized=true

# python3, resolved once to the interpreter itself: a version manager's shim (pyenv's is a bash
# script) costs ~0.4 s a call, and the interop tests call python3 a few hundred times. Exported to
# the scripts a test runs.
if py_exe=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py_exe" ]; then
    python3() { "$py_exe" "$@"; }
    export py_exe
    export -f python3
fi

# ok: one check passed
ok() {
    passed=$((passed + 1))
}

# fail MESSAGE...: one check failed; MESSAGE goes to stderr as "FAIL: MESSAGE"
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*" >&2
}

# expect_error NAME PATTERN CMD...: CMD exits with status 1 and writes exactly one line to stderr,
# "edgelm: ..." matching the grep pattern PATTERN (the convention of every edgelm error). CMD's
# stdout is left in $tmp/expect.out for the callers that want it empty too.
expect_error() {
    local name=$1 pattern=$2 rc
    shift 2
    "$@" >"$tmp/expect.out" 2>"$tmp/expect.err"
    rc=$?
    if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/expect.err")" -eq 1 ] &&
        grep -q -- "^edgelm: .*$pattern" "$tmp/expect.err"; then
        ok
    else
        fail "$name: exit status $rc, stderr '$(cat "$tmp/expect.err")'; want 1 and one line '^edgelm: .*$pattern'"
    fi
}

# running_at PID FILE PATTERN: waits (up to a minute) until FILE has a line matching PATTERN while
# the background process PID still runs (to interrupt it there); returns 1, PID reaped, when it
# ended first
running_at() {
    local pid=$1 file=$2 pattern=$3
    for _ in $(seq 600); do
        grep -q -- "$pattern" "$file" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && return 0
    wait "$pid"
    return 1
}

# skip REASON: ends the test with ctest's skip code (SKIP_RETURN_CODE in CMakeLists.txt, the 77 of
# tests/check.h), so it is listed as skipped, never as passed; one line says why it did not run
skip() {
    echo "$(basename "$0" .sh): SKIPPED: $*"
    exit 77
}

# npm_install SCRIPT WHAT: sets npm_dir to the install scripts/SCRIPT makes (run from the
# repository root); skips the test when node is missing or npm cannot reach the registry, and
# fails it on any other install error (naming WHAT).
npm_install() {
    local rc
    command -v node >/dev/null || skip "node is not installed"
    npm_dir=$(bash "scripts/$1" 2>"$tmp/npm.err")
    rc=$?
    [ "$rc" -eq 2 ] && skip "$(cat "$tmp/npm.err")"
    [ "$rc" -eq 0 ] || { echo "FAIL: $2 install: $(cat "$tmp/npm.err")" >&2; exit 1; }
}

# require_node_llama: npm_dir of the shared install of llama.cpp's prebuilt CPU library and npm_pkg,
# its package folder (node-llama-cpp, scripts/node-llama.sh).
require_node_llama() { npm_install node-llama.sh node-llama-cpp && npm_pkg=$npm_dir/node_modules/node-llama-cpp; }

# require_npm_clients: npm_dir of the server tests' Node packages (openai, ajv;
# scripts/npm-clients.sh).
require_npm_clients() { npm_install npm-clients.sh npm; }

# greedy_ref MODEL.gguf N_PREDICT PROMPT...: llama.cpp's greedy continuations of the prompts
# (tests/interop/greedy.mjs under node-llama-cpp, GREEDY_TOP and GREEDY_CTX passed on) on stdout.
# Kept in $npm_dir/greedy-cache under a hash of everything the output depends on: greedy.mjs,
# the package's version, the model's bytes, the arguments and variables, this CPU's flags (its
# library variant). The clang and ASan runs of make test find the release run's: the model bytes
# decide, so a file a compiler quantizes otherwise is run again. After require_node_llama.
greedy_ref() {
    local out
    out=$(greedy_file "$@") || return 1
    if [ ! -s "$out" ]; then
        mkdir -p "${out%/*}" && node tests/interop/greedy.mjs "$npm_pkg" "$@" >"$out.$$" &&
            mv "$out.$$" "$out" || { rm -f "$out.$$"; return 1; }
    fi
    cat "$out"
}

# greedy_file MODEL.gguf N_PREDICT PROMPT...: the cache file of greedy_ref's output.
greedy_file() {
    local key
    key=$({ sha256sum tests/interop/greedy.mjs "$npm_pkg/package.json" "$1" | cut -d' ' -f1
        printf '%s\0' "${GREEDY_TOP-}" "${GREEDY_CTX-}" "${@:2}"
        grep -m1 '^flags' /proc/cpuinfo; } | sha256sum | cut -c1-40) || return 1
    echo "$npm_dir/greedy-cache/$key.json"
}

# greedy_queue MODEL.gguf N_PREDICT PROMPT... (GREEDY_TOP, GREEDY_CTX as greedy_ref's): queues the
# job for greedy_prefetch unless its output is cached.
greedy_queue() {
    local out
    out=$(greedy_file "$@") || return 1
    [ -s "$out" ] || python3 -c 'import json, os, sys
print(json.dumps({"out": sys.argv[1], "model": sys.argv[2], "n_predict": int(sys.argv[3]),
                  "prompts": sys.argv[4:], "top": os.environ.get("GREEDY_TOP"),
                  "ctx": os.environ.get("GREEDY_CTX")}))' "$out" "$@" >>"$tmp/greedy.jobs"
}

# greedy_prefetch: runs the queued jobs in one node process, which loads llama.cpp's library and
# backends once instead of once a model (~1.5 s of CPU each). A job that fails there is left to
# greedy_ref, which runs it alone and reports its error.
greedy_prefetch() {
    [ -s "$tmp/greedy.jobs" ] || return 0
    mkdir -p "$npm_dir/greedy-cache" &&
        node tests/interop/greedy.mjs "$npm_pkg" --jobs "$tmp/greedy.jobs" >/dev/null 2>&1
    rm -f "$tmp/greedy.jobs"
}
    fi
    cat "$dir/$key.json"
}
