"""The statement walk of a function body: scopes (the bindings declared before a statement),
runtime branches (`if`/`switch` conditions on the path), the arms of a macro-made type or value
switch walked once, the recognizer hooks, and call-graph edges for the calls no recognizer took."""

from __future__ import annotations

import re

from .cursors import CK, FUNCTION_KINDS, child_cursors, is_global, primary_template, qualname, ref_candidates
from .recognizers import recognize
from .recognizers.tags import tag_bindings
from .source_text import normalize


class StatementWalk:
    """Mixin of `TUIndexer`: walks statements with their scope and branches.

    Uses the indexer's `loc` (`locations.Locator`), `files`, `_binding_of`
    (`declarations.Declarations`), `scoped_text`, `ref_text`, `site_base`, `record`
    (`sites.SiteRecorder`) and `queue_function`.
    """

    def children(self, cur) -> list:
        """`child_cursors(cur)`, remembered for the last cursor asked (each recognizer of a call asks)."""
        if self._kids is None or self._kids[0] != cur:
            self._kids = (cur, child_cursors(cur))
        return self._kids[1]

    def _walk(self, cur, scope, branches):
        """scope: list of (name, binding) visible here; branches: runtime conditions on the path."""
        k = cur.kind
        if k == CK.COMPOUND_STMT:
            self._walk_stmts(child_cursors(cur), scope, branches)
            return
        if k in (CK.SWITCH_STMT, CK.IF_STMT) and self.loc.macro_at(cur) is not None:
            self._walk_macro_switch(cur, scope, branches)
            return
        if k == CK.IF_STMT:
            self._walk_if(cur, scope, branches)
            return
        if k == CK.SWITCH_STMT:
            children = child_cursors(cur)
            cond = self._cond_text(children[0]) if children and self.loc.macro_at(cur) is None else None
            for ch in children[1:]:
                self._walk(ch, scope, branches + ([f"switch({cond})"] if cond else []), )
            return
        if k == CK.CASE_STMT:
            children = child_cursors(cur)
            label = self._cond_text(children[0]) if children else None
            br = branches
            if label and branches and branches[-1].startswith("switch("):
                br = branches[:-1] + [f"{branches[-1][7:-1]} == {label}"]
            for ch in children[1:]:
                self._walk(ch, scope, br)
            return
        if k == CK.CALL_EXPR:
            if not recognize(self, "call", cur, scope, branches):
                self._call_edge(cur, scope, branches)
        elif k == CK.BINARY_OPERATOR:
            recognize(self, "assignment", cur, scope, branches)
        elif k == CK.LAMBDA_EXPR and self.tag_params:
            scope = extend_scope(scope, tag_bindings(self, cur))   # a generic lambda's tags (recognizers/tags.py)
        for ch in child_cursors(cur):
            self._walk(ch, scope, branches)

    def _walk_stmts(self, stmts, scope, branches):
        """Statements of one block: declarations extend the scope of the statements after them."""
        local = list(scope)
        for ch in stmts:
            if ch.kind == CK.DECL_STMT:
                for d in child_cursors(ch):
                    b = self._binding_of(d) if d.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL, CK.VAR_DECL) else None
                    if b:
                        local = extend_scope(local, [b])
                    if d.kind == CK.VAR_DECL:
                        recognize(self, "local_var", d, local, branches)
                        for sub in child_cursors(d):
                            self._walk(sub, local, branches)
                continue
            self._walk(ch, local, branches)

    def _walk_if(self, cur, scope, branches):
        """The condition (negated in the else arm) is a branch of the arms, `constexpr:` marked
        for `if constexpr`, a compile-time choice rather than a runtime branch."""
        children = child_cursors(cur)
        cond = self._cond_text(children[0]) if children and self.loc.macro_at(cur) is None else None
        fname, line, col, off, in_body = self.loc.pos(cur)
        is_constexpr = False
        if fname and not in_body:
            is_constexpr = self.files.get(fname)[off : off + 40].replace(" ", "").startswith("ifconstexpr")
        for i, ch in enumerate(children):
            br = branches
            if i > 0 and cond:
                text = cond if i == 1 else f"!({cond})"
                br = branches + [("constexpr:" if is_constexpr else "") + text]
            self._walk(ch, scope, br)

    def _cond_text(self, cur) -> str | None:
        """Source text of a condition spelled in the file; None when a macro made it."""
        if self.loc.macro_at(cur) is not None:
            return None
        sf, _, _, soff = self.loc.file_loc(cur.extent.start)
        ef, _, _, eoff = self.loc.file_loc(cur.extent.end)
        if not sf or sf != ef or eoff < soff or eoff - soff > 400:
            return None
        return self.scoped_text(normalize(self.files.get(sf)[soff:eoff]), [cur])

    # -- switches made by a macro ----------------------------------------------------------------
    def _signature(self, cur, depth=0):
        """Where a statement's text lives: equal signatures mean the same spelled source."""
        if cur.kind == CK.COMPOUND_STMT and self.loc.macro_at(cur) is not None and depth < 4:
            return tuple(self._signature(ch, depth + 1) for ch in child_cursors(cur))
        sf, _, _, so = self.loc.file_loc(cur.extent.start)
        ef, _, _, eo = self.loc.file_loc(cur.extent.end)
        return (sf, so, ef, eo)

    def _macro_arms(self, cur):
        """The arms of a macro-made switch/if: (compound arms, other statements), after walking
        the switched expression or condition (calls inside it) in an empty scope."""
        children = child_cursors(cur)
        if not children:
            return False
        comps, others = [], []
        if cur.kind == CK.SWITCH_STMT:
            body = children[-1]
            self._walk(children[0], [], [])  # calls inside the switched expression
            for st in (child_cursors(body) if body.kind == CK.COMPOUND_STMT else [body]):
                c = st
                while c is not None and c.kind in (CK.CASE_STMT, CK.DEFAULT_STMT):
                    sub = child_cursors(c)
                    c = sub[-1] if sub else None
                (comps if c is not None and c.kind == CK.COMPOUND_STMT else others).append(c if c is not None and c.kind == CK.COMPOUND_STMT else st)
        else:
            self._walk(children[0], [], [])
            for ch in children[1:]:
                (comps if ch.kind == CK.COMPOUND_STMT else others).append(ch)
        return comps, others

    def _walk_macro_switch(self, cur, scope, branches) -> None:
        """A switch/if made by a macro (a type or value switch): walk its body once.

        Each arm of such a statement declares the switch's binding (`using T = float;`,
        `constexpr bool F = true;`) and then repeats the same spelled macro argument. Arms with
        the same spelled body are walked once, with a binding that holds every arm's value; the
        consumers expand the product. Arms that differ are walked on their own.
        """
        comps, others = self._macro_arms(cur)
        groups: dict = {}
        for comp in comps:
            kids = child_cursors(comp)
            binds, i = [], 0
            while i < len(kids) and kids[i].kind == CK.DECL_STMT:
                decls = child_cursors(kids[i])
                got = [self._binding_of(d) for d in decls if d.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL, CK.VAR_DECL)]
                if not got or any(g is None for g in got) or len(got) != len(decls):
                    break
                binds += got
                i += 1
            rest = kids[i:]
            if not binds:
                others.append(comp)
                continue
            key = (tuple(n for n, _ in binds), tuple(self._signature(r) for r in rest))
            groups.setdefault(key, []).append((binds, rest))
        for (names, _), arms in groups.items():
            self._walk_stmts(arms[0][1], extend_scope(scope, _merged_bindings(names, arms)), branches)
        for st in others:
            self._walk(st, scope, branches)

    # -- call-graph edges --------------------------------------------------------------------------
    def _call_edge(self, cur, scope, branches):
        """A call no recognizer took: an edge of the call graph when the callee is a project
        function."""
        children = self.children(cur)
        if not children:
            return
        callee = children[0]
        cands = []
        stack = [callee]
        while stack:
            c = stack.pop()
            if c.kind in (CK.OVERLOADED_DECL_REF, CK.DECL_REF_EXPR, CK.MEMBER_REF_EXPR):
                cands = ref_candidates(c)
                refcur = c
                break
            stack.extend(reversed(child_cursors(c)))
        cands = [primary_template(x) for x in cands if x is not None]
        cands = [x for x in cands if x is not None and x.kind in FUNCTION_KINDS and not is_global(x)]
        if not cands:
            return
        cands = [x for x in cands if self.loc.declared_in_project(x)]
        if not cands:
            return
        for c in cands:
            self.queue_function(c.get_definition() or c)
        self.loc.call_cursor = refcur
        name_text, targs = self.ref_text(refcur)
        arg_types = []
        for a in children[1:]:
            t = a.type
            arg_types.append(t.spelling if t is not None else "")
        # a call spelled in a macro body binds the macro's parameters (REGISTER(..., T, ...))
        site = self.site_base(refcur, scope, branches, "call", name_text or refcur.spelling)
        self.loc.call_cursor = None
        site.update({
            "call_at": self.call_key(cur),
            "callees": sorted({c.get_usr() for c in cands}),
            "callee_names": sorted({qualname(c) for c in cands}),
            "targs": targs,
            "callee_text": name_text,
        })
        self.record(site, scope, {"arg_types": arg_types})


