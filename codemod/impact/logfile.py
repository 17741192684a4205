"""Reading a build log from a path: plain text, or gzip-compressed when the name ends in `.gz`
(logs kept beside results are compressed); a file that cannot be read is a ParseError. A log is
bounded (decompressed size, line length, line count) before it is parsed."""

from __future__ import annotations

import gzip
import zlib
from typing import IO, Callable, TypeVar

import numpy as np

from ..errors import ParseError

T = TypeVar("T")

# NOTE: TE's logs of several builds are a few MB and 100k lines; a log past these is not a build
# log (a 1.7 MB gzip held 63 million lines and grew to 16.8 GB; a gzip of NULs is one endless line).
MAX_BYTES = 512 << 20       # decompressed
MAX_LINES = 5_000_000
MAX_LINE_BYTES = 64 << 10   # a line holds a path or two and a hash
_CHUNK = 1 << 20


def open_log(path: str) -> IO[str]:
    """Text stream over the log at `path`; bytes that are not UTF-8 survive as surrogates."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape", newline="")
    return open(path, encoding="utf-8", errors="surrogateescape", newline="")


def check_bounds(path: str, name: str, what: str) -> None:
    """One pass over the (decompressed) bytes in chunks, holding one chunk at a time: a ParseError
    naming the file and the limit past MAX_BYTES, MAX_LINES or MAX_LINE_BYTES."""
    opener = gzip.open if path.endswith(".gz") else open
    total = lines = 0
    run = 0  # bytes of the current line so far
    with opener(path, "rb") as fh:
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_BYTES:
                raise ParseError(f"{what} is larger than {MAX_BYTES >> 20} MiB (decompressed); not a build log",
                                 where=name)
            ends = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)  # each b"\n", in C
            if len(ends):
                # line lengths: the first (with the run before the chunk), then between newlines
                lengths = np.diff(ends, prepend=-1) - 1
                lengths[0] += run
                k = int(np.argmax(lengths > MAX_LINE_BYTES)) if lengths.max() > MAX_LINE_BYTES else -1
                if k >= 0:
                    raise ParseError(f"{what} has a line longer than {MAX_LINE_BYTES >> 10} KiB; not a build log",
                                     where=f"{name}:{lines + k + 1}")
                run = len(chunk) - int(ends[-1]) - 1
            else:
                run += len(chunk)
            lines += len(ends)
            if lines > MAX_LINES:
                raise ParseError(f"{what} has more than {MAX_LINES:,} lines; not a build log", where=name)
            if run > MAX_LINE_BYTES:
                raise ParseError(f"{what} has a line longer than {MAX_LINE_BYTES >> 10} KiB; not a build log",
                                 where=f"{name}:{lines + 1}")


def parse_log_path(path: str, display: str | None, parse: Callable[[IO[str], str], T], what: str) -> T:
    """`parse(stream, name)` over the log at `path`; `what` names the kind of log in errors."""
    name = display or path
    try:
        check_bounds(path, name, what)
        with open_log(path) as fh:
            return parse(fh, name)
    except (OSError, EOFError, zlib.error) as exc:          # gzip.BadGzipFile is an OSError
        raise ParseError(f"cannot read {what}: {getattr(exc, 'strerror', None) or exc}", where=name) from None
