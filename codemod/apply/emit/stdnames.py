"""Standard names in device code without `namespace std`: NVRTC has no standard library, so the
`std::X` uses that the kernel strings reach are respelled in the target's own namespace (rule key
`kernel_strings.std_names`; TE: `transformer_engine::detail`, as TE's own NVRTC kernels do), and
the definitions that namespace lacks are added to the target header that holds it."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import ApplyError
from ..base import source, stacking, stdshim
from ..base.changeset import RTC_ENDIF

_USE = re.compile(rb"(::)?\bstd::([A-Za-z_]\w*)")
_INTEGERS = [n for n in stdshim.DEFINITIONS if re.fullmatch(r"u?int(8|16|32|64|ptr)_t", n)]
_SKIP_NODES = {"comment", "string_literal", "raw_string_literal", "char_literal", "system_lib_string"}


def _namespaces(root, data: bytes) -> list[tuple[int, int, str]]:
    out = []
    for n in source._walk(root):
        if n.type == "namespace_definition":
            name = n.child_by_field_name("name")
            out.append((n.start_byte, n.end_byte, data[name.start_byte:name.end_byte].decode() if name else ""))
    return out


def uses(data: bytes, skip: list[tuple[int, int]] = ()) -> list[tuple[int, int, str, list[str]]]:
    """(start, end, name, enclosing namespaces) of each `std::NAME` (or `::std::NAME`) with a name
    codemod can define (stdshim.DEFINITIONS), outside comments, strings and the `skip` ranges."""
    root = source.parse(data)
    ignored = [(n.start_byte, n.end_byte) for n in source._walk(root) if n.type in _SKIP_NODES] + list(skip) \
        + host_branches(data)
    spaces = _namespaces(root, data)
    out = []
    for m in _USE.finditer(data):
        name = m.group(2).decode()
        if name not in stdshim.DEFINITIONS or any(a <= m.start() < b for a, b in ignored):
            continue
        chain = [ns for a, b, ns in sorted(spaces) if a <= m.start() < b]
        out.append((m.start(), m.end(), name, chain))
    return out


_NOT_RTC = re.compile(r"#\s*(?:ifndef\s+__CUDACC_RTC__|if\s+!\s*defined\s*\(?\s*__CUDACC_RTC__\s*\)?)\s*$")
_RTC = re.compile(r"#\s*(?:ifdef\s+__CUDACC_RTC__|if\s+defined\s*\(?\s*__CUDACC_RTC__\s*\)?)\s*$")


def host_branches(data: bytes) -> list[tuple[int, int]]:
    """The spans NVRTC never compiles: the `#ifndef __CUDACC_RTC__` branch of a block, the `#else`
    of an `#ifdef __CUDACC_RTC__` (the standard library's names for the library's own build)."""
    out = []
    for start, end, branches in source._conditional_blocks(data):
        marks = [at for at, _ in branches[1:]] + [data.rfind(b"#endif", start, end)]
        first = branches[0][1]
        if _NOT_RTC.match(first):
            out.append((start, marks[0]))
        elif _RTC.match(first) and len(branches) > 1:
            out.append((branches[1][0], marks[-1]))
    return out


def spelling(target: str, chain: list[str], rooted: bool, clashes: frozenset | None = None) -> str:
    """How a use inside namespaces `chain` names `target` (`transformer_engine::detail`): the last
    component alone inside its parent namespace (TE writes `detail::is_same_v` there), and below it
    when `clashes` (namespace_clashes) shows that no namespace in between declares one of that name;
    else in full."""
    parts = target.split("::")
    parent = parts[:-1]
    if not rooted and chain == parent:
        return parts[-1]
    if not rooted and clashes is not None and chain[:len(parent)] == parent and \
            not any(tuple(chain[:k]) in clashes for k in range(len(parent) + 1, len(chain) + 1)):
        return parts[-1]
    return ("::" if rooted else "") + target


_C_SOURCES = {".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".cxx"}
_USING = re.compile(rb"\busing\s+namespace\s+((?:::)?\w+(?:\s*::\s*\w+)*)\s*;")


def namespace_clashes(root: Path, target: str) -> frozenset | None:
    """The namespaces (name chains) of the library under `root` that declare a namespace named like
    `target`'s last component other than `target` (TE: `transformer_engine::dispatch::fp8::detail`):
    a use below one of them must spell `target` in full. None, so that every use below the parent is
    spelled in full, when a using-directive anywhere in the library nominates a namespace named like
    one of those (it would bring that other namespace into an unrelated scope)."""
    last = target.split("::")[-1]
    declares = re.compile(rb"\bnamespace\s+(?:\w+\s*::\s*)*" + re.escape(last.encode()) + rb"\b")
    found, usings = set(), set()
    for path in sorted(root.rglob("*")):
        if path.suffix not in _C_SOURCES or not path.is_file():
            continue
        data = path.read_bytes()
        usings |= {m.group(1).split(b"::")[-1].strip().decode() for m in _USING.finditer(data)}
        if not declares.search(data):
            continue
        spaces = sorted(_namespaces(source.parse(data), data))
        for start, end, name in spaces:
            if name.split("::")[-1].strip() != last:
                continue
            outer = [n for a, b, n in spaces if a < start and end <= b]
            chain = [c.strip() for n in outer + [name] for c in n.split("::")]
            if "::".join(chain) != target:
                found.add(tuple(chain[:-1]))
    if any(c and c[-1] in usings for c in found):
        return None
    return frozenset(found)


def replacement(target: str, chain: list[str], rooted: bool, name: str, clashes: frozenset | None = None) -> str:
    """What `std::name` becomes: a `<cstdint>` integer the global one (`::int32_t`, as `<cstdint>`
    declares it globally too), any other name in `target` (`spelling`)."""
    if name in _INTEGERS:
        return f"::{name}"
    return f"{spelling(target, chain, rooted, clashes)}::{name}"


def respell(text: str, target: str, chain: list[str] | None = None,
            skip: list[tuple[int, int]] = ()) -> tuple[str, set[str]]:
    """`text` with its std uses respelled (for copied declarations, `chain` is their namespace;
    otherwise each use's own) and the names used."""
    data = text.encode()
    names: set[str] = set()
    for start, end, name, own in reversed(uses(data, skip)):
        rooted = data[start:start + 2] == b"::"
        new = replacement(target, own if chain is None else chain, rooted, name).encode()
        data = data[:start] + new + data[end:]
        names.add(name)
    return data.decode(), names


def additions(header: str, data: bytes, target: str, names: set[str], rule_id: str = "std_names",
              later: frozenset = frozenset()) -> list[tuple[int, str]]:
    """The (offset, text) insertions into `header` so that `target` has `names` in both builds:
    under NVRTC codemod's definitions of those (and what they need) that the header does not declare
    in `target` already; in the library's own build the standard library's, by using-declarations
    (the respelled code then means what it meant before), with the standard headers they come from
    included at file scope before the namespace block. The definitions go before the closing brace
    of the header's `namespace` block for `target` (before the blocks of rules migrated after
    `rule_id`, on a regeneration: stacking.py)."""
    names = {n for n in names if n not in _INTEGERS}       # global: integer_additions
    have = _declared_in(data, target)
    host_have = _declared_in(_without_rtc_definitions(data), target) | _using_std(data)
    texts, unknown = stdshim.definitions(sorted(names), have)
    if unknown:
        raise ApplyError(f"no definition of std::{', std::'.join(unknown)} for {target}", where=header)
    host = sorted(n for n in names if n not in host_have)
    if not texts and not host:
        return []
    body = "\n".join(texts)
    usings = "\n".join(f"using std::{n};" for n in host)
    grown = _grown_block(data, rule_id, body, usings)
    if grown is not None:       # the rule's own block from an earlier change takes the names
        return _std_includes(header, data, target, host, rule_id, later) + grown
    if texts:
        block = f"#ifdef __CUDACC_RTC__\n{body}\n" + (f"#else\n{usings}\n" if host else "") + "#endif  // __CUDACC_RTC__"
    else:
        block = f"#ifndef __CUDACC_RTC__\n{usings}\n#endif  // __CUDACC_RTC__"
    note = f"// std names NVRTC lacks, for device code {stacking.note(rule_id)}."
    close = _namespace_close(data, target)
    if close >= 0:
        close = stacking.before_first(data.decode(), stacking.std_names_starts(data.decode()), close, later)
        return _std_includes(header, data, target, host, rule_id, later) + [(close, f"\n{note}\n{block}\n\n")]
    # NOTE: a new namespace goes at the top of the parent's first block: the header's own uses,
    # respelled into it, may come anywhere after (TE 6377ca161's utils.cuh uses is_same_v in
    # abs_val, 80 lines before its namespace block ends: at the end, nvcc failed on the host build).
    parent, _, last = target.rpartition("::")
    start = _namespace_close(data, parent, opening=True) if parent else -1
    if start < 0:
        raise ApplyError(f"{header}: no `namespace` block of {parent or target} to add "
                         f"{', '.join(_closure(sorted(names), have))} to",
                         where=header, hint="check migrate/kernel_strings/std_names in the rule")
    return _std_includes(header, data, target, host, rule_id, later) + [(start, f"\n{note}\nnamespace {last} {{\n\n{block}\n\n}}  // namespace {last}\n\n")]


def _grown_block(data: bytes, rule_id: str, body: str, usings: str) -> list[tuple[int, str]] | None:
    """Insertions adding definitions (`body`) and using-declarations (`usings`) to the std-names
    block `rule_id` added before (an earlier change of the same rule: one block per rule), or None
    when it has none of the form `#ifdef __CUDACC_RTC__ ... #else ... #endif` to take them."""
    at = next((at for at, rule in stacking.std_names_starts(data.decode()) if rule == rule_id), -1)
    if at < 0 or not data[at:].split(b"\n", 3)[2].startswith(b"#ifdef"):
        return None
    end = data.find(RTC_ENDIF.encode(), at)
    els = data.find(b"\n#else\n", at, end) if end >= 0 else -1
    if els < 0:
        return None
    out = [(els + 1, body + "\n")] if body else []
    return out + ([(end, usings + "\n")] if usings else [])


def defined_names(names: set[str], data: bytes, target: str) -> list[str]:
    """The names `additions` defines under NVRTC (with what they need), for the notes."""
    return _closure(sorted(n for n in names if n not in _INTEGERS), _declared_in(data, target))


_RTC_DEFINITIONS = re.compile(rb"#ifdef __CUDACC_RTC__\n.*?\n#(?:else|endif)", re.S)


def _without_rtc_definitions(data: bytes) -> bytes:
    """`data` with the NVRTC branches of std-names blocks blanked (offsets kept)."""
    return _RTC_DEFINITIONS.sub(lambda m: re.sub(rb"[^\n]", b" ", m.group(0)), data)


def _using_std(data: bytes) -> set[str]:
    return {m.group(1).decode() for m in re.finditer(rb"\busing\s+std::(\w+)\s*;", data)}


def _std_includes(header: str, data: bytes, target: str, names: list[str], rule_id: str,
                  later: frozenset) -> list[tuple[int, str]]:
    """The standard headers `names` come from, included for the library's own build at file scope
    before the header's first namespace block of `target`'s outermost namespace (none already
    included)."""
    wanted = sorted({stdshim.STD_HEADERS[n] for n in names} - {
        m.group(1).decode() for m in re.finditer(rb"#\s*include\s*<([\w./]+)>", data)})
    if not wanted:
        return []
    lines = "\n".join(f"#include <{h}>" for h in wanted)
    own = [at for at, rule in stacking.std_include_starts(data.decode()) if rule == rule_id]
    if own:             # the rule's own block from an earlier change takes them, before its #endif
        return [(data.find(RTC_ENDIF.encode(), own[0]), lines + "\n")]
    at = _before_namespace(header, data, target.split("::")[0])
    # before every rule's <cstdint> block (which each rule puts last before the namespace): a
    # rule's two blocks keep their order whichever rules came before or after it
    at = min([at] + [o for o, _ in stacking.integer_starts(data.decode()) if o <= at])
    at = stacking.before_first(data.decode(), stacking.std_include_starts(data.decode()), at, later)
    return [(at, f"#ifndef __CUDACC_RTC__\n// std headers of the names below {stacking.note(rule_id)}.\n{lines}\n"
                 "#endif  // __CUDACC_RTC__\n\n")]


def _declared_in(data: bytes, target: str) -> set[str]:
    """The names of stdshim.DEFINITIONS that `namespace target` of the header declares already (the
    library's own traits, or an earlier rule's additions): a struct/class, an alias, a variable
    template or a function definition of that name inside the namespace's blocks."""
    bodies = []
    for n in source._walk(source.parse(data)):
        if n.type == "namespace_definition" and _qualified(n, data) == target:
            bodies.append(data[n.start_byte:n.end_byte])
    found = set()
    for name in stdshim.DEFINITIONS:
        e = re.escape(name).encode()
        pats = [rb"\b(?:struct|class)\s+" + e + rb"\b", rb"\busing\s+" + e + rb"\s*=",
                rb"\bconstexpr\s+\w+\s+" + e + rb"\s*=",
                # a function at namespace scope: its line is not indented (members of a struct are)
                rb"(?m)^[^\s#/][^\n]*[&*\s]" + e + rb"\s*\([^;{]*\{"]
        if any(re.search(p, body) for body in bodies for p in pats):
            found.add(name)
    return found


def _qualified(node, data: bytes) -> str:
    """The full name of a namespace_definition node (its enclosing namespaces joined by ::)."""
    parts = []
    while node is not None:
        if node.type == "namespace_definition":
            name = node.child_by_field_name("name")
            parts.append(data[name.start_byte:name.end_byte].decode() if name else "")
        node = node.parent
    return "::".join(reversed(parts))


def _closure(names: list[str], have: set[str]) -> list[str]:
    """`names` and what their definitions need, in definition order, without those in `have`."""
    out: list[str] = []

    def add(n: str) -> None:
        if n in out or n in have:
            return
        for d in stdshim.DEFINITIONS[n][0]:
            add(d)
        out.append(n)

    for n in names:
        add(n)
    return out


def _namespace_close(data: bytes, target: str, opening: bool = False) -> int:
    """Offset of the start of the line holding the closing brace of the first block of namespace
    `target` (nested `namespace a { namespace b {` or `namespace a::b {`); with `opening`, of the
    line after its opening brace; -1 when none."""
    parts = target.split("::")

    def visit(container, depth_parts: list[str]) -> int:
        for child in container.children:
            if child.type != "namespace_definition":
                if child.type in ("preproc_ifdef", "preproc_if", "preproc_else"):
                    r = visit(child, depth_parts)
                    if r >= 0:
                        return r
                continue
            name = child.child_by_field_name("name")
            spelled = data[name.start_byte:name.end_byte].decode().split("::") if name else [""]
            if spelled != depth_parts[:len(spelled)]:
                continue
            rest = depth_parts[len(spelled):]
            body = child.child_by_field_name("body")
            if body is None:
                continue
            if not rest:
                if opening:
                    return data.find(b"\n", body.start_byte) + 1
                return data.rfind(b"\n", 0, body.end_byte - 1) + 1
            r = visit(body, rest)
            if r >= 0:
                return r
        return -1

    return visit(source.parse(data), parts)



def integer_names(texts: list[bytes]) -> set[str]:
    """The `<cstdint>` integer names (`int32_t`, ...) that code spells unqualified: in real
    `<cstdint>` they are global too, so defining them globally under NVRTC adds nothing to std."""
    found = set()
    for data in texts:
        for name in _INTEGERS:
            if re.search(rb"(?<![\w:])" + name.encode() + rb"\b", data):
                found.add(name)
    return found


def integer_additions(header: str, data: bytes, target: str, names: set[str], rule_id: str = "std_names",
                      later: frozenset = frozenset()) -> tuple[int, str, list[str]]:
    """(offset, text, names) defining under `__CUDACC_RTC__` the integer names `header` does not
    define yet (TE's utils.cuh has the unsigned ones), before its namespace block of `target`."""
    missing = sorted(n for n in names if not re.search(rb"\busing\s+" + n.encode() + rb"\s*=|\btypedef\b[^;]*\b"
                                                       + n.encode() + rb"\s*;", data))
    if not missing:
        return -1, "", []
    at = _before_namespace(header, data, target.split("::")[0], missing)
    body = "\n".join(stdshim.DEFINITIONS[n][1] for n in missing)
    at = stacking.before_first(data.decode(), stacking.integer_starts(data.decode()), at, later)
    return at, (f"#ifdef __CUDACC_RTC__\n// <cstdint> names NVRTC lacks {stacking.note(rule_id)}.\n{body}\n"
                "#endif  // __CUDACC_RTC__\n\n"), missing


def _before_namespace(header: str, data: bytes, first: str, what: list[str] = ()) -> int:
    """Offset of the line (or the comment above it) opening the header's first file-scope block of
    namespace `first`."""
    at = -1
    for child in source.parse(data).children:
        node = child
        if node.type == "preproc_ifdef":      # the include guard
            for inner in node.children:
                name = inner.child_by_field_name("name") if inner.type == "namespace_definition" else None
                if name is not None and data[name.start_byte:name.end_byte].decode().split("::")[0] == first:
                    at = inner.start_byte
                    break
        elif node.type == "namespace_definition":
            name = node.child_by_field_name("name")
            if name is not None and data[name.start_byte:name.end_byte].decode().split("::")[0] == first:
                at = node.start_byte
        if at >= 0:
            break
    if at < 0:
        raise ApplyError(f"{header}: no `namespace {first}` to put {', '.join(what) or 'std names'} before",
                         where=header)
    return source.comment_start(data, data.rfind(b"\n", 0, at) + 1)    # before the block's own comment
