"""Constant template arguments as the analysis spells them (`32/sizeof(__half)`,
`true&&(!false)?128:64`, `(f<float>==nullptr)?identity:f<float>`) -> the canonical spelling the
host stubs render at run time (`16`, `64`, `f<float>`). A small C++ constant-expression evaluator
over integers and booleans; sizes of types come from the rule (`migrate/types/cases/*/size`)."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\s*(\d+[uUlL]*|true|false|nullptr|sizeof\s*\([^()]*\)|&&|\|\||==|!=|<=|>=|[-+*/%()!?:<>])")


class NotConstant(Exception):
    """The text is not an integer/boolean constant expression the evaluator knows."""


def _tokens(text: str, sizes: dict[str, int]) -> list:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise NotConstant(text)
        tok = m.group(1)
        pos = m.end()
        if tok.startswith("sizeof"):
            name = tok[tok.index("(") + 1:-1].strip()
            if name not in sizes:
                raise NotConstant(f"sizeof({name})")
            out.append(sizes[name])
        elif tok in ("true", "false"):
            out.append(tok == "true")
        elif tok[0].isdigit():
            out.append(int(tok.rstrip("uUlL")))
        else:
            out.append(tok)
    return out


class _Parser:
    # Precedence climbing over the C++ operators constant template arguments use.
    _BINARY = [("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"), ("*", "/", "%")]

    def __init__(self, toks: list):
        self.toks, self.i = toks, 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want=None):
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise NotConstant(f"expected {want!r}, found {tok!r}")
        self.i += 1
        return tok

    def ternary(self):
        cond = self.binary(0)
        if self.peek() == "?":
            self.take("?")
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return a if cond else b
        return cond

    def binary(self, level: int):
        if level == len(self._BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while isinstance(self.peek(), str) and self.peek() in self._BINARY[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = _apply(op, left, right)
        return left

    def unary(self):
        tok = self.peek()
        if tok == "!":
            self.take()
            return not self.unary()
        if tok == "-":
            self.take()
            return -self.unary()
        if tok == "(":
            self.take("(")
            v = self.ternary()
            self.take(")")
            return v
        if isinstance(tok, (bool, int)):
            self.take()
            return tok
        raise NotConstant(f"unexpected {tok!r}")


def _apply(op: str, a, b):
    if op == "/":
        if b == 0:
            raise NotConstant("division by zero")
        return int(a / b)
    if op == "%":
        return a % b
    return {"||": lambda: bool(a or b), "&&": lambda: bool(a and b), "==": lambda: a == b,
            "!=": lambda: a != b, "<": lambda: a < b, ">": lambda: a > b, "<=": lambda: a <= b,
            ">=": lambda: a >= b, "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b}[op]()


def evaluate(text: str, sizes: dict[str, int]):
    """The value of an integer/boolean constant expression; NotConstant when it is not one."""
    p = _Parser(_tokens(text, sizes))
    v = p.ternary()
    if p.peek() is not None:
        raise NotConstant(f"trailing {p.peek()!r}")
    return v


_NULL_CHECK = re.compile(r"^\((?P<f>.+?)\s*==\s*nullptr\)\s*\?\s*(?P<a>.+?)\s*(?<!:):(?!:)\s*(?P<b>.+)$")


def function_choice(text: str) -> str:
    """`(f==nullptr)?g:f` with a named (hence non-null) `f` -> `f`; other text unchanged."""
    m = _NULL_CHECK.match(text.strip())
    if m and m.group("f").strip() not in ("nullptr", "0"):
        return m.group("b").strip()
    return text
