"""Prototypes of a library's public C functions, read from its headers with tree-sitter."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import ParseError
from .source import node_text


@dataclass(frozen=True)
class Param:
    name: str
    type: str      # as spelled, qualifiers included ("const ActlibTensor")
    base: str      # the type without cv-qualifiers ("ActlibTensor")


@dataclass(frozen=True)
class Prototype:
    name: str
    params: tuple[Param, ...]
    where: str     # header:line


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _param(data: bytes, node) -> Param | None:
    type_node = node.child_by_field_name("type")
    decl = node.child_by_field_name("declarator")
    if type_node is None or decl is None:
        return None
    base = node_text(data, type_node)
    quals = [node_text(data, c) for c in node.children if c.type == "type_qualifier"]
    spelled = " ".join(quals + [base])
    if decl.type != "identifier":
        # Pointers and references keep their declarator punctuation in the type.
        ident = next((n for n in _walk(decl) if n.type == "identifier"), None)
        if ident is None:
            return None
        suffix = node_text(data, decl)[: ident.start_byte - decl.start_byte].strip()
        return Param(node_text(data, ident), f"{spelled} {suffix}".strip(), f"{base} {suffix}".strip())
    return Param(node_text(data, decl), spelled, base)


def prototypes(path: Path, rel: str, kind: str = "declaration") -> dict[str, Prototype]:
    """Every function declared at file scope (or inside extern "C") of one header; with
    kind="function_definition", every function a source file defines (its signature only)."""
    from .source import parse

    data = path.read_bytes()
    found: dict[str, Prototype] = {}
    for node in _walk(parse(data)):
        if node.type != kind:
            continue
        fn = node.child_by_field_name("declarator")
        if fn is None or fn.type != "function_declarator":
            continue
        name = fn.child_by_field_name("declarator")
        plist = fn.child_by_field_name("parameters")
        if name is None or plist is None:
            continue
        params = []
        for child in plist.named_children:
            if child.type != "parameter_declaration":
                continue
            p = _param(data, child)
            if p is None:
                raise ParseError(f"cannot read parameter `{node_text(data, child)}` of {node_text(data, name)}",
                                 where=f"{rel}:{child.start_point[0] + 1}")
            params.append(p)
        found[node_text(data, name)] = Prototype(node_text(data, name), tuple(params),
                                             f"{rel}:{node.start_point[0] + 1}")
    return found
