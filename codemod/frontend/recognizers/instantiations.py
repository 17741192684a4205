"""Explicit instantiation lists: `template void f<T, U>(P &, cudaStream_t);` of a host launcher
and `template __global__ void k<T, 4>(T *, int);` of a kernel, spelled at namespace scope of a
TU's main file. They are what the TU compiles, so they are roots of the walk and domains.

NOTE: libclang exposes no cursor for an explicit instantiation of a function template, so the
main file's tokens are read (clang's lexer: comments and strings are not tokens) outside
preprocessor directives, with the namespaces around them, a project macro invoked at namespace
scope expanded (bitsandbytes' `MAKE_kQuantizeBlockwise(half, 4096, 4, 0, General8bit)`); the
named template is then looked up among the TU's declarations by qualified name and, between
overloads, by parameter count and spelled parameter types. The project templates the file names
at namespace scope are recorded too (`namespace_refs`, for analysis/uncounted.py).
"""

from __future__ import annotations

import clang.cindex as ci

from ..cursors import CK, child_cursors, qualname
from ..source_text import normalize, substitute, tokens

_OPEN, _CLOSE = "([{", ")]}"


def explicit_instantiations(ix) -> None:
    """Record every explicit instantiation definition of the main files (`ix.globals_uses`, kind
    `explicit_instantiation`) and queue the host function templates they name for the walk."""
    for path in sorted(ix.mains):
        f = ix.tu.get_file(path) if _has_file(ix.tu, path) else None
        if f is None:
            continue
        text = ix.files.get(path)
        start = ci.SourceLocation.from_offset(ix.tu, f, 0)
        end = ci.SourceLocation.from_offset(ix.tu, f, len(text))
        toks = _outside_directives([(t.spelling, t.location.line, t.location.column) for t in
                                    ix.tu.get_tokens(extent=ci.SourceRange.from_locations(start, end))], text)
        names: set[str] = set()
        spell = _Spelling(ix).spell
        for stmt in _statements(toks, _Macros(ix), names):
            got = _parse(stmt["tokens"])
            if got is None:
                continue
            name, targs, params, is_kernel = got
            targs = [spell(stmt["namespace"], t) for t in targs]
            target = _lookup(ix, stmt["namespace"], name, params, is_kernel)
            use = {"kind": "explicit_instantiation", "name": name, "targs": targs, "params": params,
                   "file": ix.files.rel(path), "line": stmt["line"], "col": stmt["col"], "namespace": stmt["namespace"]}
            if target is None:
                use["unresolved"] = True
            elif target.get("kernel"):
                use["kernel"] = target["usr"]
            else:
                use["function"] = ix.queue_function(target["cursor"])
            ix.globals_uses.append(use)
        refs = _template_refs(ix, path, names)
        if refs:   # what else the file names at namespace scope (analysis/uncounted.py)
            ix.globals_uses.append({"kind": "namespace_refs", "file": ix.files.rel(path), "names": refs})


class _Spelling:
    """Template arguments of an instantiation spelled as launch sites spell them
    (`SiteRecorder.scoped_text`): a project name of the global or the outermost namespace bare
    (`transformer_engine::gelu<float, float>` -> `gelu<float, float>`), a deeper one from the global
    scope (`detail::identity` in `te::dispatch` -> `::te::dispatch::detail::identity`), so that one
    instantiation has one spelling whichever root reaches it. Names are looked up from the
    instantiation's namespace outwards, among the TU's project declarations."""

    def __init__(self, ix):
        self.ix = ix
        self._known: set[str] | None = None

    def known(self) -> set[str]:
        if self._known is None:
            ix = self.ix
            self._known = ({qualname(c) for c in ix.defs.values()} | {k["qualname"] for k in ix.kernels.values()}
                           | set(ix.classes) | {t for t in ix.typedefs if "::" in t})
        return self._known

    def namespaces(self) -> set[str]:
        """The project's outermost namespaces."""
        return {q.split("::")[0] for q in self.known() if "::" in q and not q.startswith("(")}

    def spell(self, namespace: str, text: str) -> str:
        scopes = namespace.split("::") if namespace else []

        def lookup(name: str):
            if name.startswith("::"):
                cands = [name[2:]]
            else:
                cands = ["::".join(scopes[:n] + [name]) for n in range(len(scopes), -1, -1)]
            q = next((c for c in cands if c in self.known()), None)
            if q is None and "::" in name.lstrip(":") and name.lstrip(":").split("::")[0] in self.namespaces():
                q = name.lstrip(":")   # qualified from a project namespace (a device function, say)
            if q is None:
                return None
            parts = q.split("::")
            want = parts[-1] if len(parts) <= 2 else "::" + q
            return None if want == name else want

        return substitute(text, lookup)