def extend_scope(scope: list, new: list) -> list:
    """`scope` with the bindings `new` declared after it. A name declared again (a nested
    `AT_DISPATCH` declares `scalar_t` inside the outer one's lambda) shadows the earlier binding,
    which is renamed (`scalar_t__2`) in the scope and in the values that named it before: `using
    input_t = scalar_t;` of the outer arm keeps the outer type."""
    out = list(scope)
    for name, b in new:
        if any(n == name for n, _ in out):
            alias = f"{name}__{len(out)}"
            word = re.compile(rf"(?<![\w:]){re.escape(name)}(?!\w)")
            out = [(alias if n == name else n,
                    {**ob, "value": word.sub(alias, ob["value"])} if n != name and name in ob["value"] else ob)
                   for n, ob in out]
        out.append((name, b))
    return out


def _merged_bindings(names: tuple, arms: list) -> list:
    """One binding per name for arms walked once: the first arm's, with every arm's value (and
    enumerator) when there are several."""
    merged = []
    for j, name in enumerate(names):
        first = arms[0][0][j][1]
        values = [a[0][j][1]["value"] for a in arms]
        enumerators = [a[0][j][1].get("enumerator") for a in arms]
        merged.append((name, {**first, "values": values,
                              **({"enumerators": enumerators} if any(enumerators) else {})}
                       if len(arms) > 1 else first))
    return merged
