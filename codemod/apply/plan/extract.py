"""Kernels defined in a translation unit: their definitions and the device-side declarations they
use, moved verbatim (tree-sitter byte ranges) into a header next to the .cu, which the .cu then
includes and the NVRTC program includes too: one source of truth for the device code."""

from __future__ import annotations

import posixpath
import re
import textwrap
from dataclasses import dataclass, field

from tree_sitter import Node

from ...frontend.treesitter import scan_bytes
from ..base import source

_DEVICE = (b"__device__", b"__global__")
NEWLINE = b"\n"
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_STRIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"', re.S)


class Refused(Exception):
    """The unit's device code cannot be moved; the message says why and what to do."""


@dataclass
class Item:
    """One namespace-scope declaration of the unit."""

    kind: str            # kernel, device, host, type, alias, variable, macro, using, include, other
    name: str | None
    start: int           # with the comment lines directly above it
    end: int             # through the end of its last line
    node: Node
    in_else: bool = False


@dataclass
class Extraction:
    unit: str                                        # the .cu
    header: str                                      # the new header (repo path)
    text: str                                        # its content
    removed: list[tuple[int, int]] = field(default_factory=list)   # byte ranges cut from the .cu
    include_at: int = 0                              # where the .cu includes the header
    moved: list[str] = field(default_factory=list)   # names moved, in file order
    guard: str = ""                                  # the new header's include guard

    @property
    def include_line(self) -> str:
        return f'#include "{posixpath.basename(self.header)}"\n'


def header_path(unit: str) -> str:
    """`activation/scaled_activation.cu` -> `activation/scaled_activation_kernels.cuh`."""
    stem = posixpath.splitext(unit)[0]
    return f"{stem}_kernels.cuh"


def _line_start(data: bytes, offset: int) -> int:
    return data.rfind(b"\n", 0, offset) + 1


def _line_end(data: bytes, offset: int) -> int:
    nl = data.find(b"\n", offset)
    return len(data) if nl < 0 else nl + 1


def _identifiers(text: bytes) -> set[str]:
    return set(_IDENT.findall(_STRIP.sub(" ", text.decode(errors="replace"))))


def _kind(node: Node, data: bytes, kernel_starts: set[int]) -> tuple[str, str | None]:
    t = node.type
    if t == "preproc_include":
        return "include", None
    if t in ("preproc_def", "preproc_function_def"):
        name = node.child_by_field_name("name")
        return "macro", data[name.start_byte:name.end_byte].decode()
    if t in ("using_declaration", "namespace_alias_definition"):
        return "using", None
    if t == "alias_declaration":
        name = node.child_by_field_name("name")
        return "alias", data[name.start_byte:name.end_byte].decode()
    if t == "type_definition":
        names = [n for n in source._walk(node.child_by_field_name("declarator") or node)
                 if n.type == "type_identifier"]
        return "alias", data[names[0].start_byte:names[0].end_byte].decode() if names else None
    if t in ("struct_specifier", "class_specifier", "enum_specifier", "union_specifier"):
        name = node.child_by_field_name("name")
        return "type", data[name.start_byte:name.end_byte].decode() if name is not None else None
    if node.start_byte in kernel_starts:
        return "kernel", None
    inner = node
    while inner.type == "template_declaration":
        inner = next((c for c in inner.named_children if c.type not in ("template_parameter_list", "comment")), inner)
        if inner is node:
            break
    name = source._declared_name(node, data) if t in ("template_declaration", "function_definition", "declaration") else None
    if inner.type in ("struct_specifier", "class_specifier", "alias_declaration"):
        if inner.type == "alias_declaration":
            n = inner.child_by_field_name("name")
            name = data[n.start_byte:n.end_byte].decode()
        return ("alias" if inner.type == "alias_declaration" else "type"), name
    head_end = inner.child_by_field_name("body")
    head = data[node.start_byte:(head_end.start_byte if head_end is not None else node.end_byte)]
    if inner.type == "function_definition":
        if b"__global__" in head:
            return "kernel", name
        return ("device" if any(tok in head for tok in _DEVICE) else "host"), name
    if inner.type == "declaration":
        if b"__global__" in head:
            return "kernel", name
        words = set(re.findall(rb"\w+", head.split(b"=")[0]))
        if words & {b"constexpr", b"__constant__", b"__device__"}:
            return "variable", name
        is_function = any(n.type == "function_declarator" for n in source._walk(inner))
        return ("host" if is_function or name else "other"), name
    return "other", None