def _template_refs(ix, path: str, names: set[str]) -> list[str]:
    """The names in `names` of function or kernel templates defined in other project files: a
    namespace-scope reference to one (`&launch<float>`) may instantiate it."""
    if not names:
        return []
    own = ix.files.rel(path)
    found = set()
    for cur in ix.defs.values():
        if cur.kind == CK.FUNCTION_TEMPLATE and cur.spelling in names:
            f = cur.location.file
            if f is not None and ix.files.rel(f.name) != own:
                found.add(cur.spelling)
    for k in ix.kernels.values():
        if k.get("is_template") and k["name"] in names and k.get("file") != own:
            found.add(k["name"])
    return sorted(found)


def _has_file(tu, path: str) -> bool:
    try:
        return tu.get_file(path) is not None
    except ci.TranslationUnitLoadError:
        return False


def _outside_directives(toks: list, text: str) -> list:
    """The tokens not in a preprocessor directive (a `#define` body is not code of the file)."""
    lines = text.split("\n")
    skip: set[int] = set()
    for k, (s, line, col) in enumerate(toks):
        if s == "#" and (k == 0 or toks[k - 1][1] != line):
            n = line
            while n <= len(lines) and lines[n - 1].rstrip().endswith("\\"):
                skip.add(n)
                n += 1
            skip.add(n)
    return [t for t in toks if t[1] not in skip]


class _Macros:
    """The project's macro definitions by name (the preprocessing record), expanded where a
    namespace-scope invocation may spell an instantiation list (`MAKE_kQuantize(half, 4096)`)."""

    def __init__(self, ix):
        self.ix = ix
        self._defs: dict[str, tuple[list[str] | None, list[str]]] | None = None

    def defs(self) -> dict:
        if self._defs is None:
            self._defs = {}
            for c in child_cursors(self.ix.tu.cursor):
                if c.kind == CK.MACRO_DEFINITION and self.ix.loc.declared_in_project(c):
                    got = self._definition(c)
                    if got is not None:
                        self._defs[c.spelling] = got
        return self._defs

    def _definition(self, c):
        f, _, _, start = self.ix.loc.file_loc(c.extent.start)
        _, _, _, end = self.ix.loc.file_loc(c.extent.end)
        if not f:
            return None
        text = self.ix.files.get(f)[start:end].replace("\\\n", " ")
        name = c.spelling
        rest = text[len(name):] if text.startswith(name) else text
        if rest.startswith("("):   # function-like: no blank between the name and '('
            close = rest.find(")")
            params = [p.strip() for p in rest[1:close].split(",") if p.strip()]
            params = ["__VA_ARGS__" if p == "..." else p for p in params]
            return params, tokens(rest[close + 1:])
        return None, tokens(rest)

    def expand(self, toks: list, i: int, depth: int = 0) -> tuple[list, int] | None:
        """(replacement tokens, index after the invocation) for a macro invoked at `toks[i]`."""
        name, line, col = toks[i]
        got = self.defs().get(name) if depth < 8 else None
        if got is None:
            return None
        params, body = got
        if params is None:
            return self._rescan(name, [(t, line, col) for t in body], depth), i + 1
        if i + 1 >= len(toks) or toks[i + 1][0] != "(":
            return None
        args, cur, level, j = [], [], 0, i + 2
        while j < len(toks):
            t = toks[j][0]
            if t in _OPEN:
                level += 1
            elif t in _CLOSE:
                if level == 0:
                    break
                level -= 1
            if t == "," and level == 0 and not (params and params[-1] == "__VA_ARGS__" and len(args) >= len(params) - 1):
                args.append(cur)
                cur = []
            else:
                cur.append(t)
            j += 1
        if j >= len(toks):
            return None
        args.append(cur)
        bound = dict(zip(params, args))
        out: list[str] = []
        k = 0
        while k < len(body):
            t = body[k]
            if t == "#" and k + 1 < len(body) and body[k + 1] == "#":   # token pasting
                nxt = body[k + 2] if k + 2 < len(body) else ""
                pasted = (out.pop() if out else "") + "".join(bound.get(nxt, [nxt]))
                out.append(pasted)
                k += 3
                continue
            if t == "#" and k + 1 < len(body) and body[k + 1] in bound:   # stringizing
                out.append('"' + " ".join(bound[body[k + 1]]) + '"')
                k += 2
                continue
            out.extend(bound.get(t, [t]))
            k += 1
        return self._rescan(name, [(t, line, col) for t in out], depth), j + 1

    def _rescan(self, name: str, expanded: list, depth: int) -> list:
        """Names defined as macros in an expansion (MAKE_X calling MAKE_Y, a block-size constant)."""
        m = 0
        while m < len(expanded):
            if expanded[m][0] in self.defs() and expanded[m][0] != name:
                again = self.expand(expanded, m, depth + 1)
                if again is not None:
                    expanded = expanded[:m] + again[0] + expanded[again[1]:]
                    m += len(again[0])
                    continue
            m += 1
        return expanded


