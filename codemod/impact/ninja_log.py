"""`.ninja_log` v5/v6/v7 reader: lines -> cycles (one ninja run each) -> builds, with recompacted
history detected and reported instead of being split into nonsense builds.

Format and loader rules: docs/impact.md, "Inputs". Pure functions over file-like objects.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import add, gt, itemgetter, sub, truediv
from typing import IO, Iterable, NamedTuple

from ..errors import ParseError

_HEADER = re.compile(r"#\s*ninja log v(\d+)\s*$")
_HEX = re.compile(r"[0-9a-fA-F]+")
_LINENO, _START, _END, _MTIME, _OUTPUT, _HASH = (itemgetter(k) for k in range(6))  # LogLine fields
_HEX_CHARS = frozenset("0123456789abcdefABCDEF")

# NOTE: tolerance for comparing mtime-derived time origins: filesystem timestamps may be as coarse
# as 1-2 s, and ninja's origin is taken before the manifest is parsed.
ORIGIN_TOLERANCE_MS = 2000

# Outputs whose step joins many objects (link/archive); used to infer dependencies when no
# build.ninja is given.
LINK_SUFFIXES = (".so", ".a", ".dylib", ".dll", ".lib", ".exe", ".node", ".pyd")


class LogLine(NamedTuple):
    """One line of the log, as written by ninja: one output of one finished edge."""

    lineno: int
    start_ms: int
    end_ms: int
    mtime: int
    output: str
    cmdhash: str


class Step(NamedTuple):
    """One edge execution: the lines of one (cycle, start, end, hash) group, outputs kept in order.
    NOTE: a named tuple, so that a 100k-step log's steps are made by C-level maps."""

    start_ms: int
    end_ms: int
    cmdhash: str
    outputs: list[str]
    lineno: int  # first line of the group

    @property
    def name(self) -> str:
        return self.outputs[0]

    @property
    def elapsed_ms(self) -> int:
        return self.end_ms - self.start_ms

    @property
    def is_link(self) -> bool:
        return is_link_output(self.name)


@dataclass
class Cycle:
    """Lines of one ninja cycle (one time origin): end times never go backwards within it."""

    lines: list[LogLine]
    origin_ms: float | None = None  # absolute wall-clock origin estimated from mtimes, if usable

    @property
    def first_line(self) -> int:
        return self.lines[0].lineno

    @property
    def last_line(self) -> int:
        return self.lines[-1].lineno

    @property
    def wall_ms(self) -> int:
        return max(map(_END, self.lines))

    def steps(self) -> list[Step]:
        return group_steps(self.lines)


@dataclass
class Build:
    """One ninja invocation: one cycle, or several when the manifest was regenerated."""

    index: int
    cycles: list[Cycle]

    @property
    def first_line(self) -> int:
        return self.cycles[0].first_line

    @property
    def last_line(self) -> int:
        return self.cycles[-1].last_line


@dataclass
class NinjaLog:
    """A parsed log: version, every line, the builds found, and what could not be segmented."""

    path: str
    version: int
    lines: list[LogLine]
    builds: list[Build]
    history_lines: list[LogLine] = field(default_factory=list)  # recompacted, unsegmentable
    warnings: list[str] = field(default_factory=list)

    @property
    def recompacted(self) -> bool:
        return bool(self.history_lines)

    def build(self, index: int = -1) -> Build:
        if not self.builds:
            hint = "the log holds only recompacted history; capture a build after `ninja -t recompact`"
            raise ParseError("no build can be recovered from this log", where=self.path, hint=hint)
        try:
            return self.builds[index]
        except IndexError:
            raise ParseError(
                f"build {index} requested but the log holds {len(self.builds)} build(s)", where=self.path
            ) from None


def is_link_output(path: str) -> bool:
    base = path.rsplit("/", 1)[-1]
    return base.endswith(LINK_SUFFIXES) or ".so." in base


def parse_header(first: str, name: str) -> int:
    m = _HEADER.match(first.strip())
    if not m:
        raise ParseError(
            f"not a .ninja_log: first line is {first.strip()[:60]!r}, expected '# ninja log vN'",
            where=f"{name}:1",
            hint="pass the .ninja_log from the ninja build directory",
        )
    version = int(m.group(1))
    if version < 5:
        raise ParseError(
            f"ninja log v{version} is not supported (v4 stored commands, not hashes)",
            where=f"{name}:1",
            hint="rebuild with ninja >= 1.0 to get a v5+ log",
        )
    return version


