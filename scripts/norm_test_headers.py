"""Which library files a library's C++ tests include, and which of them differ between trees: the
check that lets one build of TE's tests/cpp run against each tree's libtransformer_engine.so.

    python scripts/norm_test_headers.py BASE_TREE OTHER_TREE... [--sources GLOB ...] [--json F]

--sources: the test sources, as globs relative to a tree (default: those of TE's test_operator
target, tests/cpp/operator/* and tests/cpp/test_common.*). Follows every `#include "..."` and `#include <...>` of the test sources (all of them, whatever
`#if` surrounds them: an over-approximation) through the include directories TE's tests/cpp
CMakeLists names, relative to each tree. Prints one line per tree with the differing files; exit 0
when no included file differs from BASE_TREE's in any OTHER_TREE, 1 when one does.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
# The include directories of TE's tests/cpp/CMakeLists.txt, relative to the tree's root.
SEARCH = ("tests/cpp", "transformer_engine/common/include", "transformer_engine/common",
          "transformer_engine")


def closure(tree: Path, sources: list[str]) -> set[str]:
    """Tree-relative paths of every file of `tree` the test sources reach through includes."""
    start = [p.resolve() for glob in sources for p in sorted(tree.glob(glob)) if p.is_file()]
    seen: set[Path] = set()
    todo = list(start)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in INCLUDE.findall(path.read_text(errors="replace")):
            for base in (path.parent, *(tree / d for d in SEARCH)):
                found = base / name
                if found.is_file():
                    todo.append(found.resolve())
                    break
    root = tree.resolve()
    return {str(p.relative_to(root)) for p in seen if p.is_relative_to(root)}


def differing(base: Path, other: Path, files: set[str]) -> list[str]:
    out = []
    for rel in sorted(files):
        a, b = base / rel, other / rel
        if not (a.is_file() and b.is_file()) or a.read_bytes() != b.read_bytes():
            out.append(rel)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("others", type=Path, nargs="+")
    ap.add_argument("--sources", nargs="+", default=["tests/cpp/operator/*", "tests/cpp/test_common.*"])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    result = {"base": args.base.name, "trees": {}}
    status = 0
    for other in args.others:
        if other.resolve() == args.base.resolve():
            continue
        # Both closures: a file the other tree's tests reach only there counts too.
        files = closure(args.base, args.sources) | closure(other, args.sources)
        diff = differing(args.base, other, files)
        lib = sorted(f for f in files if not f.startswith("tests/"))
        result["trees"][other.name] = {"library_files_included": lib, "differing": diff}
        print(f"{other.name}: {len(lib)} library files included by the tests, "
              f"{len(diff)} differ from {args.base.name}" + (": " + ", ".join(diff) if diff else ""))
        status = status or (1 if diff else 0)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
