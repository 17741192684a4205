"""Member arrays whose size can be zero (`char pad[c ? n : 0]`) in class templates that NVRTC
compiles: nvcc accepts a zero-length array (a GNU extension), NVRTC rejects it ("the size of an
array must be greater than zero") and no option turns that off. The class template gains a
defaulted `bool` parameter that says whether the array is non-empty, and a partial specialization
for `false` holds the same members without the array: a zero-length array occupies no storage, so
the layout is the same (tested by compiling both forms and comparing sizes and offsets)."""

from __future__ import annotations

from dataclasses import dataclass

from ..base import source

_CLASS_SPECIFIERS = ("struct_specifier", "union_specifier", "class_specifier")
_NAME_NODES = ("identifier", "type_identifier")


@dataclass
class ZeroLengthEdit:
    """One class template with a possibly zero-length member array, and the two edits that make
    it NVRTC-safe (both inserts: the primary template's body is unchanged)."""
    class_name: str
    field: str
    line: int
    param_at: int          # before the template parameter list's `>`
    param_text: str        # `, bool HasNonEmpty_pad = (...) != 0`
    special_at: int        # after the class template's `;`
    special_ctx: dict      # the specialization template's context


@dataclass
class Skipped:
    class_name: str
    line: int
    reason: str


def _may_be_zero(size, data: bytes) -> bool:
    """A size spelled with a conditional one of whose arms is the literal 0."""
    for n in source._walk(size):
        if n.type == "conditional_expression":
            for f in ("consequence", "alternative"):
                arm = n.child_by_field_name(f)
                if arm is not None and arm.type == "number_literal" and source.node_text(data, arm) in ("0", "0u", "0U"):
                    return True
    return False


def _substitute(node, data: bytes, names: dict[str, str]) -> str:
    """The text of `node` with every identifier in `names` replaced by its definition (types: no parentheses)."""
    out, at = [], node.start_byte
    for n in source._walk(node):
        if n.type in _NAME_NODES and n.start_byte >= at and source.node_text(data, n) in names:
            out += [data[at:n.start_byte].decode(), names[source.node_text(data, n)]]
            at = n.end_byte
    out.append(data[at:node.end_byte].decode())
    return "".join(out)


def _params(plist, data: bytes) -> list[tuple[str, str]] | None:
    """(declaration without its default, name) of each template parameter; None for a pack or an
    unnamed parameter (left alone)."""
    out = []
    for p in plist.named_children:
        if p.type in ("optional_type_parameter_declaration", "optional_parameter_declaration"):
            name = p.child_by_field_name("name") or p.child_by_field_name("declarator")
            default = p.child_by_field_name("default_type") or p.child_by_field_name("default_value")
            if name is None or default is None:
                return None
            decl = data[p.start_byte:name.end_byte].decode()
        elif p.type == "type_parameter_declaration":
            kids = [c for c in p.named_children if c.type == "type_identifier"]
            if not kids:
                return None
            name, decl = kids[-1], source.node_text(data, p)
        elif p.type == "parameter_declaration":
            name = p.child_by_field_name("declarator")
            if name is None or name.type != "identifier":
                return None
            decl = source.node_text(data, p)
        else:
            return None
        out.append((decl, source.node_text(data, name)))
    return out


def _member_names(body, data: bytes) -> tuple[dict, set[str], list]:
    """Aliases declared in the class body (name -> definition node), other member names, and the
    member arrays whose size may be zero (field_declaration, declarator, size), nested anonymous
    structs included."""
    aliases, members, arrays = {}, set(), []
    for n in source._walk(body):
        if n.type == "alias_declaration":
            name = n.child_by_field_name("name")
            aliases[source.node_text(data, name)] = n.child_by_field_name("type")
        elif n.type == "field_declaration":
            for d in n.children_by_field_name("declarator"):
                if d.type == "array_declarator":
                    size = d.child_by_field_name("size")
                    inner = d.child_by_field_name("declarator")
                    if inner is not None:
                        members.add(source.node_text(data, inner))
                    if size is not None and _may_be_zero(size, data):
                        arrays.append((n, d, size))
                elif d.type in ("field_identifier", "identifier"):
                    members.add(source.node_text(data, d))
    return aliases, members, arrays


def find(data: bytes) -> tuple[list[ZeroLengthEdit], list[Skipped]]:
    """The class templates of `data` with exactly one member array of possibly zero length."""
    edits, skipped = [], []
    for t in source._walk(source.parse(data)):
        if t.type != "template_declaration":
            continue
        cls = next((c for c in t.named_children if c.type in _CLASS_SPECIFIERS), None)
        body = cls.child_by_field_name("body") if cls is not None else None
        name = cls.child_by_field_name("name") if cls is not None else None
        plist = t.child_by_field_name("parameters")
        if body is None or name is None or plist is None or name.type != "type_identifier":
            continue          # a declaration, a specialization, an anonymous class
        aliases, members, arrays = _member_names(body, data)
        if not arrays:
            continue
        line = data[:t.start_byte].count(b"\n") + 1
        cname = source.node_text(data, name)
        if len(arrays) > 1:
            skipped.append(Skipped(cname, line, f"{len(arrays)} member arrays may be zero-length (one is handled)"))
            continue
        params = _params(plist, data)
        if params is None:
            skipped.append(Skipped(cname, line, "a template parameter pack or an unnamed parameter"))
            continue
        field, decl, size = arrays[0]
        field_name = source.node_text(data, decl.child_by_field_name("declarator"))
        used = {source.node_text(data, n) for n in source._walk(size) if n.type in _NAME_NODES}
        if used & members:
            skipped.append(Skipped(cname, line, f"the size names a data member ({', '.join(sorted(used & members))})"))
            continue
        # Member aliases spelled out (in declaration order: a later alias may name an earlier one).
        defs: dict[str, str] = {}
        for alias, node in aliases.items():
            defs[alias] = _substitute(node, data, defs)
        flag = f"HasNonEmpty{field_name if field_name.startswith('_') else '_' + field_name}"
        if flag in {p[1] for p in params}:
            continue          # done by an earlier apply: the specialization follows the template
        semi = t.next_sibling
        special_at = semi.end_byte if semi is not None and semi.type == ";" else t.end_byte
        keep_body = (data[body.start_byte:field.start_byte].rstrip(b" \t")
                     + data[_line_after(data, field.end_byte):body.end_byte])
        edits.append(ZeroLengthEdit(
            class_name=cname, field=field_name, line=line,
            param_at=plist.end_byte - 1,
            param_text=f", bool {flag} = (({_substitute(size, data, defs)}) != 0)",
            special_at=special_at,
            special_ctx=dict(params=[p[0] for p in params], args=[p[1] for p in params],
                             kind=source.node_text(data, cls.children[0]), name=cname, field=field_name,
                             body=keep_body.decode())))
    return edits, skipped


def _line_after(data: bytes, end: int) -> int:
    """The start of the line after `end` when only blanks follow on its line, else `end`."""
    nl = data.find(b"\n", end)
    if nl >= 0 and not data[end:nl].strip():
        return nl + 1
    return end
