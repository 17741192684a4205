"""compile_commands.json: loaded once, every entry checked (a list of objects with string
`directory` and `file`, and `arguments` as a list of strings or `command` as one string); any
other shape is one ParseError naming the file and the entry, never a traceback."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParseError

MAX_DB_BYTES = 1 << 30  # TE's is a few MB; a bigger file is not a compile database


@dataclass(frozen=True)
class CompileEntry:
    index: int          # position in the file's list (0-based), for errors
    directory: str
    file: str           # as written: relative to `directory` or absolute
    arguments: tuple[str, ...] | None
    command: str | None

    def path(self) -> Path:
        f = Path(self.file)
        return f if f.is_absolute() else Path(self.directory) / f

    def argv(self, db_name: str) -> list[str]:
        """The command line as a list; an unterminated quote in `command` is a ParseError."""
        if self.arguments is not None:
            return list(self.arguments)
        try:
            return shlex.split(self.command or "")
        except ValueError as exc:
            raise ParseError(f"entry {self.index} ({self.file}): cannot split 'command': {exc}", where=db_name,
                             hint="quote the command as a shell would, or write 'arguments' as a list") from None


def load(db_path: Path) -> list[CompileEntry]:
    """Every entry of the compile database at `db_path`, checked."""
    name = str(db_path)
    try:
        with open(db_path, "rb") as fh:
            data = fh.read(MAX_DB_BYTES + 1)
    except OSError as exc:
        raise ParseError(f"cannot read compile database: {exc.strerror}", where=name) from None
    if len(data) > MAX_DB_BYTES:
        raise ParseError(f"compile database is larger than {MAX_DB_BYTES >> 30} GiB", where=name)
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError("cannot read compile database: not UTF-8", where=f"{name}:{line}",
                         hint="pass a valid compile_commands.json or omit --compile-db") from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"cannot read compile database: {exc.msg}", where=f"{name}:{exc.lineno}",
                         hint="pass a valid compile_commands.json or omit --compile-db") from None
    except RecursionError:
        raise ParseError("cannot read compile database: nested too deeply", where=name,
                         hint="pass a valid compile_commands.json or omit --compile-db") from None
    except ValueError as exc:  # a number past Python's int-string limit (4,300 digits)
        raise ParseError(f"cannot read compile database: {str(exc)[:80]}", where=name,
                         hint="pass a valid compile_commands.json or omit --compile-db") from None
    if not isinstance(doc, list):
        raise ParseError(f"compile database is not a JSON list (found {type(doc).__name__})", where=name)
    return [_entry(k, e, name) for k, e in enumerate(doc)]


def _entry(k: int, e, name: str) -> CompileEntry:
    def bad(what: str) -> ParseError:
        return ParseError(f"entry {k}: {what}", where=name,
                          hint="each entry is {\"directory\": str, \"file\": str, and \"arguments\": [str, ...] "
                               "or \"command\": str}")

    if not isinstance(e, dict):
        raise bad(f"expected an object, found {type(e).__name__}")
    for key in ("directory", "file"):
        if not isinstance(e.get(key), str) or not e[key]:
            raise bad(f"'{key}' must be a non-empty string")
        if "\0" in e[key]:
            raise bad(f"'{key}' holds a NUL character")
    args, command = e.get("arguments"), e.get("command")
    if args == [] and command is not None:
        args = None  # an empty list next to a command: the command holds the flags
    if args is not None:
        if isinstance(args, str):
            raise bad("'arguments' is one string, expected a list of strings (or use 'command')")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise bad("'arguments' must be a list of strings")
        args = tuple(args)
    if command is not None and not isinstance(command, str):
        raise bad("'command' must be a string")
    if args is None and command is None:
        raise bad("has neither 'arguments' nor 'command'")
    if "\0" in (command or "") or any("\0" in a for a in args or ()):
        raise bad("the command line holds a NUL character")
    return CompileEntry(k, e["directory"], e["file"], args, command)


def find(entries: list[CompileEntry], source: Path) -> CompileEntry | None:
    """The entry that compiles `source` (compared after resolving both), if any."""
    src = source.resolve()
    for entry in entries:
        try:
            if entry.path().resolve() == src:
                return entry
        except (OSError, RuntimeError):  # a symlink loop, a name too long: not this source
            continue
    return None


def standard_flag(argv: list[str]) -> str | None:
    """The language standard a command line asks for, as clang spells it (`-std=c++20`): nvcc's
    `-std=c++20`, `--std=c++20`, `-std c++20` and `--std c++20`, the last one winning."""
    got, i = None, 0
    while i < len(argv):
        a = argv[i]
        if a in ("-std", "--std") and i + 1 < len(argv):
            got, i = argv[i + 1], i + 1
        elif a.startswith(("-std=", "--std=")):
            got = a.split("=", 1)[1]
        i += 1
    return f"-std={got}" if got else None


def language_standard(entries: list[CompileEntry], db_name: str) -> str | None:
    """The standard most of the database's commands compile with (`-std=c++20`), or None: the
    parse default for every file, also those no entry lists (a scratch copy, a header-only unit)."""
    counts: dict[str, int] = {}
    for e in entries:
        try:
            flag = standard_flag(e.argv(db_name))
        except ParseError:
            continue
        if flag:
            counts[flag] = counts.get(flag, 0) + 1
    return max(sorted(counts), key=lambda f: counts[f]) if counts else None
