#!/usr/bin/env bash
# Include direction (scripts/check_layers.py): no folder of src/ includes a header of a layer above
# it, and the CLI includes only public headers plus its short documented list. The checker itself
# is shown to catch a model/ file reaching up into formats/ and a CLI file including a private one.
# Usage: bash tests/cli_layers.sh EDGELM_BINARY FIXTURES_DIR
set -u
. "$(dirname "$0")/lib/cli.sh"
root=$(cd "$(dirname "$0")/.." && pwd)

if out=$(python3 "$root/scripts/check_layers.py" "$root" 2>&1); then ok; else fail "include direction: $out"; fi

# a copy with two violations must fail, naming both
mkdir -p "$tmp/tree"
cp -r "$root/src" "$root/include" "$root/tools" "$tmp/tree/"
printf '#include "formats/loaders.h"\n' >>"$tmp/tree/src/model/model.c"
printf '#include "model/arch.h"\n' >>"$tmp/tree/tools/edgelm/main.c"
if out=$(python3 "$root/scripts/check_layers.py" "$tmp/tree" 2>&1); then
    fail "checker accepted an upward include"
else
    echo "$out" | grep -q 'src/model/model.c: includes "formats/loaders.h" from a layer above it' &&
        echo "$out" | grep -q 'tools/edgelm/main.c: the CLI includes internal "model/arch.h"' && ok ||
        fail "checker output: $out"
fi

[ "$failed" -eq 0 ] && echo "cli_layers: all passed"
exit $((failed > 0))
