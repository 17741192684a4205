"""Recognizers of kernels held in variables: `auto kernel = k<...>;`, `kernel = cond ? k<A> : k<B>;`,
and tables of kernel pointers at namespace scope."""

from __future__ import annotations

from ..cursors import CK, child_cursors


def _holds(ix, var, refs, scope, branches) -> None:
    for usr, refcur in refs:
        name, targs = ix.ref_text(refcur)
        ix.var_kernels.setdefault(var.get_usr(), []).append((usr, name, targs, ix.pos(refcur)))
        site = ix.site_base(refcur, scope, branches, "variable")
        site.update({"kernel": usr, "var": var.spelling, "targs": targs, "callee_text": name})
        ix.record(site, scope)


def kernel_variable(ix, d, scope, branches) -> bool:
    """`auto kernel = k<...>;` : remember which kernel(s) the variable holds."""
    for sub in child_cursors(d):
        _holds(ix, d, ix.kernel_refs(sub), scope, branches)
    return False


def kernel_assignment(ix, cur, scope, branches) -> bool:
    """`kernel = k<...>;` to a local variable."""
    children = child_cursors(cur)
    if len(children) != 2:
        return False
    var = ix.var_ref(children[0]) if children[0].kind == CK.DECL_REF_EXPR else None
    if var is None or var.kind != CK.VAR_DECL:
        return False
    _holds(ix, var, ix.kernel_refs(children[1]), scope, branches)
    return False


def kernel_table(ix, var, scope, branches) -> bool:
    """Kernel references at namespace scope (tables of kernel pointers)."""
    stack = child_cursors(var)
    while stack:
        c = stack.pop()
        got = ix.kernel_ref(c) if c.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF, CK.UNEXPOSED_EXPR) else None
        if got:
            usr, refcur = got
            name, targs = ix.ref_text(refcur)
            fname, line, col, off, in_body = ix.pos(refcur)
            ix.globals_uses.append({"kind": "use", "api": "table", "var": var.spelling, "kernel": usr,
                                    "targs": targs, "callee_text": name, "file": ix.files.rel(fname),
                                    "line": line, "col": col, "offset": off, "in_macro_body": in_body})
            continue
        stack.extend(child_cursors(c))
    return False
