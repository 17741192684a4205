"""Sources listed first in a library's source list (the build-order edit `apply --build-log`
writes), as the step names a replay starts with (`codemod impact --first`)."""

from __future__ import annotations

import re

from ..errors import UsageError

_EDIT_LINE = re.compile(r"(?m)^\+    (\S+\.(?:cu|cpp))  # ")


def read_order(text: str) -> list[str]:
    """The sources of a build-order edit's `<target>_longest_sources` list when `text` is its diff
    (added lines `+    path.cu  # ...`); else one source per line (blank lines and `#` comments
    skipped)."""
    listed = _EDIT_LINE.findall(text)
    if listed:
        return listed
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def first_steps(names: list[str], sources: list[str]) -> list[str]:
    """The step names that compile `sources`, in their order: the step whose output ends in
    `/<source>.o` (a CMake object) or is `<source>.o`. A source no step compiles is an error."""
    out, missing = [], []
    for src in sources:
        hit = [n for n in names if n == src + ".o" or n.endswith("/" + src + ".o")]
        (out if hit else missing).append(hit[0] if hit else src)
    if missing:
        raise UsageError(f"--first: no step compiles {', '.join(missing)}",
                         hint=f"sources are paths under the library, e.g. {names[0] if names else '(none)'!r}")
    return out