def _items(data: bytes, root: Node, kernel_starts: set[int]) -> tuple[list[Item], dict[int, list]]:
    """Every namespace-scope item in file order, and for each its chain of containers (namespace
    and conditional nodes, outermost first)."""
    items: list[Item] = []
    chains: dict[int, list] = {}

    def visit(container: Node, chain: list, in_else: bool) -> None:
        children = container.children
        for i, child in enumerate(children):
            if child.type == "namespace_definition":
                body = child.child_by_field_name("body")
                if body is not None:
                    visit(body, chain + [child], in_else)
                continue
            if child.type in ("preproc_if", "preproc_ifdef"):
                visit(child, chain + [child], in_else)
                continue
            if child.type in ("preproc_else", "preproc_elif", "preproc_elifdef"):
                visit(child, chain, True)
                continue
            if child.type == "linkage_specification":
                items.append(Item("host", None, child.start_byte, child.end_byte, child, in_else))
                chains[child.start_byte] = chain
                continue
            if not child.is_named or child.type in ("comment", "identifier") or \
                    (container.type in ("preproc_if", "preproc_ifdef", "preproc_elif") and
                     child == container.child_by_field_name("condition")) or \
                    (container.type == "preproc_ifdef" and child == container.child_by_field_name("name")):
                continue
            kind, name = _kind(child, data, kernel_starts)
            end = child.end_byte
            if i + 1 < len(children) and children[i + 1].type == ";":
                end = children[i + 1].end_byte
            start = source.comment_start(data, child.start_byte)
            items.append(Item(kind, name, start, end, child, in_else))
            chains[child.start_byte] = chain

    visit(root, [], False)
    return items, chains


