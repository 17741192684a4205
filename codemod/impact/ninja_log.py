"""`.ninja_log` v5/v6/v7 reader: lines -> cycles (one ninja run each) -> builds, with recompacted
history detected and reported instead of being split into nonsense builds.

Format and loader rules: docs/impact.md, "Inputs". Pure functions over file-like objects.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from itertools import repeat
from typing import IO, Iterable, NamedTuple

import numpy as np

from ..errors import ParseError
from .logfile import parse_log_path

_HEADER = re.compile(r"#\s*ninja log v(\d+)\s*$")
_HEX = re.compile(r"[0-9a-fA-F]+")
_INT64 = range(-2**63, 2**63)  # what the columns hold
# NOTE: ninja writes start/end as milliseconds since its own start: never negative, and 2^40 ms is
# 35 years. Times outside are refused (not clamped): they come from a corrupted or forged log and
# would overflow the replay's sums.
_TIMES = range(0, 2**40)

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
    """One edge execution: the lines of one (cycle, start, end, hash) group, outputs kept in order."""

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


@dataclass(eq=False)
class LineTable:
    """Log lines column-wise (int64 arrays and lists of str): a 100k-line log makes no per-line
    object. `rows()` gives the LogLine of each line."""

    lineno: np.ndarray
    start_ms: np.ndarray
    end_ms: np.ndarray
    mtime: np.ndarray
    output: list[str]
    cmdhash: list[str]

    @classmethod
    def of(cls, lines: list[LogLine]) -> LineTable:
        cols = list(zip(*lines)) or [()] * 6
        return cls(*(np.array(c, dtype=np.int64) for c in cols[:4]), list(cols[4]), list(cols[5]))

    def __len__(self) -> int:
        return len(self.output)

    def __getitem__(self, rows: slice) -> LineTable:
        return LineTable(self.lineno[rows], self.start_ms[rows], self.end_ms[rows], self.mtime[rows],
                         self.output[rows], self.cmdhash[rows])

    def rows(self) -> list[LogLine]:
        return list(map(LogLine._make, zip(self.lineno.tolist(), self.start_ms.tolist(), self.end_ms.tolist(),
                                           self.mtime.tolist(), self.output, self.cmdhash)))


@dataclass(eq=False)
class StepTable:
    """Steps column-wise, as LineTable: `name` is each step's first output, `more` holds every
    output of the steps that have several. Indexing and iteration give Step views."""

    start_ms: np.ndarray
    end_ms: np.ndarray
    lineno: np.ndarray  # first line of the group
    cmdhash: list[str]
    name: list[str]
    more: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, steps: Iterable[Step]) -> StepTable:
        steps = list(steps)
        more = {k: list(s.outputs) for k, s in enumerate(steps) if len(s.outputs) > 1}
        return cls(*(np.array([getattr(s, a) for s in steps], dtype=np.int64) for a in ("start_ms", "end_ms", "lineno")),
                   [s.cmdhash for s in steps], [s.name for s in steps], more)

    @classmethod
    def concat(cls, tables: list[StepTable], offsets: list[int]) -> StepTable:
        """The tables one after another, each one's times shifted by its offset (ms)."""
        if len(tables) == 1 and not offsets[0]:
            return tables[0]
        more, base = {}, 0
        for t in tables:
            more.update({base + k: v for k, v in t.more.items()})
            base += len(t)
        return cls(np.concatenate([t.start_ms + o for t, o in zip(tables, offsets)]),
                   np.concatenate([t.end_ms + o for t, o in zip(tables, offsets)]),
                   np.concatenate([t.lineno for t in tables]),
                   [h for t in tables for h in t.cmdhash], [n for t in tables for n in t.name], more)

    def __len__(self) -> int:
        return len(self.name)

    def outputs(self, k: int) -> list[str]:
        return list(self.more[k]) if k in self.more else [self.name[k]]

    def __getitem__(self, k: int) -> Step:
        k = range(len(self))[k]  # a negative index counts from the end; IndexError past it
        return Step(int(self.start_ms[k]), int(self.end_ms[k]), self.cmdhash[k], self.outputs(k), int(self.lineno[k]))

    def __iter__(self):
        return map(self.__getitem__, range(len(self)))


