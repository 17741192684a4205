"""What a site records: the kernels an expression names, the spelled callee and template arguments
(names spelled from the global scope where clang resolved them below the library's outermost
namespace), the spelled position, and the bindings of the scope that the site's text can reach."""

from __future__ import annotations

from .cursors import CK, FUNCTION_KINDS, WORD, child_cursors, is_global, primary_template, qualname, ref_candidates
from .source_text import normalize, read_template_args, read_template_id, splice_varargs, substitute

# References whose declarations `scoped_text` spells, and the declarations that may stand before
# `::` in a nested name.
_REF_KINDS = frozenset({CK.NAMESPACE_REF, CK.TYPE_REF, CK.TEMPLATE_REF, CK.DECL_REF_EXPR,
                        CK.OVERLOADED_DECL_REF})
_SCOPE_KINDS = frozenset({CK.NAMESPACE, CK.NAMESPACE_ALIAS, CK.STRUCT_DECL, CK.CLASS_DECL, CK.UNION_DECL,
                          CK.ENUM_DECL, CK.TYPEDEF_DECL, CK.TYPE_ALIAS_DECL, CK.CLASS_TEMPLATE,
                          CK.TYPE_ALIAS_TEMPLATE_DECL})
_NAMESPACE_KINDS = (CK.NAMESPACE, CK.TRANSLATION_UNIT, CK.LINKAGE_SPEC)
# Expressions that name a kernel, and those whose insides never do (a call's result, a lambda).
_NAME_KINDS = (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF, CK.TEMPLATE_REF)
_OPAQUE_KINDS = (CK.CALL_EXPR, CK.LAMBDA_EXPR)


def _global_spelling(decl) -> str:
    """`::a::b::c::X` for a declaration of namespace `a::b::c` (an unnamed namespace is reached
    through its enclosing one); "" when it lies in the global or outermost namespace, or in a
    class or function (a member, a local, a template parameter: not spelled from outside)."""
    parent = decl.semantic_parent
    if parent is None or parent.kind not in _NAMESPACE_KINDS:
        return ""
    parts = [p for p in qualname(decl).split("::") if p != "(anonymous namespace)"]
    return "::" + "::".join(parts) if len(parts) > 2 else ""