def _statements(toks: list, macros: _Macros | None = None, names: set | None = None) -> list[dict]:
    """`template <not '<'> ... ;` statements at namespace scope (not `extern template`), with the
    namespace they are spelled in; a macro invoked at namespace scope is expanded first. `names`
    collects every identifier spelled at namespace scope (outside function and class bodies)."""
    out, ns_stack, depth, i, budget = [], [], 0, 0, 100_000
    while i < len(toks):
        s = toks[i][0]
        if (macros is not None and depth == len(ns_stack) and budget > 0 and (s[:1].isalpha() or s[:1] == "_")
                and (i == 0 or toks[i - 1][0] != "template") and s in macros.defs()):
            got = macros.expand(toks, i)
            if got is not None:
                budget -= len(got[0]) + 1
                toks = toks[:i] + got[0] + toks[got[1]:]
                if not got[0]:
                    continue
                s = toks[i][0]
        if names is not None and depth == len(ns_stack) and (s[:1].isalpha() or s[:1] == "_"):
            names.add(s)
        if s == "namespace" and i + 1 < len(toks):
            j, parts = i + 1, []
            while j < len(toks) and toks[j][0] not in ("{", ";", "="):
                if toks[j][0] != "::":
                    parts.append(toks[j][0])
                j += 1
            if j < len(toks) and toks[j][0] == "{":
                ns_stack.append((depth, parts))
                depth += 1
                i = j + 1
                continue
        if s == "{":
            depth += 1
        elif s == "}":
            depth -= 1
            if ns_stack and ns_stack[-1][0] == depth:
                ns_stack.pop()
        elif (s == "template" and depth == len(ns_stack) and i + 1 < len(toks) and toks[i + 1][0] != "<"
              and (i == 0 or toks[i - 1][0] != "extern")):
            j = i + 1
            while j < len(toks) and toks[j][0] != ";" and toks[j][0] != "{":
                j += 1
            if j < len(toks) and toks[j][0] == ";":
                out.append({"tokens": [t[0] for t in toks[i + 1 : j]], "line": toks[i][1], "col": toks[i][2],
                            "namespace": "::".join(p for _, parts in ns_stack for p in parts)})
                if names is not None:
                    names.update(t[0] for t in toks[i + 1 : j] if t[0][:1].isalpha() or t[0][:1] == "_")
            i = j
        i += 1
    return out


