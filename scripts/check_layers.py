#!/usr/bin/env python3
"""Include-direction check: every #include "..." in src/, include/edgelm/ and tools/ must point to
the same layer or one below it (docs/ARCHITECTURE.md, "Layers"):

    core, codecs <- kernels, tokenizer <- model <- formats <- quant, eval, generate, bench
         <- shapes, export, rag <- api, server <- CLI (tools/)

Public headers (include/edgelm/X.h) belong to the layer that defines their types. The CLI may
include public headers and only the internal ones listed in CLI_INTERNAL. Prints one line per
violation and exits 1 when there is any; a folder or header missing from the tables is a violation
too, so a new module must be placed here first. Usage: check_layers.py [REPO_ROOT]"""
import os
import re
import sys

from checks import report

LAYERS = {
    "core": 0, "codecs": 0, "kernels": 1, "tokenizer": 1, "model": 2, "formats": 3,
    "quant": 4, "eval": 4, "generate": 4, "bench": 4,
    "shapes": 5, "export": 5, "rag": 5, "api": 6, "server": 6, "tools": 7,
}
PUBLIC = {
    "types.h": 0, "error.h": 0, "system.h": 0, "vocab.h": 1,
    "model.h": 2, "context.h": 2, "session.h": 2,
    "sampler.h": 4, "generate.h": 4, "chat.h": 4, "speculative.h": 4, "grammar.h": 4,
    "perplexity.h": 4, "eval.h": 4, "embed.h": 4, "quant.h": 4, "imatrix.h": 4,
    "shapes.h": 5, "export.h": 5, "rag.h": 5, "edgelm.h": 6, "server.h": 6,
}
# Internal headers the CLI needs and why: atomic outputs and whole-file reads; the clock.
CLI_INTERNAL = {"core/fileio.h", "core/clock.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def header_layer(inc, here_dir):
    """Layer of an included header, or None when unknown; local CLI headers are the CLI's."""
    if inc.startswith("edgelm/"):
        return PUBLIC.get(inc[len("edgelm/"):])
    top = inc.split("/")[0]
    if "/" not in inc:  # same folder: tools/edgelm/cli.h, or a sibling in src/<layer>/
        return LAYERS.get(here_dir)
    return LAYERS.get(top)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = []
    files = []
    for base in ("src", "include/edgelm", "tools"):
        for d, _, names in os.walk(os.path.join(root, base)):
            files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        parts = rel.split(os.sep)
        if parts[0] == "src":
            layer_name = parts[1]
        elif parts[0] == "include":
            layer_name = None
        else:
            layer_name = "tools"
        if parts[0] == "include":
            mine = PUBLIC.get(parts[-1])
            if mine is None:
                bad.append(f"{rel}: public header not placed in a layer (scripts/check_layers.py PUBLIC)")
                continue
        else:
            mine = LAYERS.get(layer_name)
            if mine is None:
                bad.append(f"{rel}: folder '{layer_name}' not placed in a layer (scripts/check_layers.py LAYERS)")
                continue
        text = open(path, encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            theirs = header_layer(inc, layer_name)
            if theirs is None:
                bad.append(f"{rel}: includes \"{inc}\", which is in no layer")
            elif layer_name == "tools" and "/" in inc and not inc.startswith("edgelm/") and inc not in CLI_INTERNAL:
                bad.append(f"{rel}: the CLI includes internal \"{inc}\" (allowed: {', '.join(sorted(CLI_INTERNAL))})")
            elif theirs > mine:
                bad.append(f"{rel}: includes \"{inc}\" from a layer above it")
    return report(bad, f"{len(files)} files checked, {len(bad)} include-direction violations")


if __name__ == "__main__":
    sys.exit(main())
