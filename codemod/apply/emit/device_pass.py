"""Device-pass trimming (`migrate.device_pass`): a header's host-only includes, and the declarations
that need them, hidden from nvcc's device passes with `#ifndef __CUDA_ARCH__`, so the .cu units
including it stop parsing them once per target; checked against every such unit before any edit.
A `.cu` unit with no device code of its own (host code launching kernels defined elsewhere) is
hidden whole."""

from __future__ import annotations

import fnmatch
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node

from ...errors import ApplyError
from ..base import source
from ..base.changeset import ChangeSet, Edit

DEVICE_GUARD = "__CUDA_ARCH__"
WHY = "host-only code hidden from device passes"
_NAME_NODES = ("identifier", "type_identifier", "namespace_identifier")
_DEVICE_NODES = ("__global__", "__device__", "__constant__", "__shared__", "__managed__")
_SKIPPED = ("comment", "preproc_include", "preproc_def", "preproc_function_def", "preproc_call", ";", "{", "}",
            "namespace", "#ifndef", "#ifdef", "#if", "#endif", "#define", "preproc_arg")


@dataclass
class Trim:
    """What one `device_pass` entry hides in its header."""
    header: str
    includes: list[str]                                       # the hidden includes, as spelled
    blocks: list[tuple[int, int]] = field(default_factory=list)   # line-aligned byte ranges to guard
    declared: dict[str, int] = field(default_factory=dict)    # names the hidden declarations introduce -> line
    lost_files: set[str] = field(default_factory=set)         # library headers only the hidden includes reach


def _device_guarded(node: Node, data: bytes) -> bool:
    """Whether a node sits in the then-branch of `#ifndef __CUDA_ARCH__` / `#if !defined(__CUDA_ARCH__)`."""
    child, n = node, node.parent
    while n is not None:
        if n.type in ("preproc_if", "preproc_ifdef") and child.type not in ("preproc_else", "preproc_elif") \
                and _hides_device(n, data):
            return True
        child, n = n, n.parent
    return False


def _hides_device(n: Node, data: bytes) -> bool:
    if n.type == "preproc_ifdef":
        name = n.child_by_field_name("name")
        return name is not None and data[name.start_byte:name.end_byte] == DEVICE_GUARD.encode() \
            and data[n.start_byte:name.start_byte].strip() == b"#ifndef"
    cond = n.child_by_field_name("condition")
    text = b"".join(data[cond.start_byte:cond.end_byte].split()) if cond is not None else b""
    return text in (b"!defined(" + DEVICE_GUARD.encode() + b")", b"!defined" + DEVICE_GUARD.encode())


