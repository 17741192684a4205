"""Definitions moved, not copied (`kernel_strings.move_to`): what a kernel string needs from a
host-mixed header that NVRTC cannot compile (TE's common.h: `DIVUP`, `is_fp8`, `TypeExtrema`, the
TMA alignments; an enum of its C API header) leaves that header for an NVRTC-safe one beside it,
which the host-mixed header includes where the first of them stood and the NVRTC prelude includes
in its place. One definition, both builds: nothing to copy, nothing to check at build time.

The moved header is self-contained: its own toolkit includes, the std names its definitions use
(under NVRTC the rule's std_names header's, in the library's build the standard library's, by
using-declarations into the same namespace), the macros first. A later rule moving more names into
an existing header appends them (and what they need of std) to it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import ApplyError
from . import prelude_copies, stdnames
from ..base import source, stdshim
from ..base.changeset import ChangeSet, Edit, relative_include


# why every edit of a move says: a file edited only so is no rewritten kernel code (command.py)
WHY = "definitions moved into the header both builds include"


@dataclass
class Moved:
    """What moving one replaced header's names produced."""
    header: str                 # the host-mixed header the names leave
    to: str                     # the NVRTC-safe header they go to (library path)
    include: str                # how the header and its prelude include it
    names: list[str] = field(default_factory=list)      # moved now
    std_used: set[str] = field(default_factory=set)     # std names the moved definitions use (respelled)
    ints: set[str] = field(default_factory=set)         # <cstdint> integers they spell


def move(root: Path, replaced: str, to: str, names: list[str], std_cfg: dict | None, includes: list[dict],
         guard: str, cs: ChangeSet, rule_id: str) -> Moved:
    """Move the declarations of `names` out of `replaced` into `to` (created, or appended to when an
    earlier rule made it); edits and the new file go into `cs`. `includes`: the toolkit headers the
    moved header includes (prelude_includes that `replaced` includes itself, with its conditions)."""
    inc = relative_include(to, replaced)
    moved = Moved(replaced, to, inc)
    data = (root / replaced).read_bytes()
    existing = (root / to).read_bytes() if (root / to).is_file() else None
    already = {d.name for d in source.declaration_spans(existing, set(names))} if existing is not None else set()
    decls = [d for d in source.declaration_spans(data, set(names) - already)]
    missing = sorted(set(names) - already - {d.name for d in decls})
    if missing:
        raise ApplyError(f"{replaced}: no declaration of {', '.join(missing)} to move into {to}", where=replaced,
                         hint="check migrate/kernel_strings/prelude_copy and move_to in the rule")
    moved.names = sorted({d.name for d in decls})
    if not decls:
        if existing is not None and f'#include "{inc}"'.encode() not in data:
            raise ApplyError(f"{replaced} does not include {to}, which holds {', '.join(sorted(already))}",
                             where=replaced, hint=f'restore #include "{inc}" in {replaced}')
        return moved
    spans = _spans(data, decls)
    macros, groups = _texts(data, spans)
    _check_needs(data, replaced, to, spans, macros, groups, set(names))
    groups = prelude_copies.respell_copies(groups, std_cfg, moved.std_used, moved.ints)
    if existing is None:
        from .generate import render     # the templates' environment (generate imports this module)
        std = _std_block(std_cfg, moved) if std_cfg else None
        # not formatted: the moved code is the header's as it was, in the target's style already
        cs.new_files[to] = (render("shared_header.h.j2", replaced_name=replaced.rsplit("/", 1)[-1], guard=guard,
                                      macros=macros, includes=includes, std=std, body=_body(groups)))
    else:
        _append(existing, to, macros, groups, std_cfg, moved, cs, rule_id)
    _edit_replaced(data, replaced, inc, spans, existing is None or f'#include "{inc}"'.encode() not in data, cs)
    cs.notes.append(f"{replaced}: {', '.join(moved.names)} moved into {to} (included by {replaced} and by the NVRTC "
                    "prelude in its place)")
    return moved


