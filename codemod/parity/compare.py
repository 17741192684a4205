"""Byte-for-byte comparison of two driver dumps (original vs migrated build): pure functions over
file-like objects, so they are tested on synthetic buffers."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from ..errors import ParseError


@dataclass
class CaseOutput:
    id: str                         # entry|input|format|RxC|values
    ok: bool                        # False: the library rejected the case (message kept)
    message: str
    first_us: int                   # wall time of the first successful call of its combination
    buffers: dict[str, bytes] = field(default_factory=dict)

    @property
    def combo(self) -> tuple[str, str, str]:
        entry, inp, fmt = self.id.split("|")[:3]
        return entry, inp, fmt


@dataclass
class Mismatch:
    case: str
    what: str                       # status / message / buffers / <buffer name>
    detail: str


def _u64(f: BinaryIO) -> int | None:
    raw = f.read(8)
    if not raw:
        return None
    if len(raw) != 8:
        raise ParseError("truncated parity dump")
    return struct.unpack("<Q", raw)[0]


def _str(f: BinaryIO) -> str:
    n = _u64(f)
    if n is None:
        raise ParseError("truncated parity dump")
    data = f.read(n)
    if len(data) != n:
        raise ParseError("truncated parity dump")
    return data.decode()


def read_dump(f: BinaryIO) -> Iterator[CaseOutput]:
    """Cases in the order the driver wrote them (see driver.cu.j2, struct Dump)."""
    while True:
        n = _u64(f)
        if n is None:
            return
        case_id = f.read(n).decode()
        status = _u64(f)
        message = _str(f)
        first_us = _u64(f)
        out = CaseOutput(case_id, status == 0, message, first_us or 0)
        while True:
            name = _str(f)
            if not name:
                break
            size = _u64(f)
            data = f.read(size)
            if len(data) != size:
                raise ParseError(f"truncated parity dump in case {case_id}")
            out.buffers[name] = data
        yield out


def write_case(f: BinaryIO, case: CaseOutput) -> None:
    """The driver's record format, for tests and tools."""
    def s(text: str) -> None:
        raw = text.encode()
        f.write(struct.pack("<Q", len(raw)) + raw)
    s(case.id)
    f.write(struct.pack("<Q", 0 if case.ok else 1))
    s(case.message)
    f.write(struct.pack("<Q", case.first_us))
    for name, data in case.buffers.items():
        s(name)
        f.write(struct.pack("<Q", len(data)) + data)
    s("")


def first_difference(a: bytes, b: bytes) -> str:
    if len(a) != len(b):
        return f"sizes differ: {len(a)} vs {len(b)} bytes"
    diffs = [i for i in range(len(a)) if a[i] != b[i]]
    return (f"{len(diffs)} of {len(a)} bytes differ, first at offset {diffs[0]}: "
            f"{a[diffs[0]]:#04x} vs {b[diffs[0]]:#04x}")


def compare_case(a: CaseOutput, b: CaseOutput) -> list[Mismatch]:
    if a.id != b.id:
        return [Mismatch(a.id, "case", f"case order differs: {a.id} vs {b.id}")]
    if a.ok != b.ok:
        return [Mismatch(a.id, "status", f"original {'ran' if a.ok else 'rejected: ' + a.message}, "
                                         f"migrated {'ran' if b.ok else 'rejected: ' + b.message}")]
    if a.message != b.message:
        return [Mismatch(a.id, "message", f"{a.message!r} vs {b.message!r}")]
    if a.buffers.keys() != b.buffers.keys():
        return [Mismatch(a.id, "buffers", f"{sorted(a.buffers)} vs {sorted(b.buffers)}")]
    return [Mismatch(a.id, name, first_difference(a.buffers[name], b.buffers[name]))
            for name in a.buffers if a.buffers[name] != b.buffers[name]]


@dataclass
class ComboResult:
    entry: str
    input: str
    format: str
    cases: int = 0
    ran: int = 0
    equal: int = 0
    rejected: int = 0
    bytes_compared: int = 0
    first_us: dict[str, int] = field(default_factory=dict)   # side -> first successful call
    rejections: list[str] = field(default_factory=list)       # distinct library messages


def compare_streams(original: Iterator[CaseOutput], migrated: Iterator[CaseOutput]):
    """(per-combination results keyed by (entry, input, format), mismatches, message differences).

    A case both builds reject with different messages is a message difference, not a mismatch:
    the migrated layer's errors name the variant by design."""
    combos: dict[tuple[str, str, str], ComboResult] = {}
    mismatches: list[Mismatch] = []
    messages: list[Mismatch] = []
    missing = object()
    orig, mig = iter(original), iter(migrated)
    while True:
        a, b = next(orig, missing), next(mig, missing)
        if a is missing and b is missing:
            break
        if a is missing or b is missing:
            left = b if a is missing else a
            mismatches.append(Mismatch(left.id, "case", "present in one dump only"))
            continue
        r = combos.setdefault(a.combo, ComboResult(*a.combo))
        r.cases += 1
        for side, out in (("original", a), ("migrated", b)):
            if out.first_us:
                r.first_us[side] = out.first_us
        found = compare_case(a, b)
        if found and found[0].what == "message":
            messages.extend(found)
            found = []
        mismatches.extend(found)
        if a.ok and b.ok:
            r.ran += 1
            r.bytes_compared += sum(len(v) for v in a.buffers.values())
            if not found:
                r.equal += 1
        elif not a.ok and not b.ok:
            r.rejected += 1
            if a.message not in r.rejections:
                r.rejections.append(a.message)
    return combos, mismatches, messages