def parse_line(text: str, lineno: int, name: str) -> LogLine | None:
    """One data line -> LogLine; None for lines ninja itself skips (fewer than 4 tabs, comments)."""
    if text.startswith("#") or text.count("\t") < 4:
        return None
    parts = text.split("\t")
    # NOTE: tab is the only separator; an output path may hold spaces but not tabs, so extra tabs
    # can only come from a malformed line.
    if len(parts) != 5:
        raise ParseError(f"expected 5 tab-separated fields, found {len(parts)}", where=f"{name}:{lineno}",
                         hint="the file is not a ninja log or was corrupted")
    start, end, mtime, output, cmdhash = parts
    try:
        start_ms, end_ms, mtime_v = int(start), int(end), int(mtime)
    except ValueError:
        raise ParseError(
            f"start/end/mtime must be integers, found {start!r} {end!r} {mtime!r}",
            where=f"{name}:{lineno}", hint="the file is not a ninja log or was corrupted",
        ) from None
    cmdhash = cmdhash.strip()
    if not _HEX.fullmatch(cmdhash):
        raise ParseError(f"command hash must be hex, found {cmdhash[:40]!r}", where=f"{name}:{lineno}")
    if end_ms < start_ms:
        raise ParseError(f"end {end_ms} ms is before start {start_ms} ms", where=f"{name}:{lineno}")
    return LogLine(lineno, start_ms, end_ms, mtime_v, output, cmdhash.lower())


def read_lines(stream: IO[str], name: str) -> tuple[int, list[LogLine], list[str]]:
    """Header version, data lines and skip warnings of a log stream."""
    first = stream.readline()
    version = parse_header(first, name)
    lines: list[LogLine] = []
    warnings: list[str] = []
    if version > 7:
        warnings.append(f"{name}:1: ninja log v{version} is newer than v7; read with the v7 layout")
    body = stream.read()
    fast = _read_well_formed(body)
    if fast is not None:
        return version, fast, warnings
    append = lines.append
    for lineno, raw in enumerate(io.StringIO(body, newline=""), start=2):
        text = raw.rstrip("\n").rstrip("\r")
        if not text:
            continue
        line = parse_line(text, lineno, name)
        if line is None:
            if not text.startswith("#"):
                warnings.append(f"{name}:{lineno}: fewer than 5 fields; skipped as ninja does")
            continue
        append(line)
    return version, lines, warnings


def _read_well_formed(body: str) -> list[LogLine] | None:
    """All lines of `body` when every one is a well-formed data line (the usual case), else None
    (the caller then reads line by line, for the diagnostics). NOTE: column-wise, with C-level
    splits and maps: a per-line Python loop costs ~3x more on a 100k-line log."""
    if "\r" in body:
        return None
    rows = body.split("\n")
    if rows and not rows[-1]:
        rows.pop()
    if not rows or set(map(str.count, rows, repeat("\t"))) != {4}:
        return None  # blank, comment or short lines, or extra tabs
    fields = "\t".join(rows).split("\t")
    hashes = fields[4::5]
    if min(map(len, hashes)) == 0 or not set("".join(hashes)) <= _HEX_CHARS:
        return None
    try:
        starts, ends, mtimes = list(map(int, fields[0::5])), list(map(int, fields[1::5])), map(int, fields[2::5])
        if any(map(int.__lt__, ends, starts)):
            return None
        return list(map(tuple.__new__, repeat(LogLine), zip(range(2, len(rows) + 2), starts, ends, mtimes,
                                                             fields[3::5], map(str.lower, hashes))))
    except ValueError:
        return None


def split_cycles(lines: list[LogLine], version: int = 7) -> list[Cycle]:
    """Split where a new ninja cycle begins: the end time goes backwards (each cycle restarts its
    clock), an output repeats (no cycle builds an output twice), or the mtime anchor puts the line
    after everything of the current cycle ended (a new build whose first end did not go backwards).
    """
    if _one_cycle(lines, version):
        return [Cycle(list(lines))]
    cycles: list[Cycle] = []
    current: list[LogLine] = []
    seen: set[str] = set()
    prev_end = -1
    cur_origin: float | None = None
    v6 = version >= 6
    for ln in lines:
        # line_origin, inlined: this loop runs once per line
        origin = (ln.mtime / 1e6 - (ln.start_ms if v6 else ln.end_ms)) if ln.mtime > 0 else None
        if current and (
            ln.end_ms < prev_end
            or ln.output in seen
            or (origin is not None and cur_origin is not None
                and origin > cur_origin + prev_end + ORIGIN_TOLERANCE_MS)
        ):
            cycles.append(Cycle(current))
            current, seen, cur_origin = [], set(), None
        current.append(ln)
        seen.add(ln.output)
        prev_end = ln.end_ms
        if cur_origin is None:
            cur_origin = origin
    if current:
        cycles.append(Cycle(current))
    return cycles


def _one_cycle(lines: list[LogLine], version: int) -> bool:
    """True when split_cycles would find no boundary (the usual case), checked with C-level maps:
    end times never go backwards, outputs are unique, every mtime is set and none jumps."""
    if len(lines) < 2:
        return False
    ends = list(map(_END, lines))
    if any(map(gt, ends[:-1], ends[1:])) or len(set(map(_OUTPUT, lines))) != len(lines):
        return False
    mtimes = list(map(_MTIME, lines))
    if min(mtimes) <= 0:
        return False
    anchors = map(_START, lines) if version >= 6 else iter(ends)
    origins = list(map(sub, map(truediv, mtimes, repeat(1e6)), anchors))
    # same float expression as split_cycles: origin > cur_origin + prev_end + ORIGIN_TOLERANCE_MS
    limits = map(add, map(add, repeat(origins[0]), ends[:-1]), repeat(ORIGIN_TOLERANCE_MS))
    return not any(map(gt, origins[1:], limits))


