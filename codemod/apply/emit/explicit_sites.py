"""Explicit instantiations of a migrated kernel (`template __global__ void k<float, 4>(float *, int);`,
or a library macro expanding to them, as bitsandbytes' `MAKE_kQuantizeBlockwise(...)` lines): they
compile the kernel statically whoever launches it, so each moves behind the rule's legacy option,
consecutive ones under one `#if`. The NVRTC build keeps their variants as the manifest's domain."""

from __future__ import annotations

from pathlib import Path

from ..base.changeset import ChangeSet, Edit

API = "explicit_instantiation"


def _line_starts(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]


def _statement_end(data: bytes, at: int) -> int | None:
    """The end of the declaration starting at `at`: past its `;`, or past the `)` closing a macro
    invocation (`NAME(...)` with no `;` after); None when neither is found."""
    depth, i, opened = 0, at, False
    while i < len(data):
        c = data[i:i + 1]
        if c in b"([{":
            depth += 1
            opened = True
        elif c in b")]}":
            depth -= 1
            if depth == 0 and opened and c == b")" and not data[at:i].lstrip().startswith(b"template"):
                j = i + 1
                while j < len(data) and data[j:j + 1] in b" \t":
                    j += 1
                return j + 1 if data[j:j + 1] == b";" else i + 1
        elif c == b";" and depth == 0:
            return i + 1
        elif c == b"/" and data[i + 1:i + 2] == b"/":
            i = data.find(b"\n", i)
            if i < 0:
                return None
        i += 1
    return None


def guard(root: Path, plan, cs: ChangeSet) -> set[str]:
    """Guards the explicit instantiation sites of the plan's kernels; returns their ids."""
    legacy = plan.spec.legacy_option
    by_file: dict[str, list] = {}
    for kp in plan.kernels:
        for site in kp.sites:
            if site.api == API:
                by_file.setdefault(site.file, []).append(site)
    done: set[str] = set()
    for path, sites in sorted(by_file.items()):
        data = (root / path).read_bytes()
        starts = _line_starts(data)
        ranges: list[tuple[int, int, list[str]]] = []
        for site in sorted(sites, key=lambda s: (s.line, s.col)):
            if not 1 <= site.line <= len(starts):
                continue
            first = starts[site.line - 1]
            end = _statement_end(data, first + site.col - 1)
            if end is None:
                continue
            nl = data.find(b"\n", end)
            end = len(data) if nl < 0 else nl + 1
            if ranges and ranges[-1][1] >= first:                    # two on one line
                ranges[-1] = (ranges[-1][0], max(end, ranges[-1][1]), ranges[-1][2] + [site.id])
            elif ranges and not data[ranges[-1][1]:first].strip():     # only blank lines between
                ranges[-1] = (ranges[-1][0], end, ranges[-1][2] + [site.id])
            else:
                ranges.append((first, end, [site.id]))
        # NOTE: an explicit instantiation names the kernel itself, not a handle: the other
        # rewrites' edits inside it (the stub object for `k<...>`) are dropped.
        cs.edits = [e for e in cs.edits if e.path != path or not any(s <= e.start and e.end <= t
                                                                       for s, t, _ in ranges)]
        for start, end, ids in ranges:
            why = "the kernels' explicit instantiations: static only in a legacy build"
            cs.edits.append(Edit(path, start, start, f"#if {legacy}\n", why))
            cs.edits.append(Edit(path, end, end, f"#endif  // {legacy}\n", why))
            done.update(ids)
    return done
