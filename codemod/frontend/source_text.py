"""Reading C++ text at spelled byte offsets: template-ids, macro arguments, token substitution.

The AST gives positions; the text at those positions (template arguments, macro arguments) is
read from the file itself, so the result is exactly what the author wrote.
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"(?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*")
_TOKEN = re.compile(r"\s*(::|->|<<|>>|<=|>=|==|!=|&&|\|\||[A-Za-z_]\w*|\d[\w.']*|\S)")
_OPEN = {"(": ")", "[": "]", "{": "}"}


def _skip_ws_comments(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    return i


def split_top_level(text: str, open_ch: str, close_ch: str, start: int, limit: int | None = None) -> tuple[list[str], int] | None:
    """Split the bracketed list opening at text[start] == open_ch by top-level commas.

    Returns (arguments, index after the closing bracket) or None when unbalanced. Angle brackets
    count only when open_ch is '<'; `>>` closes two levels.
    """
    if start >= len(text) or text[start] != open_ch:
        return None
    angle = open_ch == "<"
    depth, stack, args, cur = 1, [], [], []
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("//", i) or text.startswith("/*", i):
            i = _skip_ws_comments(text, i)
            cur.append(" ")
            continue
        if ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i : j + 1])
            i = j + 1
            continue
        if ch in _OPEN:
            stack.append(_OPEN[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
        elif not stack and angle and ch == "<":
            depth += 1
        elif not stack and angle and ch == ">":
            depth -= 1
            if depth == 0:
                args.append("".join(cur))
                return [normalize(a) for a in args if a.strip() or len(args) > 0], i + 1
        elif not stack and not angle and ch == close_ch:
            args.append("".join(cur))
            return [normalize(a) for a in args], i + 1
        elif not stack and ch == "," and depth == 1:
            args.append("".join(cur))
            cur = []
            i += 1
            if limit is not None and len(args) >= limit:
                return [normalize(a) for a in args], i
            continue
        cur.append(ch)
        i += 1
    return None


def read_template_id(text: str, offset: int) -> tuple[str, list[str] | None, int] | None:
    """At `offset`, read `[::]ns::name[<args>]`; returns (name, args or None, end offset)."""
    i = _skip_ws_comments(text, offset)
    if text.startswith("&", i):
        i = _skip_ws_comments(text, i + 1)
    m = _IDENT.match(text, i)
    if not m:
        return None
    name = re.sub(r"\s+", "", m.group(0))
    j = _skip_ws_comments(text, m.end())
    if j < len(text) and text[j] == "<" and not text.startswith("<<<", j) and not text.startswith("<=", j):
        res = split_top_level(text, "<", ">", j)
        if res is not None:
            args, end = res
            if args == [""]:
                args = []
            return name, args, end
    return name, None, m.end()


def read_template_args(text: str, offset: int) -> list[str] | None:
    """The `<...>` argument list starting at `offset` (after blanks and comments), or None."""
    j = _skip_ws_comments(text, offset)
    if not text.startswith("<", j) or text.startswith("<<", j) or text.startswith("<=", j):
        return None
    res = split_top_level(text, "<", ">", j)
    return None if res is None else ([] if res[0] == [""] else res[0])


def read_macro_args(text: str, offset: int, limit: int | None = None) -> tuple[str, list[str]] | None:
    """At a macro invocation `NAME(a, b, ...)`, return (NAME, [a, b, ...]) (the first `limit`)."""
    m = _IDENT.match(text, offset)
    if not m:
        return None
    j = _skip_ws_comments(text, m.end())
    res = split_top_level(text, "(", ")", j, limit)
    if res is None:
        return m.group(0), []
    return m.group(0), res[0]


_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def strip_comments(text: str) -> str:
    """`text` with its `//` and `/* */` comments and line continuations (a `#define` body's
    backslash-newlines) replaced by a space (string literals kept)."""
    if "\\\n" in text or "\\\r\n" in text:
        text = re.sub(r"\\\r?\n", " ", text)
    if "//" not in text and "/*" not in text:
        return text
    return _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", text)


def tokens(text: str) -> list[str]:
    """C++ tokens of a fragment; comments are not tokens."""
    return [t for t in _TOKEN.findall(strip_comments(text)) if t]


def normalize(text: str) -> str:
    """Canonical spacing of a C++ fragment: tokens joined, a space after commas only."""
    out = []
    for tok in tokens(text):
        if out and _needs_space(out[-1], tok):
            out.append(" ")
        out.append(tok)
    return "".join(out).strip()


def _needs_space(prev: str, tok: str) -> bool:
    word = lambda t: t[:1].isalnum() or t[:1] == "_"  # noqa: E731
    if prev == ",":
        return True
    if word(prev) and word(tok):
        return True
    # NOTE: `a ? b : ::c` joined was `b:::c`, which reads back as `::` `:`
    return prev == ":" and tok.startswith(":")


def _continues_name(tok: str) -> bool:
    """Whether `::` after `tok` continues a nested name (`a::`, `C<T>::`) rather than starting one
    at the global scope."""
    return tok[:1].isalnum() or tok[:1] == "_" or tok in (">", ">>")


_BINARY = frozenset(("?", "+", "-", "/", "%", "==", "!=", "<=", ">=", "&&", "||", "|", "^", "<<"))


def _compound(text: str) -> bool:
    """Whether a replacement is an expression with an operator outside brackets (`c ? 4 : 8`,
    `8 / 2`): put in place of a name it keeps its own precedence only in parentheses. Types never
    qualify (`*`, `&` and angle brackets are not counted; a leading unary operator neither)."""
    depth = 0
    toks = tokens(text)
    for i, t in enumerate(toks):
        if t in ("(", "[", "{") or t == "<" and i and (toks[i - 1][:1].isalnum() or toks[i - 1][:1] == "_"):
            depth += 1
        elif t in (")", "]", "}") or t == ">" and depth:
            depth -= 1
        elif depth == 0 and i and t in _BINARY:
            return True
    return False


def substitute(text: str, lookup, max_depth: int = 12) -> str:
    """Replace identifiers (qualified or not) for which lookup(name) returns text, to a fixpoint."""
    for _ in range(max_depth):
        toks = tokens(text)
        out, changed, i = [], False, 0
        while i < len(toks):
            tok = toks[i]
            if tok[:1].isalpha() or tok[:1] == "_":
                # gather a qualified name a::b::c
                j, name = i, tok
                while j + 2 < len(toks) and toks[j + 1] == "::" and (toks[j + 2][:1].isalpha() or toks[j + 2][:1] == "_"):
                    name += "::" + toks[j + 2]
                    j += 2
                prev = toks[i - 1] if i else ""
                if prev == "::" and (i < 2 or not _continues_name(toks[i - 2])):
                    # `::a::b`: a name from the global scope, looked up as such
                    rep = lookup("::" + name)
                    if rep is not None and rep != "::" + name:
                        out[-1] = f" ({rep}) " if _compound(rep) else f" {rep} "
                        changed = True
                    else:
                        out.append(f" {name} ")
                    i = j + 1
                    continue
                rep = None if prev in (".", "->", "::") else lookup(name)  # a member is not a name in scope
                if rep is not None and rep != name:
                    out.append(f" ({rep}) " if _compound(rep) else f" {rep} ")
                    changed = True
                else:
                    out.append(f" {name} ")
                i = j + 1
                continue
            out.append(f" {tok} ")
            i += 1
        text = normalize("".join(out))
        if not changed:
            break
    return text


_PASTED = re.compile(r"[A-Za-z_]\w*(?:\s*##\s*[A-Za-z_0-9]\w*)+")


def macro_params(head: str) -> list[str]:
    """Parameters of a function-like `#define NAME(a, b, ...)`: `...` (or `rest...`) is the
    variadic one, named `__VA_ARGS__` (or `rest`)."""
    out = []
    for p in (x.strip() for x in strip_comments(head).split(",")):
        if p.endswith("..."):
            p = p[:-3].strip() or "__VA_ARGS__"
        if p:
            out.append(p)
    return out


def bind_macro_args(params: list[str], args: list[str], variadic: bool) -> dict[str, str]:
    """An invocation's arguments by parameter; the variadic parameter takes the rest, joined."""
    if variadic and params:
        fixed = params[:-1]
        out = dict(zip(fixed, args))
        out[params[-1]] = ", ".join(args[len(fixed):])
        return out
    return dict(zip(params, args))


def find_pasted(body: str, name: str, args: dict[str, str]) -> tuple[int, int] | None:
    """Where `name` is made by token pasting in a macro body (`launch_##KIND##_` with KIND =
    `tuned` makes `launch_tuned_`): the [start, end) of the pasted spelling, or None."""
    for m in _PASTED.finditer(body):
        parts = [x.strip() for x in m.group(0).split("##")]
        if "".join(args.get(x, x) for x in parts) == name:
            return m.start(), m.end()
    return None


def vararg_names(name: str, count: int) -> list[str]:
    """Names standing for a variadic macro parameter's arguments one by one (`__VA_ARGS___0`, ...),
    bound like the named parameters so that each keeps its macro-argument origin."""
    return [f"{name}_{i}" for i in range(count)]


def splice_varargs(targs: list[str] | None, varargs: tuple[str, list[str]] | None) -> list[str] | None:
    """Template arguments read in a variadic macro's body: the one spelled `__VA_ARGS__` (or the
    named variadic parameter) becomes one argument per trailing invocation argument
    (`vararg_names`)."""
    if not targs or not varargs:
        return targs
    name, rest = varargs
    out = []
    for a in targs:
        out.extend(vararg_names(name, len(rest)) if a == name else [a])
    return out
