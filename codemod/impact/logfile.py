"""Reading a build log from a path: plain text, or gzip-compressed when the name ends in `.gz`
(logs kept beside results are compressed); a file that cannot be read is a ParseError."""

from __future__ import annotations

import gzip
from typing import IO, Callable, TypeVar

from ..errors import ParseError

T = TypeVar("T")


def open_log(path: str) -> IO[str]:
    """Text stream over the log at `path`; bytes that are not UTF-8 survive as surrogates."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape", newline="")
    return open(path, encoding="utf-8", errors="surrogateescape", newline="")


def parse_log_path(path: str, display: str | None, parse: Callable[[IO[str], str], T], what: str) -> T:
    """`parse(stream, name)` over the log at `path`; `what` names the kind of log in errors."""
    name = display or path
    try:
        with open_log(path) as fh:
            return parse(fh, name)
    except (OSError, EOFError) as exc:          # gzip.BadGzipFile is an OSError
        raise ParseError(f"cannot read {what}: {getattr(exc, 'strerror', None) or exc}", where=name) from None