def extract(root, unit: str, kernels: set[str], rule_id: str, guard: str,
            arguments: set[str] = frozenset()) -> Extraction:
    """Move the definitions of `kernels` (unqualified names) defined in `unit` and their
    device-side dependencies into `header_path(unit)`; `arguments`: identifiers of the variants'
    template arguments (a device function passed as `OP` must be visible to the NVRTC program
    too); `guard`: the new header's include guard, in the target's convention (the stubs test it:
    kernels.h declares a unit's kernels only where their device code was included). Raises Refused."""
    data = (root / unit).read_bytes()
    header = header_path(unit)
    if (root / header).exists():
        raise Refused(f"{header} exists already; rename it or move the kernels into a header by hand")
    tree = source.parse(source.without_bare_invocations(data))   # macro lines stay in the unit
    decls = [d for d in scan_bytes(unit, data).kernels if d.name in kernels and d.is_definition]
    items, chains = _items(data, tree, {d.start for d in decls})
    kernel_items = [it for it in items if it.node.start_byte in {d.start for d in decls}]
    for it, d in ((it, d) for it in kernel_items for d in decls if d.start == it.node.start_byte):
        it.name = d.name
    if not kernel_items:
        raise Refused(f"no namespace-scope definition of {', '.join(sorted(kernels))} in {unit}")
    by_name: dict[str, list[Item]] = {}
    for it in items:
        if it.name:
            by_name.setdefault(it.name, []).append(it)

    def where(it: Item) -> str:
        return f"{unit}:{data.count(NEWLINE, 0, it.node.start_byte) + 1}"

    needed: dict[int, Item] = {}
    todo = list(kernel_items) + [it for name in sorted(arguments) for it in by_name.get(name, [])
                                 if it.kind in ("device", "type", "alias", "variable")]
    while todo:
        it = todo.pop()
        if it.node.start_byte in needed:
            continue
        if it.in_else:
            raise Refused(f"{it.name or 'a declaration'} at {where(it)} sits in an #else branch; move the "
                          "kernel and its device code into a header by hand")
        needed[it.node.start_byte] = it
        for ident in sorted(_identifiers(data[it.node.start_byte:it.node.end_byte])):
            for dep in by_name.get(ident, []):
                if dep is it or dep.node.start_byte in needed:
                    continue
                if dep.kind == "host":
                    raise Refused(f"device code at {where(it)} uses `{ident}`, host code defined at {where(dep)}; "
                                  "move it into a header (or make it __host__ __device__)")
                if dep.kind == "macro" and dep.start > it.start:
                    raise Refused(f"device code at {where(it)} uses the macro `{ident}` defined after it at "
                                  f"{where(dep)}; define the macro in a header")
                if dep.kind == "other":
                    raise Refused(f"device code at {where(it)} uses `{ident}`, declared at {where(dep)} in a "
                                  "form codemod does not move; move it into a header")
                todo.append(dep)
    moved = sorted(needed.values(), key=lambda it: it.start)
    incs = [it for it in items if it.kind == "include" and not chains[it.node.start_byte] and it.start < moved[0].start]
    if not incs:
        raise Refused(f"{unit} includes nothing before its device code; codemod puts the new header's "
                      "#include after the unit's includes")
    include_at = _line_end(data, incs[-1].end - 1)
    if any(it.start < include_at for it in moved):
        raise Refused(f"device code of {unit} starts before its last #include; move the includes up")
    for it in moved:       # whole lines move: code sharing a line with a moved declaration would go too
        before = data[_line_start(data, it.node.start_byte):it.node.start_byte]
        if before.strip() or _body_end(data, it) != _line_end(data, it.end - 1):
            raise Refused(f"{it.name or 'a declaration'} at {where(it)} shares its line with other code; put it "
                          "on a line of its own")
    for it, banner in _banners_heading_moved_code(data, items, moved, include_at):
        it.start = banner      # the banner goes with the code it heads
    text = _header_text(data, unit, header, moved, items, chains, incs, rule_id, guard)
    removed = []
    for it in moved:
        s, e = _line_start(data, it.start), _line_end(data, it.end - 1)
        if data[e:e + 1] == b"\n":      # and one blank line after it
            e += 1
        removed.append((s, e))
    return Extraction(unit, header, text, removed, include_at,
                      [it.name or data[it.node.start_byte:it.node.end_byte].decode().split("\n")[0] for it in moved],
                      guard)


def _banners_heading_moved_code(data: bytes, items: list[Item], moved: list[Item], after: int):
    """(first item, banner start) for each banner comment whose code is all moved: a block of
    comment lines standing alone (a blank line or an opening brace above it, a blank line below)
    after the unit's includes, followed by items up to the next such block that are all moved and
    not nested in another (`// ---- Gated kernels ----` above the moved gated kernels). Left in the
    unit it would head nothing, or the host code after it."""
    lines = data[after:].split(b"\n")
    starts, at = [], after
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    blank = [not line.strip() for line in lines]
    comment = [line.strip().startswith(b"//") for line in lines]
    blocks, i = [], 0
    while i < len(lines):
        if comment[i] and (i == 0 or blank[i - 1] or lines[i - 1].rstrip().endswith(b"{")):
            j = i
            while j + 1 < len(lines) and comment[j + 1]:
                j += 1
            if j + 1 < len(lines) and blank[j + 1]:
                blocks.append((starts[i], starts[j + 1]))
            i = j + 1
        else:
            i += 1
    # not a comment in a definition, or one attached to it
    banners = [(b0, b1) for b0, b1 in blocks if not any(it.start <= b0 < it.end for it in items)]
    moved_ids = {id(it) for it in moved}
    out = []
    for (b0, b1), limit in zip(banners, [b0 for b0, _ in banners[1:]] + [len(data)]):
        headed = [it for it in items if b1 <= it.start < limit]
        if headed and all(id(it) in moved_ids for it in headed):
            out.append((min(headed, key=lambda it: it.start), b0))
    return out


def _blank_lines(data: bytes, a: int, b: int) -> int | None:
    """Blank lines between offsets `a` and `b` of the unit (both at line starts) when nothing but
    whitespace lies there (the items are neighbours in the unit), else None."""
    gap = data[a:b]
    return gap.count(NEWLINE) if a <= b and not gap.strip() else None


