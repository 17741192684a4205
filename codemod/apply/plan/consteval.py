"""Constant template arguments as the analysis spells them (`32/sizeof(__half)`,
`true&&(!false)?128:64`, `(f<float>==nullptr)?identity:f<float>`) -> the canonical spelling the
host stubs render at run time (`16`, `64`, `f<float>`). The evaluator is the analysis' constant
folder (one for both); sizes of types come from the rule (`migrate/types/cases/*/size`), else the
builtin types' sizes."""

from __future__ import annotations

import re

from ...analysis.consteval import NotConstant as FoldNotConstant, fold


class NotConstant(Exception):
    """The text is not an integer/boolean constant expression the evaluator knows."""


def evaluate(text: str, sizes: dict[str, int]):
    """The value of an integer/boolean constant expression (analysis.consteval's folder: literals,
    `sizeof` of the rule's types or a builtin, `static_cast`, `std::max`/`std::min`, arithmetic,
    logic, `?:`); NotConstant when it is not one."""
    try:
        return fold(text, sizes)
    except (FoldNotConstant, RecursionError, ZeroDivisionError) as exc:
        raise NotConstant(str(exc) or text) from None


_NULL_CHECK = re.compile(r"^\((?P<f>.+?)\s*==\s*nullptr\)\s*\?\s*(?P<a>.+?)\s*(?<!:):(?!:)\s*(?P<b>.+)$")


def _unwrapped(text: str) -> str:
    """`text` without parentheses enclosing all of it (the analysis parenthesizes a substituted
    expression that has an operator: `((f==nullptr)?g:f)`)."""
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, c in enumerate(text):
            depth += c == "("
            depth -= c == ")"
            if depth == 0 and i < len(text) - 1:
                return text             # the first `(` closes before the end: `(a)?b:(c)`
        text = text[1:-1].strip()
    return text


def function_choice(text: str) -> str:
    """`(f==nullptr)?g:f` with a named (hence non-null) `f` -> `f`; with `f` itself null
    (`(nullptr==nullptr)?g:nullptr`, TE's cast entry points passing OP = nullptr) -> `g`; other
    text unchanged."""
    text = _unwrapped(text.strip())
    m = _NULL_CHECK.match(text)
    if m:
        return m.group("a" if m.group("f").strip() in ("nullptr", "0") else "b").strip()
    return text
