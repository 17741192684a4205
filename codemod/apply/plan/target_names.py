"""Names the generated code takes from the target, so that nothing in the migrated tree names the
tool: include guards in the convention of the target's own headers, macros under the prefix of
its error macro, and the marker comment that names a rule's migration where it edits a file."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_HEADER = (".h", ".hpp", ".hh", ".cuh")
_GUARD = re.compile(rb"^[ \t]*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\r?\n[ \t]*#[ \t]*define[ \t]+\1\b", re.M)
_SCANNED = 400          # headers read at most (sorted paths): enough to see a convention
_SKIPPED = {".git", "build", "__pycache__", "3rdparty", "third_party", "external"}


def path_token(path: str) -> str:
    """A path as include guards spell it: `util/rtc.h` -> `UTIL_RTC_H`."""
    return "".join(c.upper() if c.isalnum() else "_" for c in path)


@dataclass(frozen=True)
class GuardConvention:
    """`prefix + path_token(path) + suffix`, the path relative to the library root."""
    prefix: str
    suffix: str

    def guard(self, path: str) -> str:
        return self.prefix + path_token(path) + self.suffix


def guard_convention(root: Path, library: str) -> GuardConvention:
    """The include-guard convention most of the target's headers follow (TE:
    `TRANSFORMER_ENGINE_COMMON_` + the path under transformer_engine/common + `_`); without one,
    `<LIBRARY>_<PATH>_` from the rule's `library` key."""
    seen: Counter[tuple[str, str]] = Counter()
    scanned = 0
    top = Path(root)
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(_HEADER):
                continue
            path = Path(folder) / name
            scanned += 1
            if scanned > _SCANNED:
                break
            try:
                with open(path, "rb") as f:
                    head = f.read(8192)
            except OSError:
                continue
            m = _GUARD.search(head)
            if not m:
                continue
            guard, token = m.group(1).decode(), path_token(path.relative_to(top).as_posix())
            at = guard.rfind(token)
            suffix = guard[at + len(token):] if at >= 0 else None
            if suffix is not None and suffix in ("", "_", "__") and (at == 0 or guard[at - 1] == "_"):
                seen[(guard[:at], suffix)] += 1
        if scanned > _SCANNED:
            break
    if seen:
        (prefix, suffix), _ = min(seen.items(), key=lambda kv: (-kv[1], kv[0]))
        return GuardConvention(prefix, suffix)
    lib = path_token(library).strip("_") if library else ""
    return GuardConvention(lib + "_" if lib else "", "_")


def macro_prefix(spec) -> str:
    """The prefix of the target's macros, taken from its error macro (`NVTE_ERROR` -> `NVTE`), else
    the rule namespace's first name in capitals."""
    m = re.fullmatch(r"([A-Z][A-Z0-9]*)_[A-Z0-9_]+", spec.layer.get("error_macro", ""))
    if m:
        return m.group(1)
    return path_token(spec.namespace.lstrip(":").split("::")[0])