class SiteRecorder:
    """Mixin of `TUIndexer`: the matcher vocabulary the recognizers record sites with.

    Uses the indexer's `loc` (`locations.Locator`), `files`, `_kernel`, the current function's
    facts (`_cur_fn`) and its kernel variables and lambdas (`var_kernels`, `lambda_params`).
    """

    # -- names as clang resolved them ----------------------------------------------------------
    def scoped_text(self, text: str | None, cursors) -> str | None:
        """`text`, spelled where `cursors` are, with each name clang resolved to a declaration
        nested deeper than the library's outermost namespace spelled from the global scope:
        `inner::Config<M>` in `a::b::c` -> `::a::b::c::inner::Config<M>`, `detail::fn` ->
        `::a::b::detail::fn`. The analysis moves argument texts out of the scope that spelled
        them (into callees, into name expressions); a name of the outermost namespace (`a::X`
        spelled `X`) keeps its spelling, which `names.default_namespace` qualifies in apply."""
        if not text:
            return text
        table = self._names_of(cursors)
        if not table:
            return text

        def lookup(name: str):
            head, sep, _ = name.partition("::")
            got = table.get(("q" if sep else "n", head))
            return got + name[len(head):] if got else None

        out = substitute(text, lookup)
        return out if out != normalize(text) else text

    def _names_of(self, cursors) -> dict[tuple[str, str], str]:
        """(role, identifier) -> `::`-qualified spelling of every declaration the references under
        `cursors` name that lies below the outermost namespace; role "q" for what may stand before
        `::` (namespaces, types, templates), "n" for any name. An identifier that also names a
        template parameter, a local or two declarations is left out (never guessed)."""
        found: dict[tuple[str, str], set] = {}
        for root in cursors:
            if root is None:
                continue
            for c in root.walk_preorder():
                if c.kind not in _REF_KINDS:
                    continue
                decls = ref_candidates(c)
                if not decls:
                    continue
                for d in decls:
                    name = d.spelling
                    if not name:
                        continue
                    spelled = _global_spelling(d) if self.loc.declared_in_project(d) else ""
                    roles = ("q", "n") if d.kind in _SCOPE_KINDS else ("n",)
                    for role in roles:
                        found.setdefault((role, name), set()).add(spelled)
        return {k: next(iter(v)) for k, v in found.items() if len(v) == 1 and next(iter(v))}

    # -- kernel references ---------------------------------------------------------------------
    def kernel_ref(self, cur):
        """If `cur` (an expression) names a kernel: (kernel usr, the reference cursor)."""
        stack = [cur]
        while stack:
            c = stack.pop()
            if c.kind in _NAME_KINDS:
                cands = ref_candidates(c)
                for r in map(primary_template, cands):
                    if r is not None and r.kind in FUNCTION_KINDS and is_global(r):
                        self._kernel(r)
                        return r.get_usr(), c
            if c.kind in _OPAQUE_KINDS:
                continue
            stack.extend(reversed(child_cursors(c)))
        return None

    def kernel_refs(self, cur) -> list:
        """Every kernel named in an expression (both arms of a conditional, say)."""
        out, stack = [], [cur]
        while stack:
            c = stack.pop()
            got = self.kernel_ref(c) if c.kind in _NAME_KINDS else None
            if got:
                out.append(got)
                continue
            if c.kind in _OPAQUE_KINDS:
                continue
            stack.extend(reversed(child_cursors(c)))
        return out

    def var_ref(self, cur):
        stack = [cur]
        while stack:
            c = stack.pop()
            if c.kind == CK.DECL_REF_EXPR and c.referenced is not None and c.referenced.kind in (CK.VAR_DECL, CK.PARM_DECL):
                return c.referenced
            stack.extend(reversed(child_cursors(c)))
        return None

    def resolve_kernel_expr(self, expr):
        """A kernel expression: direct template-id, or a variable holding kernels."""
        got = self.kernel_ref(expr)
        if got:
            usr, refcur = got
            name, targs = self.ref_text(refcur)
            return {"kernel": usr, "targs": targs, "callee_text": name, "via": None}
        var = self.var_ref(expr)
        if var is None:
            return None
        if var.kind == CK.PARM_DECL and self.lambda_params:
            lam = self.lambda_params.get(self.decl_key(var))
            if lam is not None:  # bound at the end of the function (recognizers/lambdas.py)
                return {"kernel": None, "via": var.spelling, "lambda": lam, "targs": None,
                        "callee_text": var.spelling}
        held = self.var_kernels.get(var.get_usr())
        if not held and var.kind == CK.VAR_DECL:
            # a table of kernel pointers (local or at namespace scope)
            d = var.get_definition() or var
            refs = [r for ch in child_cursors(d) for r in self.kernel_refs(ch)]
            if refs:
                return {"kernel": refs[0][0], "kernels": sorted({u for u, _ in refs}), "via": var.spelling,
                        "table": True, "targs": None, "callee_text": var.spelling}
        if held:
            return {"kernel": held[0][0], "kernels": sorted({h[0] for h in held}), "via": var.spelling,
                    "targs": None, "callee_text": var.spelling}
        got = {"kernel": None, "via": var.spelling, "unresolved": f"'{var.spelling}' is a "
               + ("function parameter" if var.kind == CK.PARM_DECL else "variable") + " not bound to a kernel template here"}
        if var.kind == CK.PARM_DECL:
            idx = self.param_index(var)
            if idx is not None:   # a launch wrapper: bound per call (recognizers/wrappers.py)
                got["param"] = idx
        return got

    def param_index(self, var) -> int | None:
        """The index of parameter `var` among the parameters of the function being walked, or None
        (a lambda's parameter, another function's)."""
        owner = var.semantic_parent
        fn = self._cur_fn
        if owner is None or fn is None or owner.get_usr() != fn["usr"]:
            return None
        params = [p for p in child_cursors(owner) if p.kind == CK.PARM_DECL]
        return next((i for i, p in enumerate(params) if p == var), None)

    def call_key(self, cur) -> str:
        """The spelled position a call's edge and the kernels passed in it share (`call_at`)."""
        fname, line, col, _, _ = self.loc.pos(cur)
        return f"{self.files.rel(fname) if fname else ''}:{line}:{col}"

    # -- spelled sites -------------------------------------------------------------------------
    def site_base(self, cur, scope, branches, kind, name: str = ""):
        fname, line, col, off, in_body = self.loc.pos(cur)
        if in_body:
            d = self.loc.in_definition(cur, name)
            if d:
                return self._macro_body_site(d, kind, branches)
        return {
            "kind": kind,
            "file": self.files.rel(fname) if fname else None,
            "line": line,
            "col": col,
            "offset": off,
            "in_macro_body": in_body,
            "branches": branches,
        }

    def _macro_body_site(self, d: dict, kind: str, branches) -> dict:
        """A site spelled in a #define (`Locator.in_definition`): its place there, and the
        invocation's arguments as bindings of the macro's parameters."""
        m = d["macro"]
        return {"kind": kind, "file": self.files.rel(d["file"]), "line": d["line"], "col": d["col"],
                "offset": d["offset"], "in_macro_body": True, "branches": branches,
                "macro_args": {p: {"value": a, "kind": "macro_arg",
                                   "macro": {"name": m["name"], "expr": a, "line": m["line"],
                                             "file": self.files.rel(m["file"])},
                                   **({"values": d["alternatives"][p]}
                                      if len(d.get("alternatives", {}).get(p, ())) > 1 else {})}
                               for p, a in d["args"].items()}}

    def ref_text(self, refcur):
        """(spelled callee, template argument texts) of a reference; (None, None) when unread."""
        fname, line, col, off, in_body = self.loc.pos(refcur)
        if in_body:
            d = self.loc.in_definition(refcur, refcur.spelling or (refcur.referenced.spelling if refcur.referenced else ""))
            if not d:
                return None, None
            text = self.files.get(d["file"])
            if "pasted" in d:  # read the template arguments after the pasted name
                name, end = d["pasted"]
                got = (name, read_template_args(text, end))
            else:
                got = read_template_id(text, d["offset"])
            if not got:
                return None, None
            return got[0], self._scoped_args(splice_varargs(got[1], d.get("varargs")), refcur)
        if not fname:
            return None, None
        got = read_template_id(self.files.get(fname), off)
        if not got:
            return None, None
        return got[0], self._scoped_args(got[1], refcur)

    def _scoped_args(self, targs, refcur):
        """Template arguments with their names spelled from the global scope where the spelling
        site's scope is not the library's outermost namespace (`scoped_text`)."""
        if not targs:
            return targs
        kids = child_cursors(refcur)
        return [self.scoped_text(a, kids) for a in targs]

    # -- recording -----------------------------------------------------------------------------
    @staticmethod
    def _relevant(scope, texts) -> dict:
        """Only the bindings a site's text can reach (directly or through other bindings)."""
        d = dict(scope)  # a later binding of a name shadows an earlier one
        want = set()
        todo = [t for t in texts if t]
        while todo:
            for tok in WORD.findall(todo.pop()):
                if tok in d and tok not in want:
                    want.add(tok)
                    todo.append(d[tok]["value"])
        return {k: d[k] for k in sorted(want)}

    def record(self, site, scope, extra=None):
        """Add one copy of a site (its bindings, branches and `extra`) to the current function's
        sites, keyed by kind and spelled position."""
        key = f"{site['kind']}@{site['file']}:{site['line']}:{site['col']}"
        sites = self._cur_fn["sites"]
        texts = list(site.get("targs") or []) + list((extra or {}).get("arg_types") or [])
        branches = site.pop("branches")
        margs = site.pop("macro_args", None)
        if margs:
            # `DISPATCH(DataType, IndexType)` inside a type switch: a parameter named like the
            # alias passed to it is that alias, already in scope
            scope = list(scope) + [(p, b) for p, b in margs.items() if b["value"] != p]
        cx = [b[len("constexpr:"):] for b in branches if b.startswith("constexpr:")]
        copy = {"bindings": self._relevant(scope, texts + cx), "branches": [b for b in branches if not b.startswith("constexpr:")]}
        if cx:
            copy["constexpr"] = cx
        if extra:
            copy.update(extra)
        if key not in sites:
            site["copies"] = []
            sites[key] = site
        if copy not in sites[key]["copies"]:
            sites[key]["copies"].append(copy)