def _names(node: Node, data: bytes, skip: list[tuple[int, int]] = ()) -> list[tuple[str, int]]:
    """(name, byte offset) of the identifiers a node spells, outside the ranges `skip` and the
    branches already hidden from device passes."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if any(s <= n.start_byte and n.end_byte <= e for s, e in skip):
            continue
        if n.type in ("preproc_if", "preproc_ifdef") and _hides_device(n, data):
            stack.extend(c for c in n.children if c.type in ("preproc_else", "preproc_elif"))
            continue
        if n.type in _NAME_NODES and not _declares(n):
            out.append((data[n.start_byte:n.end_byte].decode(), n.start_byte))
        stack.extend(reversed(n.children))
    return out


def _declares(n: Node) -> bool:
    """Whether an identifier is the name a declarator introduces (a parameter, a variable, a member,
    a function being declared): a new name, not a use of one."""
    p = n.parent
    return p is not None and (p.child_by_field_name("declarator") == n or p.child_by_field_name("name") == n
                              and p.type in ("class_specifier", "struct_specifier", "alias_declaration",
                                             "namespace_alias_definition", "enum_specifier"))


def _declared(node: Node, data: bytes) -> str | None:
    if node.type == "namespace_alias_definition":        # namespace fe = cudnn_frontend;
        name = node.child_by_field_name("name")
        return data[name.start_byte:name.end_byte].decode() if name is not None else None
    return source._declared_name(node, data)


def _declarations(data: bytes):
    """(node, end byte) of the namespace-scope declarations of a header (the `;` after a class
    included), in file order; macros, includes and branches hidden from device passes left out."""
    out = []

    def visit(container: Node) -> None:
        for child in container.children:
            if child.type == "namespace_definition":
                body = child.child_by_field_name("body")
                if body is not None:
                    visit(body)
            elif child.type in ("preproc_ifdef", "preproc_if"):
                if _hides_device(child, data):
                    alt = child.child_by_field_name("alternative")
                    if alt is not None:
                        visit(alt)
                else:
                    visit(child)
            elif child.type in ("preproc_else", "linkage_specification"):
                visit(child.child_by_field_name("body") or child)
            elif child.type in ("declaration_list", "ERROR"):
                visit(child)
            elif child.type not in _SKIPPED and child.is_named:
                end = child.end_byte
                nxt = child.next_sibling
                if nxt is not None and nxt.type == ";":
                    end = nxt.end_byte
                out.append((child, end))

    visit(source.parse(data))
    return out


def _line_start(data: bytes, at: int) -> int:
    return data.rfind(b"\n", 0, at) + 1


def _line_end(data: bytes, at: int) -> int:
    nl = data.find(b"\n", at)
    return len(data) if nl < 0 else nl + 1


def _resolve(root: Path, path: str, name: str, system: bool, include_dirs: list[str]) -> str | None:
    bases = ([posixpath.dirname(path)] if not system else []) + list(include_dirs)
    top = root.resolve()
    for base in bases:
        target = posixpath.normpath(posixpath.join(base, name))
        full = (root / target).resolve()
        if full.is_file() and full.is_relative_to(top):
            return full.relative_to(top).as_posix()
    return None


def _closure(root: Path, start: str, include_dirs: list[str], drop: dict[str, set[int]]) -> tuple[set[str], set[str]]:
    """(library files, names of includes outside the library) `start` reaches, without the include
    directives `drop` names (file -> directive start bytes) and those already hidden from device passes."""
    files, outside, todo = set(), set(), [start]
    while todo:
        path = todo.pop()
        if path in files or not (root / path).is_file():
            continue
        files.add(path)
        data = (root / path).read_bytes()
        tree = source.parse(data)
        for inc in source.includes(data):
            if inc.start in drop.get(path, ()):
                continue
            node = tree.descendant_for_byte_range(inc.start, inc.start)
            while node is not None and node.type != "preproc_include":
                node = node.parent
            if node is not None and _device_guarded(node, data):
                continue
            found = _resolve(root, path, inc.name, inc.system, include_dirs)
            if found is None:
                outside.add(inc.name)
            else:
                todo.append(found)
    return files, outside


def _library_names(root: Path, files: set[str]) -> dict[str, str]:
    """Name -> the file declaring it, for the namespace-scope declarations and macros of `files`."""
    out = {}
    for path in sorted(files):
        data = (root / path).read_bytes()
        for node, _ in _declarations(data):
            name = _declared(node, data)
            if name:
                out.setdefault(name, path)
        for n in source._walk(source.parse(data)):
            if n.type in ("preproc_def", "preproc_function_def"):
                out.setdefault(source.node_text(data, n.child_by_field_name("name")), path)
    return out


def _namespaces(root: Path, files: set[str]) -> set[str]:
    """The names of the namespaces `files` open."""
    out = set()
    for path in files:
        data = (root / path).read_bytes()
        for n in source._walk(source.parse(data)):
            if n.type == "namespace_definition" and n.child_by_field_name("name") is not None:
                out.add(source.node_text(data, n.child_by_field_name("name")))
    return out


def _lost_names(root: Path, lost: set[str], kept: set[str]) -> dict[str, str]:
    """Name -> declaring file, of what the library files `lost` declare (their namespaces that no
    file of `kept` opens too)."""
    names = _library_names(root, lost)
    first = {}
    for path in sorted(lost):
        for ns in _namespaces(root, {path}):
            first.setdefault(ns, path)
    names.update({ns: p for ns, p in first.items() if ns not in _namespaces(root, kept)})
    return names


def plan_trim(root: Path, entry: dict, include_dirs: list[str]) -> Trim:
    """The includes `entry["hide"]` names in `entry["header"]` (as spelled, or by the library file
    they resolve to) and, to a fixed point, the declarations that spell a name only they declare
    (`entry["names"]` globs for headers outside the library; the declarations of library headers
    nothing else in the header reaches) or a name such a declaration introduces."""
    header, hide = entry["header"], set(entry["hide"])
    if not (root / header).is_file():
        raise ApplyError(f"migrate/device_pass: {header} is not a file under {root}",
                         hint="name a header of the library, relative to its root")
    data = (root / header).read_bytes()
    tree = source.parse(data)
    drop, spelled = set(), []
    for inc in source.includes(data):
        resolved = _resolve(root, header, inc.name, inc.system, include_dirs)
        if inc.name not in hide and resolved not in hide:
            continue
        node = tree.descendant_for_byte_range(inc.start, inc.start)
        while node is not None and node.type != "preproc_include":
            node = node.parent
        spelled.append(inc.name)
        if node is not None and not _device_guarded(node, data):
            drop.add(inc.start)
    missing = sorted(h for h in hide if h not in spelled and not any(
        _resolve(root, header, s, False, include_dirs) == h for s in spelled))
    if missing:
        raise ApplyError(f"migrate/device_pass: {header} does not include {', '.join(missing)}", where=header,
                         hint="list includes as the header spells them, or by the library file they name")
    trim = Trim(header, spelled)
    before, _ = _closure(root, header, include_dirs, {})
    after, _ = _closure(root, header, include_dirs, {header: drop | _guarded_includes(data)})
    trim.lost_files = before - after
    lost = set(_lost_names(root, trim.lost_files, after))
    patterns = list(entry.get("names", []))
    ranges = [(_line_start(data, i.start), i.end) for i in source.includes(data) if i.start in drop]
    decls = _declarations(data)
    hidden: set[int] = set()
    changed = True
    while changed:
        changed = False
        for k, (node, end) in enumerate(decls):
            if k in hidden:
                continue
            names = {n for n, _ in _names(node, data)}
            if names & (lost | set(trim.declared)) or any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns):
                hidden.add(k)
                changed = True
                name = _declared(node, data)
                if name:
                    trim.declared[name] = data[:node.start_byte].count(b"\n") + 1
    for k in sorted(hidden):
        node, end = decls[k]
        ranges.append((source.comment_start(data, node.start_byte), _line_end(data, end)))
    trim.blocks = _merge(data, sorted(ranges))
    return trim


def _guarded_includes(data: bytes) -> set[int]:
    tree = source.parse(data)
    out = set()
    for inc in source.includes(data):
        node = tree.descendant_for_byte_range(inc.start, inc.start)
        while node is not None and node.type != "preproc_include":
            node = node.parent
        if node is not None and _device_guarded(node, data):
            out.add(inc.start)
    return out


def _merge(data: bytes, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ranges with only blank lines between them share one guard."""
    out: list[tuple[int, int]] = []
    for start, end in ranges:
        if out and not data[out[-1][1]:start].strip():
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def check_units(root: Path, trim: Trim, entry: dict, include_dirs: list[str], units: list[str]) -> None:
    """Every .cu unit reaching the header must still compile in its device passes: no file it
    reaches once the header is trimmed spells a name only the hidden part declared (the hidden
    declarations, library headers the unit no longer reaches, `names` globs when it reaches none of
    the hidden headers outside the library). ApplyError naming the first use otherwise."""
    data = (root / trim.header).read_bytes()
    drop = {trim.header: {i.start for i in source.includes(data)
                          if i.name in trim.includes and any(s <= i.start < e for s, e in trim.blocks)}
            | _guarded_includes(data)}
    outside_hidden = {n for n in trim.includes if _resolve(root, trim.header, n, False, include_dirs) is None
                      and _resolve(root, trim.header, n, True, include_dirs) is None}
    for unit in units:
        before, _ = _closure(root, unit, include_dirs, {})
        files, outside = _closure(root, unit, include_dirs, drop)
        lost = _lost_names(root, before - files, files)
        patterns = list(entry.get("names", [])) if not (outside & outside_hidden) else []
        for path in sorted(files):
            text = (root / path).read_bytes()
            skip = trim.blocks if path == trim.header else []
            for name, at in _names(source.parse(text), text, skip):
                why = None
                if name in trim.declared:
                    why = f"declared at {trim.header}:{trim.declared[name]}, which the trim hides"
                elif name in lost:
                    why = f"declared in {lost[name]}, which {unit} reaches only through the hidden includes"
                elif any(fnmatch.fnmatchcase(name, p) for p in patterns):
                    why = f"a name of the hidden headers ({', '.join(entry['names'])})"
                if why:
                    line = text[:at].count(b"\n") + 1
                    raise ApplyError(
                        f"{path}:{line}: `{name}` is {why}; the device passes of {unit} would not see it",
                        where=f"{path}:{line}",
                        hint=f"leave {trim.header} out of migrate.device_pass, or hide that use from device "
                             "passes too")


