"""Where a cursor of one parsed TU is spelled: file text read once, spelled positions, project
membership, and the macro invocation that made a cursor, located in its `#define` with the
invocation's arguments bound to the macro's parameters."""

from __future__ import annotations

import ctypes
import os
import re

import clang.cindex as ci

from .cursors import CK, child_cursors, file_loc, real_path
from .source_text import (bind_macro_args, find_pasted, macro_params, read_macro_args, substitute,
                          vararg_names)

# The qualifiers before a name (`ns::detail::`): a position includes them, so it is the first byte
# of the expression.
_QUALIFIERS = r"(?:(?:::)?[A-Za-z_]\w*\s*::\s*)+$"
_MACRO_INSTANTIATION = CK.MACRO_INSTANTIATION.value


def _define_end(text: str, start: int) -> int:
    """The end of the `#define` line at `start`, following backslash continuations."""
    end = start
    while True:
        nl = text.find("\n", end)
        if nl < 0 or not text[end:nl].rstrip().endswith("\\"):
            return len(text) if nl < 0 else nl
        end = nl + 1


def _line_col(text: str, off: int) -> tuple[int, int]:
    """1-based line and column of a byte offset."""
    return text.count("\n", 0, off) + 1, off - (text.rfind("\n", 0, off) + 1) + 1


class SourceFiles:
    """File text and project membership, read once per parse."""

    def __init__(self, root: str):
        self.root = real_path(root)
        self.text: dict[str, str] = {}

    def in_project(self, name: str | None) -> bool:
        return bool(name) and real_path(name).startswith(self.root + os.sep)

    def rel(self, name: str) -> str:
        return os.path.relpath(real_path(name), self.root)

    def get(self, name: str) -> str:
        """The file's text, one character per byte: clang's offsets are byte offsets, and a UTF-8
        character before a site (a `×` in a comment) would shift every slice after it."""
        real = real_path(name)
        if real not in self.text:
            with open(real, "rb") as fh:
                self.text[real] = fh.read().decode("latin-1")
        return self.text[real]


