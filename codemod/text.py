"""Text that reaches the terminal: names from a tree, a log or a list (file names, rule ids,
options) may hold escape sequences, carriage returns or bytes that are not UTF-8; `printable`
shows them as escapes instead of letting the terminal act on them."""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls, lone surrogates (undecodable bytes kept by
# surrogateescape), and the bidirectional overrides that reorder what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = m.group()
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape kept
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, limit: int | None = None) -> str:
    """`text` with control characters shown as `\\xNN` (one line, nothing the terminal acts on);
    cut to `limit` characters with `...` when given."""
    out = _UNSAFE.sub(_escape, str(text))
    if limit is not None and len(out) > limit:
        out = out[:max(0, limit - 3)] + "..."
    return out


def utf8_name(name: str) -> str:
    """`name` (a path as the OS gave it) when it is UTF-8; else a ParseError naming it. Names are
    written into JSON, generated code and umbrella files, which hold UTF-8 only."""
    from .errors import ParseError

    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ParseError(f"file name is not UTF-8: {printable(name, 200)}",
                         hint="rename the file, or exclude it in the rule") from None
    return name


def printable_lines(text: str) -> str:
    """A report of several lines for the terminal: each line `printable`, the newlines kept."""
    return "\n".join(printable(line) for line in str(text).split("\n"))