@dataclass
class _Span:
    """A run of moved declarations in the header: what leaves it, verbatim (their comments, the
    rest of their last line, an `#if` block holding only moved code)."""
    start: int
    end: int
    namespace: str
    macro: bool
    conds: list[str]            # the `#if` lines of the blocks around it that stay in the header


def _spans(data: bytes, decls: list) -> list[_Span]:
    blocks = {(b[0], b[1]): b[2] for b in source._conditional_blocks(data)}
    spans: list[_Span] = []
    for d in sorted(decls, key=lambda d: d.start):
        start, end, kept = source.comment_start(data, d.start), d.end, list(d.conditionals)
        while kept and _only_moved(data, *kept[-1], decls):     # an #if block holding only moved code goes whole
            b_start, b_end = kept.pop()
            start, end = min(start, source.comment_start(data, b_start)), max(end, b_end)
        end = _line_end(data, end)
        conds = ["\n".join(line for at, line in blocks[k] if at < d.start) for k in kept]
        last = spans[-1] if spans else None
        if last is not None and last.end >= start:
            last.end = max(last.end, end)       # inside a block that already went whole
        elif last is not None and not data[last.end:start].strip() and last.namespace == d.namespace \
                and last.macro == d.macro and last.conds == conds:
            last.end = end
        else:
            spans.append(_Span(start, end, d.namespace, d.macro, conds))
    return spans


def _texts(data: bytes, spans: list[_Span]) -> tuple[list[str], list[dict]]:
    """(the moved `#define`s, the other runs grouped by namespace): the header's text as it is, in
    the conditions that stay around it."""
    macros: list[str] = []
    groups: list[dict] = []
    for sp in spans:
        text = data[sp.start:sp.end].decode().rstrip("\n")
        for cond in reversed(sp.conds):
            text = f"{cond}\n{text}\n#endif"
        if sp.macro:
            macros.append(text)
        elif groups and groups[-1]["namespace"] == sp.namespace:
            groups[-1]["texts"].append(text)
        else:
            groups.append({"namespace": sp.namespace, "texts": [text]})
    return macros, groups


def _check_needs(data: bytes, replaced: str, to: str, spans: list[_Span], macros: list[str], groups: list[dict],
                 names: set[str]) -> None:
    """Refuse a move whose definitions name something the header declares after where it includes
    the moved header (the header's own dtype aliases, a macro its conditions test) and that does not
    move with them: the library's build would see the name undeclared there."""
    texts = "\n".join(macros + [t for g in groups for t in g["texts"]])
    spelled = set(re.findall(r"[A-Za-z_]\w*", re.sub(r"//[^\n]*|/\*.*?\*/", " ", texts, flags=re.S)))
    at = _include_point(data, spans[0].start)
    at = -at - 1 if at < 0 else at
    later = sorted({d.name for d in source.declaration_spans(data, spelled - names) if d.start >= at})
    if later:
        raise ApplyError(f"{replaced}: what moves into {to} names {', '.join(later)}, which {replaced} declares "
                         "after where it would include the moved header", where=replaced,
                         hint=f"add {', '.join(later)} to migrate/kernel_strings/prelude_copy: they move too")


def _std_block(std_cfg: dict, moved: Moved) -> dict | None:
    names = sorted(n for n in moved.std_used if n not in stdnames._INTEGERS)
    headers = sorted({stdshim.STD_HEADERS[n] for n in names} | ({"cstdint"} if moved.ints else set()))
    if not names and not headers:
        return None
    return dict(header=std_cfg["header"], namespace=std_cfg["namespace"], names=names, std_headers=headers)


def _body(groups: list[dict]) -> str:
    out = ""
    for g in groups:
        texts = "\n\n".join(g["texts"])
        out += (f"\nnamespace {g['namespace']} {{\n\n{texts}\n\n}}  // namespace {g['namespace']}\n"
                if g["namespace"] else f"\n{texts}\n")
    return out