@dataclass
class Cycle:
    """Lines of one ninja cycle (one time origin): end times never go backwards within it."""

    table: LineTable
    origin_ms: float | None = None  # absolute wall-clock origin estimated from mtimes, if usable

    @property
    def lines(self) -> list[LogLine]:
        return self.table.rows()

    @property
    def first_line(self) -> int:
        return int(self.table.lineno[0])

    @property
    def last_line(self) -> int:
        return int(self.table.lineno[-1])

    @property
    def wall_ms(self) -> int:
        return int(self.table.end_ms.max())

    def steps(self) -> StepTable:
        return group_steps(self.table)


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
    table: LineTable
    builds: list[Build]
    n_history: int = 0  # leading lines that are recompacted, unsegmentable history
    warnings: list[str] = field(default_factory=list)

    @property
    def lines(self) -> list[LogLine]:
        return self.table.rows()

    @property
    def history_lines(self) -> list[LogLine]:
        return self.table[: self.n_history].rows()

    @property
    def recompacted(self) -> bool:
        return self.n_history > 0

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
    if start_ms not in _INT64 or end_ms not in _INT64 or mtime_v not in _INT64:
        raise ParseError(f"start/end/mtime must fit in 64 bits, found {start!r} {end!r} {mtime!r}",
                         where=f"{name}:{lineno}", hint="the file is not a ninja log or was corrupted")
    if start_ms not in _TIMES or end_ms not in _TIMES:
        raise ParseError(f"start/end must be milliseconds since the build started, 0 to 2^40, found {start!r} {end!r}",
                         where=f"{name}:{lineno}", hint="the file is not a ninja log or was corrupted")
    cmdhash = cmdhash.strip()
    if not _HEX.fullmatch(cmdhash):
        raise ParseError(f"command hash must be hex, found {cmdhash[:40]!r}", where=f"{name}:{lineno}")
    if end_ms < start_ms:
        raise ParseError(f"end {end_ms} ms is before start {start_ms} ms", where=f"{name}:{lineno}")
    return LogLine(lineno, start_ms, end_ms, mtime_v, output, cmdhash.lower())


def read_lines(stream: IO[str], name: str) -> tuple[int, LineTable, list[str]]:
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
    return version, LineTable.of(lines), warnings


def _read_well_formed(body: str) -> LineTable | None:
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
    if min(map(len, hashes)) == 0:
        return None
    rest = "".join(hashes).encode("utf-8", "surrogateescape").translate(None, b"0123456789abcdef")
    if rest:  # ninja writes lower case
        if rest.translate(None, b"ABCDEF"):
            return None
        hashes = list(map(str.lower, hashes))
    n = len(rows)
    try:
        start, end, mtime = (np.fromiter(map(int, fields[k::5]), np.int64, n) for k in range(3))
    except (ValueError, OverflowError):
        return None
    if np.any(end < start) or start.min() < _TIMES.start or end.max() >= _TIMES.stop:
        return None
    return LineTable(np.arange(2, n + 2, dtype=np.int64), start, end, mtime, fields[3::5], hashes)


def _origins(lines: LineTable, version: int) -> np.ndarray:
    """Absolute origin (ms) of each line's cycle from its mtime (ns): about the end for v5, the
    start for v6+. Meaningless where the mtime is not set (<= 0)."""
    return lines.mtime / 1e6 - (lines.start_ms if version >= 6 else lines.end_ms)


def split_cycles(lines: LineTable, version: int = 7) -> list[Cycle]:
    """Split where a new ninja cycle begins: the end time goes backwards (each cycle restarts its
    clock), an output repeats (no cycle builds an output twice), or the mtime anchor puts the line
    after everything of the current cycle ended (a new build whose first end did not go backwards).
    """
    if not len(lines):
        return []
    if _one_cycle(lines, version):
        return [Cycle(lines)]
    firsts = [0]  # first line of each cycle
    seen: set[str] = set()
    prev_end = -1
    cur_origin: float | None = None
    for k, (mtime, origin, end, output) in enumerate(zip(lines.mtime.tolist(), _origins(lines, version).tolist(),
                                                         lines.end_ms.tolist(), lines.output)):
        if mtime <= 0:
            origin = None
        if k > firsts[-1] and (
            end < prev_end
            or output in seen
            or (origin is not None and cur_origin is not None
                and origin > cur_origin + prev_end + ORIGIN_TOLERANCE_MS)
        ):
            firsts.append(k)
            seen, cur_origin = set(), None
        seen.add(output)
        prev_end = end
        if cur_origin is None:
            cur_origin = origin
    return [Cycle(lines[a:b]) for a, b in zip(firsts, firsts[1:] + [len(lines)])]