def _body_end(data: bytes, it: Item) -> int:
    """The end of `it`'s text as it moves: through a comment that ends its last line
    (`constexpr int kN = 8;  // elements per load`), else the item's own end."""
    end = _line_end(data, it.end - 1)
    tail = data[it.end:end].strip()
    if not tail or tail.startswith(b"//") or (tail.startswith(b"/*") and tail.endswith(b"*/")):
        return end
    return it.end


def _header_text(data: bytes, unit: str, header: str, moved: list[Item], items: list[Item], chains: dict,
                 incs: list[Item], rule_id: str, guard: str) -> str:
    name = posixpath.basename(unit)
    banner = (f"Device code of {name}, which includes this header, as do the NVRTC programs of the {rule_id} "
              "kernels.")
    out = textwrap.wrap(banner, 100, initial_indent="// ", subsequent_indent="// ", break_on_hyphens=False,
                        break_long_words=False) + [
           f"#ifndef {guard}", f"#define {guard}"]
    moved_starts = {it.node.start_byte for it in moved}
    # using-directives and declarations in an open container before a moved item are copied
    usings = [it for it in items if it.kind == "using"
              and any(chains[it.node.start_byte] == chains[m.node.start_byte] and it.start < m.start for m in moved)]
    keep = sorted(moved + usings, key=lambda it: it.start)
    opened: list[Node] = []
    last = None          # the unit's offset where the text written last ends (None: not the unit's)
    copied = False       # the text written last is a copied using

    def put(start: int, end: int | None, text: str) -> None:
        """`text`, taken from the unit's [start, end), after the blank lines the unit has before it
        when it follows the text written last there, else after one."""
        nonlocal last
        blanks = _blank_lines(data, last, _line_start(data, start)) if last is not None else None
        out.extend([""] * (1 if blanks is None else min(blanks, 1)))
        out.append(text)
        last = end

    for it in incs:      # the unit's includes, grouped as there
        put(it.node.start_byte, _line_end(data, it.node.end_byte - 1),
            data[it.node.start_byte:it.node.end_byte].decode().rstrip("\n"))
    last = None
    for it in keep:
        chain = chains[it.node.start_byte]
        common = 0
        while common < min(len(opened), len(chain)) and opened[common] == chain[common]:
            common += 1
        for node in reversed(opened[common:]):
            put(_close_start(node, data), _line_end(data, node.end_byte - 1), _close(node, data))
        for node in chain[common:]:
            put(node.start_byte, _line_end(data, node.start_byte), _open(node, data))
        opened = list(chain)
        end = _body_end(data, it)
        body = data[it.start:end].decode().rstrip("\n")
        is_copy = it.node.start_byte not in moved_starts
        if is_copy and not (copied and last is not None and _blank_lines(data, last, it.start) is not None):
            put(it.start, None, f"// (also in {name})")     # heads the copied declarations below it
            last = it.start
        put(it.start, _line_end(data, end - 1), body)
        copied = is_copy
    for node in reversed(opened):
        put(_close_start(node, data), _line_end(data, node.end_byte - 1), _close(node, data))
    out += ["", f"#endif  // {guard}", ""]
    return "\n".join(out)


def _close_start(node: Node, data: bytes) -> int:
    """Where the unit closes `node`: the line of a namespace's closing brace or of an #endif."""
    return _line_start(data, node.end_byte - 1)


def _open(node: Node, data: bytes) -> str:
    if node.type == "namespace_definition":
        name = node.child_by_field_name("name")
        return f"namespace {data[name.start_byte:name.end_byte].decode()} {{" if name is not None else "namespace {"
    return data[node.start_byte:_line_end(data, node.start_byte)].decode().rstrip("\n")


def _close(node: Node, data: bytes) -> str:
    if node.type == "namespace_definition":
        name = node.child_by_field_name("name")
        return f"}}  // namespace {data[name.start_byte:name.end_byte].decode()}" if name is not None else "}  // namespace"
    return "#endif"