def _parse(tokens: list[str]):
    """(qualified name, template argument texts, parameter type texts, is a kernel) of
    `[__global__] ret name<targs>(params)`, or None for a class or a form without `<...>`."""
    is_kernel = "__global__" in tokens
    for k, t in enumerate(tokens):
        if t == "<" and k > 0 and tokens[k - 1][:1].isalpha() or t == "<" and k > 0 and tokens[k - 1][:1] == "_":
            if tokens[k - 1] == "operator" or k >= 2 and tokens[k - 2] in ("struct", "class", "union"):
                return None
            close = _balanced(tokens, k, "<", ">")
            if close is None or close + 1 >= len(tokens) or tokens[close + 1] != "(":
                return None
            pclose = _balanced(tokens, close + 1, "(", ")")
            if pclose is None:
                return None
            name = [tokens[k - 1]]
            m = k - 2
            while m >= 1 and tokens[m] == "::" and (tokens[m - 1][:1].isalpha() or tokens[m - 1][:1] == "_"):
                name.insert(0, tokens[m - 1])
                m -= 2
            inner = tokens[k + 1 : close] + ([">"] if tokens[close] == ">>" else [])   # `f<g<A>>`
            targs = [normalize(" ".join(a)) for a in _split(inner)]
            params = [normalize(" ".join(_param_type(p))) for p in _split(tokens[close + 2 : pclose])]
            return "::".join(name), targs, [p for p in params if p != "void"], is_kernel
    return None


def _balanced(tokens: list[str], k: int, op: str, cl: str) -> int | None:
    depth = 0
    for j in range(k, len(tokens)):
        t = tokens[j]
        if t == op or t in _OPEN:
            depth += 1
        elif t == cl or t in _CLOSE:
            depth -= 1
            if depth == 0:
                return j if t == cl else None
        elif t == ">>" and op == "<":
            depth -= 2
            if depth <= 0:
                return j if depth == 0 else None
    return None


def _split(tokens: list[str]) -> list[str]:
    """Comma-separated texts at depth 0."""
    out, cur, depth = [], [], 0
    for t in tokens:
        if t in ("<", *_OPEN):
            depth += 1
        elif t in (">", *_CLOSE):
            depth -= 1
        elif t == ">>":
            depth -= 2
        if t == "," and depth == 0:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append(cur)
    return [c for c in out if c]


_TYPE_WORDS = {"const", "volatile", "unsigned", "signed", "long", "short", "int", "char", "float", "double",
               "bool", "void", "auto", "__restrict__", "struct", "class", "typename"}


def _param_type(tokens: list[str]) -> list[str]:
    """A parameter declaration's type tokens: its name (a trailing identifier after a type) dropped."""
    if len(tokens) >= 2 and (tokens[-1][:1].isalpha() or tokens[-1][:1] == "_") and tokens[-1] not in _TYPE_WORDS \
            and tokens[-2] != "::":
        return tokens[:-1]
    return tokens


def _lookup(ix, namespace: str, name: str, params: list[str], is_kernel: bool) -> dict | None:
    """The function template (host) or kernel template the instantiation names: by qualified
    name seen from `namespace`, then by parameter count, then by spelled parameter types."""
    scopes = namespace.split("::") if namespace else []
    wanted = {"::".join(scopes[:n] + [name]) for n in range(len(scopes) + 1)}
    cands = []
    if is_kernel:
        for usr, k in ix.kernels.items():
            if k.get("is_template") and k["qualname"] in wanted:
                ps = [q["type"] for q in k.get("fn_params", [])]
                cands.append({"usr": usr, "kernel": True, "params": ps, "nparams": len(ps)})
    else:
        for usr, cur in ix.defs.items():
            if cur.kind == CK.FUNCTION_TEMPLATE and qualname(cur) in wanted:
                ps = [p.type.spelling for p in child_cursors(cur) if p.kind == CK.PARM_DECL]
                cands.append({"usr": usr, "cursor": cur, "params": ps, "nparams": len(ps)})
    if len(cands) > 1:
        fit = [c for c in cands if c["nparams"] == len(params)]
        cands = fit or cands
    if len(cands) > 1:
        same = [c for c in cands if [_bare(p) for p in c["params"]] == [_bare(p) for p in params]]
        cands = same or cands
    return cands[0] if cands else None


def _bare(text: str) -> str:
    return normalize(text).replace(" ", "")
