"""Facts about trait classes and aliases that template arguments are spelled with: an alias named
like the template it names (`using Kernel_traits = Kernel_traits<...>;`), and the member constants,
template parameters (with defaults) and bases of project class templates (`KT::THREADS_PER_WARP`)."""

from __future__ import annotations

import re

from .cursors import CK, child_cursors, default_text, eval_int, qualname


def qualify_self_named(decl, value: str) -> str:
    """`using Kernel_traits = Kernel_traits<A, B>;` in a function: inside its own value the name is
    the outer template, so spell that one qualified (`ns::Kernel_traits<A, B>`); substituting the
    alias into itself would never end."""
    name = decl.spelling
    pat = re.compile(r"(?<![\w:])" + re.escape(name) + r"(?=\s*<)")
    if not name or not pat.search(value):
        return value
    for ch in child_cursors(decl):
        ref = ch.referenced if ch.kind == CK.TEMPLATE_REF else None
        if ref is not None and ref.spelling == name:
            return pat.sub(qualname(ref), value)
    return value


def _init_text(cur) -> str | None:
    """The spelled initializer of an enumerator or a static member (`32` in `X = 32`)."""
    toks = [t.spelling for t in cur.get_tokens()]
    if "=" not in toks:
        return None
    rest = toks[toks.index("=") + 1:]
    while rest and rest[-1] in (",", ";", "}"):
        rest = rest[:-1]
    return " ".join(rest) or None


def class_facts(cur) -> dict | None:
    """A project class (template)'s member constants (enumerators of its unnamed enums and static
    const members: name -> value, evaluated by clang when it can, else the spelled initializer),
    its template parameters (with defaults) and its bases as spelled; None when it has no
    constants and no bases (nothing to look a member up in)."""
    from .cursors import template_params

    constants: dict[str, str] = {}
    bases: list[str] = []
    for ch in child_cursors(cur):
        if ch.kind == CK.ENUM_DECL:
            for e in child_cursors(ch):
                if e.kind == CK.ENUM_CONSTANT_DECL:
                    text = _init_text(e)
                    if text is not None:
                        constants[e.spelling] = text
        elif ch.kind == CK.VAR_DECL and ch.type.is_const_qualified():
            v = eval_int(ch)
            text = str(v) if v is not None else _init_text(ch)
            if text is not None:
                constants[ch.spelling] = text
        elif ch.kind == CK.CXX_BASE_SPECIFIER:
            bases.append(ch.type.spelling)
    if not constants and not bases:
        return None
    params = template_params(cur) if cur.kind == CK.CLASS_TEMPLATE else []
    return {"params": [{"name": p["name"], "default": p.get("default_text")} for p in params],
            "bases": bases, "constants": constants}
