"""CMake command invocations of one CMakeLists.txt (a tokenizer, not an evaluator): which literal
entries the source lists of a target hold, and where its add_library(...) line is."""

from __future__ import annotations

import re
from dataclasses import dataclass

_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_VAR_REF = re.compile(r"^\$\{([A-Za-z0-9_]+)\}$")


@dataclass(frozen=True)
class Arg:
    text: str
    quoted: bool  # "..." or [[...]]: one argument even with blanks or semicolons


@dataclass(frozen=True)
class Command:
    name: str  # lower-case: CMake command names are case-insensitive
    args: tuple[Arg, ...]
    start: int  # offset of the name
    end: int  # offset just past `)`
    line: int  # 1-based line of the name


def _bracket_end(data: bytes, i: int) -> int:
    """Offset past the bracket argument/comment opening at `i` (`[[`, `[=[`, ...); -1 if none opens."""
    m = re.compile(rb"\[(=*)\[").match(data, i)
    if not m:
        return -1
    close = data.find(b"]" + m.group(1) + b"]", m.end())
    return len(data) if close < 0 else close + len(m.group(1)) + 2


def _skip_comment(data: bytes, i: int) -> int:
    end = _bracket_end(data, i + 1)
    if end >= 0:
        return end
    nl = data.find(b"\n", i)
    return len(data) if nl < 0 else nl


def commands(data: bytes) -> list[Command]:
    """Every command invocation, in file order. Unquoted arguments split on blanks and `;` as a
    list does; nested parentheses are kept inside arguments."""
    out: list[Command] = []
    i, n = 0, len(data)
    while i < n:
        c = data[i:i + 1]
        if c == b"#":
            i = _skip_comment(data, i)
            continue
        m = _IDENT.match(data, i) if (i == 0 or not data[i - 1:i].isalnum() and data[i - 1:i] != b"_") else None
        if not m:
            i += 1
            continue
        j = m.end()
        while j < n and data[j:j + 1] in b" \t":
            j += 1
        if data[j:j + 1] != b"(":
            i = m.end()
            continue
        args, k, depth, cur = [], j + 1, 0, bytearray()

        def flush() -> None:
            if cur:
                args.extend(Arg(t, False) for t in cur.decode().split(";") if t)
                cur.clear()

        while k < n:
            ch = data[k:k + 1]
            if ch == b"#":
                flush()
                k = _skip_comment(data, k)
                continue
            if ch == b'"':
                flush()
                e = k + 1
                while e < n and data[e:e + 1] != b'"':
                    e += 2 if data[e:e + 1] == b"\\" else 1
                args.append(Arg(data[k + 1:e].decode(), True))
                k = e + 1
                continue
            if ch == b"[" and not cur and _bracket_end(data, k) >= 0:
                e = _bracket_end(data, k)
                open_len = re.compile(rb"\[=*\[").match(data, k).end() - k
                args.append(Arg(data[k + open_len:e - open_len].decode(), True))
                k = e
                continue
            if ch == b"(":
                depth += 1
            elif ch == b")":
                if depth == 0:
                    break
                depth -= 1
            if ch.isspace():
                flush()
            else:
                cur += ch
            k += 1
        flush()
        end = min(k + 1, n)
        out.append(Command(m.group().decode().lower(), tuple(args), i, end, data.count(b"\n", 0, i) + 1))
        i = end
    return out


def list_entries(cmds: list[Command], variable: str) -> dict[str, tuple[str, int]]:
    """Literal entries of `variable` and of every list it is built from through `${OTHER}` in
    set(...) / list(APPEND|PREPEND|INSERT ...): entry -> (the list that holds it, line)."""
    writes: dict[str, list[tuple[list[Arg], int]]] = {}
    for c in cmds:
        if c.name == "set" and c.args:
            values = [a for a in c.args[1:] if a.text not in ("CACHE", "PARENT_SCOPE")]
            writes.setdefault(c.args[0].text, []).append((values, c.line))
        elif c.name == "list" and len(c.args) >= 2 and c.args[0].text in ("APPEND", "PREPEND", "INSERT"):
            values = list(c.args[3:] if c.args[0].text == "INSERT" else c.args[2:])
            writes.setdefault(c.args[1].text, []).append((values, c.line))
    out: dict[str, tuple[str, int]] = {}
    seen, todo = set(), [variable]
    while todo:
        var = todo.pop(0)
        if var in seen:
            continue
        seen.add(var)
        for values, line in writes.get(var, []):
            for a in values:
                ref = _VAR_REF.match(a.text)
                if ref and not a.quoted:
                    todo.append(ref.group(1))
                elif "${" not in a.text and "$<" not in a.text:
                    out.setdefault(a.text, (var, line))
    return out


def defines(cmds: list[Command], variable: str) -> bool:
    """Whether some set(...) or list(...) writes `variable`."""
    return any((c.name == "set" and c.args and c.args[0].text == variable)
               or (c.name == "list" and len(c.args) >= 2 and c.args[1].text == variable) for c in cmds)


def add_library(cmds: list[Command], target: str) -> Command | None:
    return next((c for c in cmds if c.name == "add_library" and c.args and c.args[0].text == target), None)