class Locator:
    """Spelled positions and macro lookups of one TU, each answer remembered."""

    def __init__(self, tu: ci.TranslationUnit, files: SourceFiles):
        self.tu = tu
        self.files = files
        self.macros: dict[tuple[str, int], dict] = {}  # (file, offset) -> macro instantiation
        self._macro_args: dict[tuple, tuple | None] = {}  # (file, offset, limit) -> read_macro_args
        self._definitions: dict[tuple, dict | None] = {}  # (file, offset, name) -> in_definition
        self._ordinals: dict[tuple, dict[int, int]] = {}  # (file, offset, name) -> cursor hash -> k
        self._project_files: dict[int, bool] = {}  # libclang file handle -> under the root
        self._file_names: dict[int, str] = {}  # libclang file handle -> name
        self._expansions: dict[tuple[str, int], ci.Cursor] | None = None  # (real file, offset) -> expansion
        # the callee cursor of the call whose site is being recorded (`_nth_occurrence`)
        self.call_cursor = None

    def file_loc(self, loc):
        return file_loc(loc, self._file_names)

    def pos(self, cursor):
        """Spelled position, plus whether the cursor was made by a macro body.

        A cursor whose extent starts at a macro invocation's name came from that macro's body
        (text not in the file); one spelled in a macro argument starts after the '('.
        """
        fname, line, col, off = self.file_loc(cursor.location)
        in_body = self.macro_at(cursor) is not None
        return fname, line, col, off, in_body

    def declared_in_project(self, cursor) -> bool:
        """Whether a declaration's (expansion) location is in a project file, asked once per file.

        NOTE: the top level holds every declaration of every header, the PCH's included; naming
        each one's file costs more than the rest of a small TU's walk.
        """
        f = ci.c_object_p()
        ci.conf.lib.clang_getInstantiationLocation(cursor.location, ctypes.byref(f), None, None, None)
        if not f:
            return False
        handle = ctypes.cast(f, ctypes.c_void_p).value
        known = self._project_files.get(handle)
        if known is None:
            known = self._project_files[handle] = self.files.in_project(ci.File(f).name)
        return known

    # -- macro invocations -------------------------------------------------------------------
    def macro_at(self, cursor):
        sf, _, _, soff = self.file_loc(cursor.extent.start)
        if not sf:
            return None
        key = (real_path(sf), soff)
        if key not in self.macros:
            self.macros[key] = self._macro_instantiation(sf, soff)
        return self.macros[key]

    def index_expansions(self, top_level: list) -> None:
        """Remember the project's macro invocations among the TU's top-level cursors (the
        preprocessing record), by (file, offset) of their name.

        NOTE: one `clang_getCursor` per lookup visited every sibling of the enclosing
        declaration context: 10k functions in one `extern "C"` block took 19 s, 40k took 277 s.
        One pass here, filtered by file handle as `declared_in_project`, is linear.
        """
        self._expansions = {}
        for c in top_level:
            if c._kind_id == _MACRO_INSTANTIATION and self.declared_in_project(c):
                mf, _, _, moff = self.file_loc(c.location)
                self._expansions.setdefault((real_path(mf), moff), c)

    def _macro_instantiation(self, fname: str, off: int):
        """The macro invocation whose name starts at (file, offset), from the preprocessing record."""
        if not self.files.in_project(fname):
            return None
        if self._expansions is None:
            self.index_expansions(child_cursors(self.tu.cursor))
        c = self._expansions.get((real_path(fname), off))
        if c is None:
            return None
        mf, line, _, moff = self.file_loc(c.location)
        m = {"name": c.spelling, "file": mf, "line": line, "offset": moff}
        d = c.referenced
        if d is not None and d.kind == CK.MACRO_DEFINITION:
            df, _, _, doff = self.file_loc(d.extent.start)
            _, _, _, dend = self.file_loc(d.extent.end)
            if df and self.files.in_project(df):
                m["def"] = (df, doff, dend)
        return m

    def macro_args(self, m: dict, limit: int | None = None):
        """`read_macro_args` at a macro invocation, read once per invocation (a type-switch macro's
        every arm asks again)."""
        key = (m["file"], m["offset"], limit)
        if key not in self._macro_args:
            self._macro_args[key] = read_macro_args(self.files.get(m["file"]), m["offset"], limit)
        return self._macro_args[key]

    # -- names spelled in a #define ------------------------------------------------------------
    def in_definition(self, cur, name: str):
        """For a cursor made by a macro body: where `name` is spelled in the #define, and the
        invocation's arguments by parameter. None when it cannot be located."""
        m = self.macro_at(cur)
        if not m or "def" not in m or not name:
            return None
        key = (m["file"], m["offset"], name)
        if key not in self._definitions:
            self._definitions[key] = self._locate_in_definition(m, name) or self._locate_in_nested(m, name)
        got = self._definitions[key]
        if got and self.call_cursor is not None and cur == self.call_cursor:
            got = self._nth_occurrence(key, got, name, cur)
        return got

    def _nth_occurrence(self, key: tuple, got: dict, name: str, cur) -> dict:
        """A #define body that calls `name` more than once (`if (b) f<T, B>(...); else f<T, T>(...);`):
        every call of one expansion has the invocation's position, so the k-th call cursor met in
        the walk is taken for the k-th call spelled in the body (the walk follows source order)."""
        text = self.files.get(got["file"])
        start = text.rfind("#define", 0, got["offset"])
        end = _define_end(text, start)
        calls = [h.start() for h in re.finditer(r"\b" + re.escape(name) + r"\b(?=\s*[<(])", text[start:end])]
        if start < 0 or len(calls) < 2:
            return got
        seen = self._ordinals.setdefault(key, {})
        nth = seen.setdefault(cur.hash, len(seen)) % len(calls)
        off = start + calls[nth]
        q = re.search(_QUALIFIERS, text[start:off])
        if q:
            off = start + q.start()
        line, col = _line_col(text, off)
        return {**got, "offset": off, "line": line, "col": col}

    def _locate_in_nested(self, m: dict, name: str, depth: int = 0):
        """`name` spelled in the body of a macro that the invoked macro's body invokes
        (`#define OUTER(F) INNER(F, Mode::A) ... INNER(F, Mode::B)`): its place in the inner
        #define, and the inner macro's arguments with the outer invocation's substituted. libclang
        does not say which inner invocation made a cursor, so a parameter that differs between
        them holds every value (`alternatives`): each is compiled, whatever branch it sits in."""
        df, doff, dend = m["def"]
        text = self.files.get(df)
        body = text[doff:dend + 1]
        head = re.match(r"\s*(\w+)\s*(\(([^)]*)\))?", body)
        if not head or depth > 2:
            return None
        params = macro_params(head.group(3)) if head.group(2) else []
        inv = self.macro_args(m)
        outer = dict(zip(params, inv[1] if inv else []))
        found = None
        for call in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", body[head.end():]):
            inner = call.group(1)
            d = re.search(r"^[ \t]*#[ \t]*define[ \t]+" + re.escape(inner) + r"\(", text, re.M)
            if inner == head.group(1) or not d:
                continue
            end = _define_end(text, d.start())
            sub = {"name": inner, "file": df, "line": m["line"], "offset": doff + head.end() + call.start(),
                   "def": (df, d.end() - 1 - len(inner), end - 1)}
            got = self._locate_in_definition(sub, name) or self._locate_in_nested(sub, name, depth + 1)
            if not got:
                continue
            args = {p: substitute(a, lambda n: outer.get(n)) for p, a in got["args"].items()}
            if found is None:
                found = {**got, "macro": m, "args": args, "alternatives": {p: [a] for p, a in args.items()}}
            elif (got["file"], got["offset"]) == (found["file"], found["offset"]):
                for p, a in args.items():
                    if a not in found["alternatives"].setdefault(p, []):
                        found["alternatives"][p].append(a)
        return found

    def _locate_in_definition(self, m: dict, name: str):
        df, doff, dend = m["def"]
        text = self.files.get(df)
        body = text[doff:dend + 1]
        head = re.match(r"\s*(\w+)\s*(\(([^)]*)\))?", body)
        params = macro_params(head.group(3)) if head and head.group(2) else []
        variadic = bool(head and head.group(2) and head.group(3).strip().endswith("..."))
        start = head.end() if head else 0
        inv = self.macro_args(m)
        args = bind_macro_args(params, inv[1] if inv else [], variadic)
        hit = re.search(r"\b" + re.escape(name) + r"\b", body[start:])
        # a name made by token pasting (`launch_##KIND##_<...>`): the pasted spelling
        pasted = None if hit else find_pasted(body[start:], name, args)
        if not hit and not pasted:
            return None
        off = doff + start + (hit.start() if hit else pasted[0])
        q = re.search(_QUALIFIERS, text[doff:off])
        if q:
            off = doff + q.start()
        line, col = _line_col(text, off)
        out = {"file": df, "line": line, "col": col, "offset": off, "macro": m, "args": args}
        if pasted:
            out["pasted"] = (name, doff + start + pasted[1])
        if variadic:
            rest = (inv[1] if inv else [])[len(params) - 1:]
            out["varargs"] = (params[-1], rest)
            args.update(zip(vararg_names(params[-1], len(rest)), rest))
        return out
