#!/usr/bin/env python3
"""docs/ARCHITECTURE.md against the tree: what the document names must exist, and what the tree
has must be named, so that the description cannot drift silently.

  - every file path it quotes in backticks (`model/forward.c`, `scripts/check_layers.py`,
    `include/edgelm/model.h`) exists, read relative to src/, the repository root, include/edgelm/,
    tools/edgelm/ or tests/ (or as the end of a path under src/, tools/, include/: `x86/avx2.c`);
  - every folder of src/ (and each of their subfolders) is named, as `src/X` or `X/`;
  - every layer of scripts/check_layers.py's LAYERS table appears in the "Layers" diagram;
  - every `elm_*` or `edgelm_*` identifier it quotes (or prefix, quoted as `elm_report_*`)
    appears in src/, include/ or tools/.

Prints one line per problem and exits 1 when there is any. Usage: check_architecture.py [ROOT]"""
import os
import re
import sys

from checks import report

PATH = re.compile(r"`([A-Za-z0-9_./-]+\.(?:c|h|py|sh|cmake|html|in))`")
IDENT = re.compile(r"`((?:elm|edgelm)_[A-Za-z0-9_]+)(\*?)")
SOURCE_DIRS = ("src", "tools", "include")


def source_files(root):
    for base in SOURCE_DIRS:
        for d, _, names in os.walk(os.path.join(root, base)):
            for n in names:
                if n.endswith((".c", ".h")):
                    yield os.path.join(d, n)


def path_exists(root, rel):
    for base in ("src", "", "include/edgelm", "tools/edgelm", "tests"):
        if os.path.isfile(os.path.join(root, base, rel)):
            return True
    # a name or a path within a folder the paragraph is about (`x86/avx2.c` under kernels/)
    return any(p.endswith(os.sep + rel) for p in source_files(root))


def layers_of(root):
    text = open(os.path.join(root, "scripts", "check_layers.py"), encoding="utf-8").read()
    table = re.search(r"LAYERS = \{(.*?)\}", text, re.S).group(1)
    return re.findall(r'"(\w+)"\s*:', table)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    doc_path = os.path.join(root, "docs", "ARCHITECTURE.md")
    doc = open(doc_path, encoding="utf-8").read()
    bad = []
    for rel in sorted(set(PATH.findall(doc))):
        if not path_exists(root, rel):
            bad.append(f"docs/ARCHITECTURE.md names `{rel}`, which does not exist")
    src = os.path.join(root, "src")
    for d, subdirs, _ in os.walk(src):
        for s in subdirs:
            rel = os.path.relpath(os.path.join(d, s), src)
            if f"src/{rel}" not in doc and f"{rel}/" not in doc and f"`{s}/" not in doc:
                bad.append(f"src/{rel}/ is not named in docs/ARCHITECTURE.md")
    diagram = doc.split("## Layers", 1)[-1].split("\n## ", 1)[0]
    for layer in layers_of(root):
        name = "tools/edgelm" if layer == "tools" else f"src/{layer}"
        if name not in diagram:
            bad.append(f"layer '{layer}' (scripts/check_layers.py) is not in the Layers diagram")
    code = "\n".join(open(p, encoding="utf-8", errors="replace").read() for p in source_files(root))
    for ident, star in sorted(set(IDENT.findall(doc))):
        # `elm_report_*` names a family of identifiers: the prefix must begin one
        if not re.search(r"\b" + re.escape(ident) + (r"\w" if star else r"\b"), code):
            bad.append(f"docs/ARCHITECTURE.md names `{ident}`, which is nowhere in src/, include/, tools/")
    return report(bad, f"docs/ARCHITECTURE.md: {len(bad)} claims that do not match the tree")


if __name__ == "__main__":
    sys.exit(main())
