#!/usr/bin/env bash
# Include direction (scripts/check_layers.py): no folder of src/ includes a header of a layer above
# it, and the CLI includes only public headers plus its short documented list. The checker itself
# is shown to catch a model/ file reaching up into formats/ and a CLI file including a private one.
# docs/ARCHITECTURE.md against the tree (scripts/check_architecture.py): every file and elm_*
# name it quotes exists, every folder of src/ and every layer is named; shown to catch a removed
# file, an unnamed folder and a made-up function.
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

if out=$(python3 "$root/scripts/check_architecture.py" "$root" 2>&1); then ok; else fail "ARCHITECTURE.md: $out"; fi

# a copy whose doc names a function that is not there and lost a file, with a folder it does not name
mkdir -p "$tmp/tree/docs" "$tmp/tree/scripts" "$tmp/tree/src/newlayer"
cp "$root/docs/ARCHITECTURE.md" "$tmp/tree/docs/"
cp "$root/scripts/check_layers.py" "$tmp/tree/scripts/"
printf '\nThe pass calls `elm_forward_imaginary`.\n' >>"$tmp/tree/docs/ARCHITECTURE.md"
rm "$tmp/tree/src/model/forward.c"
if out=$(python3 "$root/scripts/check_architecture.py" "$tmp/tree" 2>&1); then
    fail "the architecture check accepted a stale document"
else
    echo "$out" | grep -q 'names `elm_forward_imaginary`, which is nowhere' &&
        echo "$out" | grep -q 'names `model/forward.c`, which does not exist' &&
        echo "$out" | grep -q 'src/newlayer/ is not named' && ok ||
        fail "architecture check output: $out"
fi

[ "$failed" -eq 0 ] && echo "cli_layers: all passed"
exit $((failed > 0))
