#!/usr/bin/env bash
# No test uses a fixed path under /tmp (docs/testing.md): C tests take their folder from
# check_tmp_dir / tmp_dir_new, scripts from mktemp, both under $TMPDIR. A path under /tmp written
# out in the sources of tests/ (C, headers, shell, Python, JavaScript) fails, naming the file and
# line; the check is shown to catch one in a copy. (This file spells the pattern in two pieces.)
# Usage: bash tests/cli_tmp_paths.sh EDGELM_BINARY FIXTURES_DIR
set -u
. "$(dirname "$0")/lib/cli.sh"
root=$(cd "$(dirname "$0")/.." && pwd)

# fixed_paths DIR: the lines of DIR's test sources that name a path under /tmp
fixed_paths() {
    grep -rn --include='*.c' --include='*.h' --include='*.sh' --include='*.py' --include='*.cjs' \
        --include='*.js' -e "/tmp""/" "$1"
}

if out=$(fixed_paths "$root/tests"); then fail "fixed /tmp paths: $out"; else ok; fi

mkdir -p "$tmp/tests"
printf 'int main(void) {\n    char dir[] = "/%s/edgelm-test-XXXXXX";\n}\n' tmp >"$tmp/tests/test_x.c"
out=$(fixed_paths "$tmp/tests")
echo "$out" | grep -q 'test_x.c:2:' && ok || fail "the check missed a fixed path: '$out'"

[ "$failed" -eq 0 ] && echo "cli_tmp_paths: all passed"
exit $((failed > 0))