_HOST_USINGS = re.compile(r"((?:using std::\w+;\n)*)(}  // namespace ([\w:]+)\n#endif  // __CUDACC_RTC__)")


def _append(existing: bytes, to: str, macros: list[str], groups: list[dict], std_cfg: dict | None, moved: Moved,
            cs: ChangeSet, rule_id: str) -> None:
    """Definitions another rule moves into a header an earlier rule made: at its end (inside the
    guard), with the std names they need added to its host branch."""
    text = existing.decode()
    if macros:
        raise ApplyError(f"{to}: moving the macros {', '.join(macros)} into an existing header is not supported",
                         where=to, hint="move them with the rule that creates the header")
    have = set(re.findall(r"using std::(\w+);", text))
    need = sorted(n for n in moved.std_used if n not in stdnames._INTEGERS and n not in have)
    if need:
        m = _HOST_USINGS.search(text)
        if m is None:
            raise ApplyError(f"{to}: no host branch of std names to add {', '.join(need)} to", where=to)
        at = m.start(2)
        cs.edits.append(Edit(to, at, at, "".join(f"using std::{n};\n" for n in need), WHY))
        headers = sorted({stdshim.STD_HEADERS[n] for n in need} - set(re.findall(r"#include <([\w./]+)>", text)))
        if headers:
            ns_open = text.rfind(f"namespace {m.group(3)} {{", 0, m.start(2))
            cs.edits.append(Edit(to, ns_open, ns_open, "".join(f"#include <{h}>\n" for h in headers),
                                 WHY))
    at = source.guard_end(existing)
    cs.edits.append(Edit(to, at, at, _body(groups).lstrip("\n") + "\n", WHY))


def _edit_replaced(data: bytes, replaced: str, inc: str, spans: list[_Span], include: bool, cs: ChangeSet) -> None:
    """The host-mixed header without the moved runs, including the moved header after its last
    file-scope `#include` before the first of them."""
    cut = [[sp.start, sp.end] for sp in spans]
    for span in cut:        # a blank line on both sides: one goes
        if data[:span[0]].endswith(b"\n\n") and data[span[1]:span[1] + 1] == b"\n":
            span[1] += 1
    line = f'#include "{inc}"\n'
    at = _include_point(data, cut[0][0]) if include else -1
    for start, end in cut:
        if start == at:
            cs.edits.append(Edit(replaced, start, end, line, WHY))
            at = -1
        else:
            cs.edits.append(Edit(replaced, start, end, "", WHY))
    if at >= 0:
        cs.edits.append(Edit(replaced, at, at, line, WHY))


def _line_end(data: bytes, end: int) -> int:
    nl = data.find(b"\n", end)
    return len(data) if nl < 0 else nl + 1


def _only_moved(data: bytes, start: int, end: int, decls: list) -> bool:
    """Whether an `#if` block holds nothing but moved declarations, comments and blank lines."""
    body = bytearray(data[data.find(b"\n", start) + 1:data.rfind(b"#endif", start, end)])
    offset = data.find(b"\n", start) + 1
    for d in decls:
        if start <= d.start and d.end <= end:
            a = source.comment_start(data, d.start) - offset
            body[max(a, 0):d.end - offset] = b" " * (d.end - offset - max(a, 0))
    return not bytes(body).strip()


def _include_point(data: bytes, first: int) -> int:
    """Where the header includes the moved one: after its last `#include` at file scope (outside
    `#if` blocks and namespaces) before the first moved run, so the headers it includes first stay
    first; else after its include guard's `#define`, else at its top."""
    blocks = source._conditional_blocks(data)
    before = [i for i in source.includes(data)
              if i.end <= first and not i.nested and not any(b[0] < i.start < b[1] for b in blocks)]
    if before:
        return before[-1].end
    guard = re.match(rb"(?s)(?:\s|//[^\n]*\n|/\*.*?\*/)*#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+\1\b[^\n]*\n", data)
    return guard.end() if guard and guard.end() <= first else 0
