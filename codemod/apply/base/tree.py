"""The library tree as every stage reads it: a file with the headers extracted from translation units
laid over it, an include resolved as the compiler resolves it, the units reaching a header, and
the symbol a file's string header defines."""

from __future__ import annotations

import posixpath
from pathlib import Path

HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".hh", ".inl")
_TU_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")


def symbol_for(path: str) -> str:
    """The string-header symbol for a file: `string_code_` + path with separators as `_`."""
    return "string_code_" + "".join(c if c.isalnum() else "_" for c in path)


def read_overlay(root: Path, path: str, extractions: dict) -> bytes:
    """A library file as the migration leaves it for NVRTC: an extracted header's new text
    (`extractions`: unit -> extract.Extraction), else the file in the tree."""
    for ex in extractions.values():
        if ex.header == path:
            return ex.text.encode()
    return (root / path).read_bytes()


def resolve_include(root: Path, path: str, inc, include_dirs: list[str]) -> str | None:
    """Repo path of an include as the compiler finds it: the includer's folder (quoted includes),
    then the rule's include dirs; None when it is outside the library (a toolkit header)."""
    bases = ([posixpath.dirname(path)] if not inc.system else []) + list(include_dirs)
    top = root.resolve()
    for base in bases:
        target = posixpath.normpath(posixpath.join(base, inc.name))
        full = (root / target).resolve()
        if full.is_file() and full.is_relative_to(top):
            return full.relative_to(top).as_posix()
    return None


def host_include(root: Path, path: str, inc, spec, stand_in=lambda name: False) -> bool:
    """Whether an include of a shipped header stays out of NVRTC's sight: the rule's
    `kernel_strings.host_includes` names it (as spelled, or by the library path it resolves to),
    or the library already guards it with `__CUDACC_RTC__`. `spec`: the rule (plan.spec.MigrateSpec);
    `stand_in(name)`: whether NVRTC gets a stand-in of a framework header under that name
    (plan.framework_types.stand_in): such an include stays."""
    hidden = spec.kernel_strings.get("host_includes", [])
    if inc.rtc_guarded:
        return True
    if stand_in(inc.name):
        return False
    if inc.name in hidden:
        return True
    return bool(hidden) and resolve_include(root, path, inc, spec.include_dirs) in hidden


def units_reaching(root: Path, headers: set[str], include_dirs: list[str], skip: str = "") -> list[str]:
    """Translation units under root (repo paths, sorted) that include one of `headers` (repo
    paths), directly or through other library headers (the frontend's regex include graph:
    quoted includes next to the including file first, then the rule's include dirs). `skip`: a
    folder left out (the generated output)."""
    from ...frontend.parse import IncludeGraph

    top = root.resolve()
    graph = IncludeGraph(top)
    dirs = tuple((top / d).resolve() for d in include_dirs)
    targets = {(top / h).resolve() for h in headers}
    skip_dir = (top / skip).resolve() if skip else None
    out = []
    for path in graph.directives:
        if path.suffix not in _TU_SUFFIXES or path in targets or (skip_dir and path.is_relative_to(skip_dir)):
            continue
        if graph.closure(path, dirs)[0] & targets:
            out.append(path.relative_to(top).as_posix())
    return sorted(out)