def line_origin(ln: LogLine, version: int) -> float | None:
    """Absolute origin of the line's cycle from its mtime (ns): about the end for v5, the start for v6+."""
    if ln.mtime <= 0:
        return None
    anchor = ln.start_ms if version >= 6 else ln.end_ms
    return ln.mtime / 1e6 - anchor


def _median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def find_history(cycles: list[Cycle], version: int) -> tuple[int, list[str]]:
    """Number of leading cycles that are recompacted (hash-ordered) history, and why.

    A genuine appended cycle has one time origin (every line's mtime agrees with its start or end)
    and starts after everything logged before it ended. Recompaction rewrites the whole file, so
    what fails these checks is always a prefix; everything up to the last failing cycle is history.
    """
    reasons: list[str] = []
    last_bad = -1
    horizon = float("-inf")  # latest absolute end seen so far
    for i, cyc in enumerate(cycles):
        # NOTE: C-level maps, the same float expressions as line_origin
        lines = cyc.lines
        mtimes = list(map(_MTIME, lines))
        anchors = map(_START if version >= 6 else _END, lines)
        if min(mtimes, default=0) <= 0:
            keep = list(map(int(0).__lt__, mtimes))
            mtimes, anchors = list(compress(mtimes, keep)), compress(anchors, keep)
        origins = list(map(sub, map(truediv, mtimes, repeat(1e6)), anchors))
        if not origins:
            continue
        origin = _median(origins)
        cyc.origin_ms = origin
        outliers = sum(map(gt, map(abs, map(sub, origins, repeat(origin))), repeat(ORIGIN_TOLERANCE_MS)))
        if outliers * 5 > len(origins):
            last_bad = i
            reasons.append(f"lines {cyc.first_line}-{cyc.last_line}: mtimes disagree with one time origin")
        elif origin < horizon - ORIGIN_TOLERANCE_MS:
            last_bad = i
            reasons.append(f"lines {cyc.first_line}-{cyc.last_line}: starts before earlier entries ended")
        horizon = max(horizon, origin + cyc.wall_ms)
    return last_bad + 1, reasons


def group_builds(cycles: list[Cycle]) -> list[Build]:
    """Cycles -> builds: a cycle that follows a manifest regeneration belongs to the same invocation."""
    builds: list[Build] = []
    for cyc in cycles:
        prev = builds[-1].cycles[-1] if builds else None
        if prev is not None and _regenerated(prev):
            builds[-1].cycles.append(cyc)
        else:
            builds.append(Build(len(builds), [cyc]))
    return builds


def _regenerated(cycle: Cycle) -> bool:
    last = cycle.lines[-1].output.rsplit("/", 1)[-1]
    return last.endswith(".ninja")


def group_steps(lines: Iterable[LogLine]) -> list[Step]:
    """Lines of one cycle -> steps: an edge with N outputs writes N lines with one (start, end, hash)."""
    lines = list(lines)
    # one output per edge (the usual case) when the hashes, else the (start, end, hash) keys, are unique
    if len(set(map(_HASH, lines))) == len(lines) or \
            len(set(zip(map(_START, lines), map(_END, lines), map(_HASH, lines)))) == len(lines):
        return list(map(tuple.__new__, repeat(Step), zip(map(_START, lines), map(_END, lines), map(_HASH, lines),
                                                         [[o] for o in map(_OUTPUT, lines)], map(_LINENO, lines))))
    steps: dict[tuple[int, int, str], Step] = {}
    for ln in lines:
        key = (ln.start_ms, ln.end_ms, ln.cmdhash)
        step = steps.get(key)
        if step is None:
            steps[key] = Step(ln.start_ms, ln.end_ms, ln.cmdhash, [ln.output], ln.lineno)
        else:
            step.outputs.append(ln.output)
    return list(steps.values())


def parse(stream: IO[str], name: str = "<ninja_log>") -> NinjaLog:
    """Parse a whole log stream: lines, cycles, recompacted prefix, builds."""
    version, lines, warnings = read_lines(stream, name)
    cycles = split_cycles(lines, version)
    n_history, reasons = find_history(cycles, version)
    history = [ln for cyc in cycles[:n_history] for ln in cyc.lines]
    if not any(ln.mtime > 0 for ln in lines) and len(cycles) > 1:
        warnings.append(f"{name}: the mtime column is empty; a recompacted region cannot be told from builds")
    if history:
        warnings.append(
            f"{name}:{history[0].lineno}-{history[-1].lineno}: recompacted (hash-ordered) history, "
            f"{len(history)} lines: no build recovered from it ({'; '.join(reasons[:3])})"
        )
    builds = group_builds(cycles[n_history:])
    return NinjaLog(name, version, lines, builds, history, warnings)


def parse_path(path: str, display: str | None = None) -> NinjaLog:
    name = display or path
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            return parse(fh, name)
    except OSError as exc:
        raise ParseError(f"cannot read ninja log: {exc.strerror}", where=name) from None
