"""Opening a build log for reading: plain text, or gzip-compressed when the name ends in `.gz`
(logs kept beside results are compressed)."""

import gzip
from typing import IO


def open_log(path: str) -> IO[str]:
    """Text stream over the log at `path`; bytes that are not UTF-8 survive as surrogates."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape", newline="")
    return open(path, encoding="utf-8", errors="surrogateescape", newline="")
