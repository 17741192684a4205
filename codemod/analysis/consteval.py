"""Constant template arguments, folded to their value once the environment is substituted:
`32/static_cast<int>(std::max(sizeof(__half), sizeof(float)))` -> `8`. Integer and boolean C++
constant expressions only (the forms template arguments use): literals, `sizeof` of a type whose
size clang reported (or a CUDA/C++ builtin's), `static_cast`, `std::max`/`std::min` (two
arguments or a braced list), arithmetic, shifts, comparisons, logic and `?:`."""

from __future__ import annotations

import re

# Sizes of the builtin and CUDA types, for types clang did not report (clang's win).
BUILTIN_SIZES = {"float": 4, "double": 8, "__half": 2, "__nv_bfloat16": 2, "__nv_fp8_e4m3": 1,
                 "__nv_fp8_e5m2": 1, "__nv_fp8_e8m0": 1, "__nv_fp4_e2m1": 1, "int": 4, "unsigned int": 4,
                 "char": 1, "signed char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2, "long": 8,
                 "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int8_t": 1, "uint8_t": 1,
                 "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8,
                 "size_t": 8, "bool": 1}

_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|(?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*"
                    r"|<<|>>|&&|\|\||==|!=|<=|>=|[-+*/%()!?:<>{},&|^~])")
_FUNCS = {"max": max, "min": min}


class NotConstant(Exception):
    """Not an integer/boolean constant expression this folder knows."""


def fold(text: str, sizes: dict[str, int] | None = None):
    """The value (int or bool) of a constant expression; NotConstant when it is not one."""
    p = _Parser(text, sizes or {})
    v = p.ternary()
    if p.peek() is not None:
        raise NotConstant(f"trailing {p.peek()!r} in {text!r}")
    return v


def fold_text(text: str, sizes: dict[str, int] | None = None) -> str:
    """`text` folded to its canonical spelling (`8`, `true`) when it is a constant expression with an
    operator, a cast or a `sizeof` in it; unchanged otherwise (types, names, plain literals)."""
    if not _FOLDABLE.search(text):
        return text
    try:
        v = fold(text, sizes)
    except (NotConstant, RecursionError, ZeroDivisionError):
        return text
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


_FOLDABLE = re.compile(r"sizeof|static_cast|\bmax\b|\bmin\b|[-+*/%<>!?&|^~=]")


class _Parser:
    _BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"),
               ("+", "-"), ("*", "/", "%")]

    def __init__(self, text: str, sizes: dict[str, int]):
        self.text, self.sizes = text, sizes
        self.toks: list[str] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise NotConstant(text)
            self.toks.append(re.sub(r"\s+", "", m.group(1)))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        self.i = 0

    def peek(self, k: int = 0):
        return self.toks[self.i + k] if self.i + k < len(self.toks) else None

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
        while self.peek() in self._BINARY[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = _apply(op, left, right)
        return left

    def unary(self):
        tok = self.peek()
        if tok == "!":
            self.take()
            return not self.unary()
        if tok in ("-", "+", "~"):
            self.take()
            v = self.unary()
            return -v if tok == "-" else (~v if tok == "~" else v)
        return self.primary()

    def _type_text(self, close: str) -> str:
        """Tokens up to the matching `close` (`)` of sizeof, `>` of a cast), as one type name."""
        depth, parts = 0, []
        opens = {")": "(", ">": "<"}[close]
        while True:
            tok = self.take()
            if tok == opens:
                depth += 1
            elif tok == close:
                if depth == 0:
                    break
                depth -= 1
            parts.append(tok)
        return " ".join(parts).replace(" :: ", "::")

    def primary(self):
        tok = self.take()
        if tok == "(":
            v = self.ternary()
            self.take(")")
            return v
        if tok in ("true", "false"):
            return tok == "true"
        if tok[0].isdigit():
            return int(tok.rstrip("uUlL"), 0)
        if tok == "sizeof":
            self.take("(")
            name = self._type_text(")").lstrip(":")
            size = self.sizes.get(name, BUILTIN_SIZES.get(name))
            if size is None:
                raise NotConstant(f"sizeof({name})")
            return size
        if tok == "static_cast":
            self.take("<")
            target = self._type_text(">")
            self.take("(")
            v = self.ternary()
            self.take(")")
            return bool(v) if target == "bool" else int(v)
        name = tok.lstrip(":")
        if name.startswith("std::"):
            name = name[5:]
        if name in _FUNCS and self.peek() in ("(", "<"):
            if self.peek() == "<":
                self.take("<")
                self._type_text(">")
            self.take("(")
            braced = self.peek() == "{"
            if braced:
                self.take("{")
            args = [self.ternary()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.ternary())
            if braced:
                self.take("}")
            self.take(")")
            return _FUNCS[name](args)
        raise NotConstant(f"unexpected {tok!r}")


def _apply(op: str, a, b):
    if op in ("/", "%"):
        if b == 0:
            raise NotConstant("division by zero")
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)   # C truncates toward zero
        return q if op == "/" else a - q * b
    return {"||": lambda: bool(a or b), "&&": lambda: bool(a and b), "|": lambda: a | b, "^": lambda: a ^ b,
            "&": lambda: a & b, "==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, ">": lambda: a > b,
            "<=": lambda: a <= b, ">=": lambda: a >= b, "<<": lambda: a << b, ">>": lambda: a >> b,
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b}[op]()
