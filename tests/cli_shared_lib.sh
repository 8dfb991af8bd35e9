#!/usr/bin/env bash
# libedgelm.so beside the binary (cmake/shared_lib.cmake): its soname carries the project's
# version, it exports exactly functions the public headers declare (nm -D: each defined dynamic
# symbol has a declaration line in include/edgelm/*.h, and none is anything else), every function
# of the app API (edgelm.h) is among them, and it leaves no edgelm symbol undefined.
# Usage: bash tests/cli_shared_lib.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
lib=$(dirname "$bin")/libedgelm.so
. "$(dirname "$0")/lib/cli.sh"
command -v nm >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1 || skip "nm/readelf missing (binutils)"
[ -f "$lib" ] || { echo "FAIL: $lib: not built" >&2; exit 1; }

# A declaration as cmake/shared_lib.cmake reads one: a line opening with its return type.
decl='^[A-Za-z_][A-Za-z0-9_ ]*[ *]'
version=$(sed -n 's/^project(edgelm VERSION \([0-9]*\)\.\([0-9]*\)\..*/\1.\2/p' CMakeLists.txt)
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libedgelm.so.$version" ] && ok || fail "soname '$soname', want libedgelm.so.$version"

exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWDdBbRr]$/ {print $3}')
[ "$(wc -l <<<"$exported")" -gt 100 ] && ok || fail "only $(wc -l <<<"$exported") symbols exported"
for sym in $exported; do
  grep -hE "$decl$sym\(" include/edgelm/*.h | grep -qvE '^(static|typedef)' && ok ||
    fail "$sym is exported but no public header declares it"
done
for fn in $(grep -oE "$decl"'edgelm_[a-z0-9_]+\(' include/edgelm/edgelm.h | grep -oE 'edgelm_[a-z0-9_]+\($' | tr -d '('); do
  grep -qx "$fn" <<<"$exported" && ok || fail "$fn (edgelm.h) is not exported"
done
undef=$(nm -D --undefined-only "$lib" | awk '$2 ~ /^(elm|edgelm)_/ {print $2}')
[ -z "$undef" ] && ok || fail "undefined edgelm symbols: $undef"

[ "$failed" -eq 0 ] && echo "cli_shared_lib: all $passed passed"
exit $((failed > 0))