def plan_unit(root: Path, entry: dict) -> tuple[int, int] | None:
    """The byte range of a `.cu` unit to hide whole: from its first line after the leading comment
    (the license) to its end; None when it is hidden already."""
    unit = entry["unit"]
    if not unit.endswith(".cu") or not (root / unit).is_file():
        raise ApplyError(f"migrate/device_pass: {unit} is not a .cu unit under {root}",
                         hint="name a CUDA translation unit of the library, relative to its root")
    data = (root / unit).read_bytes()
    tops = [c for c in source.parse(data).children if c.type != "comment"]
    if not tops or (len(tops) == 1 and tops[0].type in ("preproc_ifdef", "preproc_if")
                    and _hides_device(tops[0], data)):
        return None
    return _line_start(data, tops[0].start_byte), len(data)


def check_unit(root: Path, entry: dict, include_dirs: list[str]) -> None:
    """A unit hidden whole must hold no device code of its own (`__global__`, `__device__` functions
    or variables) and spell no kernel that a file it includes defines (a template it would
    instantiate, or a kernel whose only definition its device pass compiles): the kernels it launches
    are defined and compiled in other units. ApplyError naming the first such place otherwise."""
    unit = entry["unit"]
    data = (root / unit).read_bytes()
    tree = source.parse(data)
    for n in source._walk(tree):
        if n.type in _DEVICE_NODES:
            line = data[:n.start_byte].count(b"\n") + 1
            raise ApplyError(f"{unit}:{line}: `{n.type}`: the unit has device code of its own, which its device "
                             "passes compile", where=f"{unit}:{line}",
                             hint="trim the headers it includes instead (device_pass `header`)")
    files, _ = _closure(root, unit, include_dirs, {})
    defined = {}
    for path in sorted(files - {unit}):
        text = (root / path).read_bytes()
        for n in source._walk(source.parse(text)):
            if n.type == "function_definition" and any(c.type == "__global__" for c in source._walk(n)
                                                       if c.start_byte < (n.child_by_field_name("body") or n).start_byte):
                decl = n.child_by_field_name("declarator")
                while decl is not None and decl.type not in ("identifier", "field_identifier", "qualified_identifier"):
                    decl = decl.child_by_field_name("declarator")
                if decl is not None:
                    defined.setdefault(source.node_text(text, decl).split("::")[-1], path)
    for name, at in _names(tree, data):
        if name in defined:
            line = data[:at].count(b"\n") + 1
            raise ApplyError(f"{unit}:{line}: `{name}` is a kernel {defined[name]} defines: hidden from the device "
                             "passes, the unit would launch it without its device code", where=f"{unit}:{line}",
                             hint="leave the unit out of migrate.device_pass")