def _one_cycle(lines: LineTable, version: int) -> bool:
    """True when split_cycles would find no boundary (the usual case), checked column-wise:
    end times never go backwards, outputs are unique, every mtime is set and none jumps."""
    if len(lines) < 2:
        return False
    ends = lines.end_ms
    if np.any(ends[:-1] > ends[1:]) or len(set(lines.output)) != len(lines) or lines.mtime.min() <= 0:
        return False
    origins = _origins(lines, version)
    # the same float expression as split_cycles: origin > cur_origin + prev_end + ORIGIN_TOLERANCE_MS
    return not np.any(origins[1:] > origins[0] + ends[:-1] + ORIGIN_TOLERANCE_MS)


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
        origins = _origins(cyc.table, version)[cyc.table.mtime > 0]
        if not origins.size:
            continue
        origin = float(np.sort(origins)[len(origins) // 2])  # the median (upper one of an even count)
        cyc.origin_ms = origin
        outliers = np.count_nonzero(np.abs(origins - origin) > ORIGIN_TOLERANCE_MS)
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
    last = cycle.table.output[-1].rsplit("/", 1)[-1]
    return last.endswith(".ninja")


def group_steps(lines: LineTable) -> StepTable:
    """Lines of one cycle -> steps: an edge with N outputs writes N lines with one (start, end, hash)."""
    # one output per edge (the usual case) when the hashes, else the (start, end, hash) keys, are unique
    n = len(lines)
    keys = None if len(set(lines.cmdhash)) == n else list(zip(lines.start_ms.tolist(), lines.end_ms.tolist(),
                                                              lines.cmdhash))
    if keys is None or len(set(keys)) == n:
        return StepTable(lines.start_ms, lines.end_ms, lines.lineno, lines.cmdhash, lines.output)
    group: dict[tuple[int, int, str], int] = {}  # key -> step
    firsts: list[int] = []  # first line of each step
    outputs: list[list[str]] = []
    for k, key in enumerate(keys):
        g = group.setdefault(key, len(firsts))
        if g == len(firsts):
            firsts.append(k)
            outputs.append([lines.output[k]])
        else:
            outputs[g].append(lines.output[k])
    return StepTable(lines.start_ms[firsts], lines.end_ms[firsts], lines.lineno[firsts],
                     [lines.cmdhash[k] for k in firsts], [o[0] for o in outputs],
                     {g: o for g, o in enumerate(outputs) if len(o) > 1})


def parse(stream: IO[str], name: str = "<ninja_log>") -> NinjaLog:
    """Parse a whole log stream: lines, cycles, recompacted prefix, builds."""
    version, lines, warnings = read_lines(stream, name)
    cycles = split_cycles(lines, version)
    n_history, reasons = find_history(cycles, version)
    history = sum(len(cyc.table) for cyc in cycles[:n_history])  # cycles are consecutive: a prefix
    if not np.any(lines.mtime > 0) and len(cycles) > 1:
        warnings.append(f"{name}: the mtime column is empty; a recompacted region cannot be told from builds")
    if history:
        warnings.append(
            f"{name}:{lines.lineno[0]}-{lines.lineno[history - 1]}: recompacted (hash-ordered) history, "
            f"{history} lines: no build recovered from it ({'; '.join(reasons[:3])})"
        )
    builds = group_builds(cycles[n_history:])
    return NinjaLog(name, version, lines, builds, history, warnings)


def parse_path(path: str, display: str | None = None) -> NinjaLog:
    return parse_log_path(path, display, parse, "ninja log")
