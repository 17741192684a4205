"""nvcc `--time` CSV reader: rows -> one Invocation per nvcc process, even when many concurrent
nvcc processes appended to one file (rows attributed by the `tmpxft_<pid>` temp-file names).

Format: docs/impact.md, "Inputs". Pure functions over file-like objects.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import IO

from ..errors import ParseError
from .logfile import parse_log_path

_PID = re.compile(r"tmpxft_([0-9a-fA-F]{8})_")
_HOST_PHASE = re.compile(r"^(?P<exe>.+?) \((?P<what>preprocessing [0-9]+|compiling|linking)\)$")

# Phase kind -> side. Host: the host preprocessor feeding cudafe++, cudafe++ itself and the host
# compile/link. Device: per-arch preprocessing, cicc, ptxas, fatbinary, nvlink.
HOST_KINDS = ("host_preprocess", "cudafe", "host_compile", "host_link")
DEVICE_KINDS = ("device_preprocess", "cicc", "ptxas", "fatbinary", "nvlink")
KINDS = HOST_KINDS + DEVICE_KINDS + ("driver", "other")


@dataclass(frozen=True)
class Row:
    lineno: int
    source: str
    phase: str
    inputs: str
    output: str
    arch: str
    ms: float

    @property
    def kind(self) -> str:
        return phase_kind(self.phase)

    @property
    def pid(self) -> int | None:
        m = _PID.search(self.output) or _PID.search(self.inputs)
        return int(m.group(1), 16) if m else None


@dataclass
class Invocation:
    """The rows of one nvcc process. `complete` once its `nvcc (driver)` row was seen."""

    pid: int | None
    source: str
    rows: list[Row] = field(default_factory=list)
    output: str = ""
    complete: bool = False
    has_compile: bool = False

    @property
    def first_line(self) -> int:
        return self.rows[0].lineno

    def phase_ms(self) -> dict[str, float]:
        """Milliseconds per phase kind (KINDS order)."""
        out = {k: 0.0 for k in KINDS}
        for row in self.rows:
            out[row.kind] += row.ms
        return out

    def host_device_ms(self) -> tuple[float, float]:
        """(host ms, device ms): the phases of HOST_KINDS and of DEVICE_KINDS."""
        ms = self.phase_ms()
        return sum(ms[k] for k in HOST_KINDS), sum(ms[k] for k in DEVICE_KINDS)

    def arch_ms(self) -> dict[str, float]:
        """Milliseconds of cicc and ptxas per arch, e.g. {'cicc compute_90': .., 'ptxas sm_90': ..}."""
        out: dict[str, float] = {}
        for row in self.rows:
            if row.kind in ("cicc", "ptxas") and row.arch:
                key = f"{row.kind} {row.arch}"
                out[key] = out.get(key, 0.0) + row.ms
        return dict(sorted(out.items()))


def phase_kind(phase: str) -> str:
    phase = phase.strip()
    m = _HOST_PHASE.match(phase)
    if m:
        what = m.group("what")
        if what == "compiling":
            return "host_compile"
        if what == "linking":
            return "host_link"
        # NOTE: '(preprocessing 4)' feeds cudafe++ (host side); '(preprocessing 1)' feeds cicc.
        return "host_preprocess" if what.endswith(" 4") else "device_preprocess"
    if phase == "nvcc (driver)":
        return "driver"
    if phase.startswith("cudafe"):
        return "cudafe"
    if phase in ("cicc", "ptxas", "fatbinary", "nvlink"):
        return phase
    return "other"


def parse_row(text: str, lineno: int, name: str) -> Row | None:
    """One CSV line -> Row; None for a header line. Fields are separated by ' , '."""
    if text.lstrip().startswith("source file name"):
        return None
    parts = text.split(",")
    if len(parts) < 8:
        raise ParseError(f"expected 8 comma-separated fields, found {len(parts)}", where=f"{name}:{lineno}",
                         hint="pass the file written by `nvcc --time FILE`")
    unit = parts[-1].strip()
    metric = parts[-2].strip()
    # NOTE: only the two path fields may hold a comma; take the fixed fields from both ends.
    middle = parts[2:-4]
    try:
        value = float(metric)
    except ValueError:
        raise ParseError(f"metric must be a number, found {metric[:30]!r}", where=f"{name}:{lineno}") from None
    if not math.isfinite(value) or value < 0:
        raise ParseError(f"metric must be a finite time >= 0, found {metric[:30]!r}", where=f"{name}:{lineno}",
                         hint="the file is not what `nvcc --time` wrote, or was edited")
    if unit == "ms":
        ms = value
    elif unit == "s":
        ms = value * 1000.0
    else:
        raise ParseError(f"unknown unit {unit[:20]!r}, expected 'ms'", where=f"{name}:{lineno}")
    return Row(
        lineno=lineno,
        source=parts[0].strip(),
        phase=parts[1].strip(),
        inputs=",".join(middle[:-1]).strip(),
        output=middle[-1].strip(),
        arch=parts[-4].strip(),
        ms=ms,
    )


def read_rows(stream: IO[str], name: str) -> list[Row]:
    """Every timing row; a ParseError when there is none (an empty file, or only the header)."""
    rows = []
    for lineno, raw in enumerate(stream, start=1):
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        row = parse_row(text, lineno, name)
        if row is not None:
            rows.append(row)
    if not rows:
        raise ParseError("no timing rows: the file is empty or holds only the header", where=name,
                         hint="pass the file `nvcc --time FILE` appended to during the build")
    return rows


def attribute(rows: list[Row], name: str = "<nvcc_time>") -> tuple[list[Invocation], list[str]]:
    """Rows in file order -> invocations, and warnings.

    Rows naming a `tmpxft_<pid>` temp file go to that pid's open invocation. The host compile row
    carries no temp file: it goes to the open invocation of the same source that has no compile row
    yet (oldest first). The driver row closes the open invocation whose output it names.
    """
    invocations: list[Invocation] = []
    open_by_pid: dict[int, Invocation] = {}
    open_list: list[Invocation] = []
    warnings: list[str] = []

    def new(pid: int | None, source: str) -> Invocation:
        inv = Invocation(pid, source)
        invocations.append(inv)
        open_list.append(inv)
        if pid is not None:
            open_by_pid[pid] = inv
        return inv

    def close(inv: Invocation) -> None:
        inv.complete = True
        open_list.remove(inv)
        if inv.pid is not None and open_by_pid.get(inv.pid) is inv:
            del open_by_pid[inv.pid]

    for row in rows:
        kind = row.kind
        if kind == "driver":
            target = _find_for_driver(open_list, row)
            if target is None:
                warnings.append(f"{name}:{row.lineno}: driver row for {row.output or '(no output)'} "
                                "matches no open nvcc invocation; ignored")
                continue
            target.rows.append(row)
            if row.output and not target.output:
                target.output = row.output
            close(target)
            continue
        pid = row.pid
        if pid is not None:
            inv = open_by_pid.get(pid) or new(pid, row.source)
        elif kind in ("host_compile", "host_link", "nvlink"):
            inv = _find_for_compile(open_list, row) or new(None, row.source)
        else:
            inv = _find_pidless(open_list, row.source) or new(None, row.source)
        inv.rows.append(row)
        if kind == "host_compile" and not inv.has_compile:
            inv.has_compile = True
            inv.output = row.output
        elif kind == "host_link":
            inv.output = row.output
    for inv in open_list:
        warnings.append(f"{name}:{inv.first_line}: nvcc of {inv.source or '(unknown)'} has no driver row "
                        "(failed or interrupted compile): only its finished phases are counted")
    return invocations, warnings


def _find_for_driver(open_list: list[Invocation], row: Row) -> Invocation | None:
    if row.output:
        for inv in open_list:
            if inv.output == row.output:
                return inv
    pidless = [inv for inv in open_list if inv.pid is None]
    if pidless:
        return pidless[-1]
    return None


def _find_for_compile(open_list: list[Invocation], row: Row) -> Invocation | None:
    for inv in open_list:
        if inv.source == row.source and not inv.has_compile:
            return inv
    # dlink steps of a CMake compiler-id run: same source, compile row already seen, no pid
    for inv in reversed(open_list):
        if inv.source == row.source and inv.pid is None:
            return inv
    return None


def _find_pidless(open_list: list[Invocation], source: str) -> Invocation | None:
    for inv in reversed(open_list):
        if inv.pid is None and inv.source == source:
            return inv
    return None


def parse(stream: IO[str], name: str = "<nvcc_time>") -> tuple[list[Invocation], list[str]]:
    return attribute(read_rows(stream, name), name)


def parse_path(path: str, display: str | None = None) -> tuple[list[Invocation], list[str]]:
    return parse_log_path(path, display, parse, "nvcc --time file")