def edits(root: Path, spec, cs: ChangeSet) -> None:
    """The guards of every `migrate.device_pass` entry (none once they are there: a second apply
    finds nothing to hide), after checking the .cu units that include each header."""
    from .generate import render
    from ..base.tree import units_reaching

    # units hidden whole have empty device passes: the header checks leave them out
    whole_units = {e["unit"] for e in spec.raw.get("device_pass", []) if "unit" in e}
    for entry in spec.raw.get("device_pass", []):
        if "unit" in entry:
            whole = plan_unit(root, entry)
            if whole is None:
                continue
            check_unit(root, entry, spec.include_dirs)
            data = (root / entry["unit"]).read_bytes()
            start, end = whole
            cs.edits.append(Edit(entry["unit"], start, start,
                                 render("device_pass_guard.h.j2", guard=DEVICE_GUARD, reason=entry["reason"],
                                        first=True, end=False), WHY))
            cs.edits.append(Edit(entry["unit"], end, end, ("" if data.endswith(b"\n") else "\n")
                                 + render("device_pass_guard.h.j2", guard=DEVICE_GUARD, end=True), WHY))
            cs.notes.append(f"{entry['unit']}: hidden whole from nvcc's device passes by #ifndef {DEVICE_GUARD} "
                            "(no device code of its own; the kernels it launches are defined in other units)")
            continue
        trim = plan_trim(root, entry, spec.include_dirs)
        units = [u for u in units_reaching(root, {trim.header}, spec.include_dirs)
                 if u.endswith(".cu") and u not in whole_units]
        if not trim.blocks:
            continue
        check_units(root, trim, entry, spec.include_dirs, units)
        data = (root / trim.header).read_bytes()
        for k, (start, end) in enumerate(trim.blocks):
            cs.edits.append(Edit(trim.header, start, start,
                                 render("device_pass_guard.h.j2", guard=DEVICE_GUARD, reason=entry["reason"],
                                        first=k == 0, end=False),
                                 WHY))
            cs.edits.append(Edit(trim.header, end, end,
                                 render("device_pass_guard.h.j2", guard=DEVICE_GUARD, end=True),
                                 WHY))
        line = data[:trim.blocks[0][0]].count(b"\n") + 1
        cs.notes.append(f"{trim.header}:{line}: {', '.join(trim.includes)} and {len(trim.declared)} declaration(s) "
                        f"needing them ({', '.join(trim.declared)}) hidden from nvcc's device passes by "
                        f"#ifndef {DEVICE_GUARD}: {len(units)} .cu unit(s) include it"
                        + (f" ({', '.join(units)})" if units else ""))
