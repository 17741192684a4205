"""Recognizers of generic lambdas that take the kernel as `auto`:
`auto launch = [&](auto kernel) { ...; kernel<<<g, b, s, st>>>(...); }; launch(k<T, 0>);`.

The lambda's body is walked once, in place, with the enclosing scope; its launch and use sites
through the parameter carry a `lambda` marker. Each call of the lambda records, per kernel passed,
a *passing site* (a `variable` site whose `var` is the parameter, with the same marker), and the
walk of the enclosing function ends by binding the marked sites to the passing sites' kernels
(`bind_lambda_sites`). Consumers take the template arguments from the passing sites, as for a
kernel variable.
"""

from __future__ import annotations

from ..cursors import CK, callee_name, child_cursors, primary_template, ref_candidates


def _lambda_expr(var):
    """The LAMBDA_EXPR a variable is initialized with (through implicit conversions), or None."""
    stack = child_cursors(var)
    while stack:
        c = stack.pop()
        if c.kind == CK.LAMBDA_EXPR:
            return c
        if c.kind in (CK.UNEXPOSED_EXPR, CK.CALL_EXPR):
            stack.extend(child_cursors(c))
    return None


def generic_lambda(ix, d, scope, branches) -> bool:
    """`auto launch = [&](auto kernel) {...};`: remember the lambda and its `auto` parameters."""
    lam = _lambda_expr(d)
    if lam is None:
        return False
    params = [p for p in child_cursors(lam) if p.kind == CK.PARM_DECL]
    auto = [(i, p) for i, p in enumerate(params) if "auto" in (p.type.spelling or "")]
    if not auto:
        return False
    fname, line, col, off, _ = ix.pos(d)
    info = {"name": d.spelling, "file": ix.files.rel(fname) if fname else None, "line": line, "col": col}
    ix.lambdas[ix.decl_key(d)] = {**info, "params": [(i, p.spelling) for i, p in auto], "nparams": len(params)}
    for i, p in auto:
        ix.lambda_params[ix.decl_key(p)] = {**info, "param": p.spelling}
    return False


def _lambda_callee(ix, children):
    """(lambda record, the call's arguments) when the callee is a generic lambda variable:
    `launch(...)` in dependent code is [launch, args...]; elsewhere clang makes an operator call,
    [launch, operator(), args...]."""
    for i, c in enumerate(children[:2]):
        ref = c.referenced if c.kind in (CK.DECL_REF_EXPR, CK.UNEXPOSED_EXPR) else None
        if ref is not None and ref.kind == CK.VAR_DECL:
            lam = ix.lambdas.get(ix.decl_key(ref))
            if lam is not None:
                args = [a for a in children[i + 1:] if not (
                    a.spelling == "operator()" and a.referenced is not None and a.referenced.kind == CK.CXX_METHOD)]
                return lam, args
    return None, []


def generic_lambda_call(ix, cur, scope, branches) -> bool:
    """`launch(k<T, 0>)`: a passing site per kernel named in an argument bound to an `auto`
    parameter. The call is consumed (a lambda is not a call-graph edge)."""
    lam, args = _lambda_callee(ix, ix.children(cur))
    if lam is None:
        return False
    marker = {k: lam[k] for k in ("name", "file", "line", "col")}
    for i, pname in lam["params"]:
        if i >= len(args):
            continue
        for usr, refcur in ix.kernel_refs(args[i]):
            name, targs = ix.ref_text(refcur)
            site = ix.site_base(refcur, scope, branches, "variable")
            site.update({"kernel": usr, "var": pname, "targs": targs, "callee_text": name,
                         "lambda": {**marker, "param": pname}})
            ix.record(site, scope)
    # calls inside the arguments (rare) are still walked by the caller of the hook
    return True


def kernel_param_to_helper(ix, cur, scope, branches) -> bool:
    """`helper(kernel, ...)` inside a generic lambda, `kernel` its `auto` parameter: a `use` site
    (api `helper`) naming the helper; the call stays a call-graph edge (not consumed)."""
    children = ix.children(cur)
    if not children:
        return False
    for j, arg in enumerate(children[1:]):
        var = ix.var_ref(arg) if arg.kind in (CK.DECL_REF_EXPR, CK.UNEXPOSED_EXPR) else None
        if var is None or var.kind != CK.PARM_DECL:
            continue
        lam = ix.lambda_params.get(ix.decl_key(var))
        if lam is None:
            continue
        site = ix.site_base(cur, scope, branches, "use")
        site.update({"api": "helper", "helper": cur.spelling or callee_name(children[0]), "kernel": None,
                     "via": var.spelling, "targs": None, "callee_text": var.spelling, "lambda": lam})
        uses = _helper_uses(ix, children[0], j)
        if uses:
            site["helper_uses"] = uses
        ix.record(site, scope)
        break
    return False


def _helper_uses(ix, callee, j: int) -> list[dict]:
    """Where the helper uses its j-th parameter (the kernel) in a CUDA API call: `{api, file, line,
    col, param}` per call, e.g. the occupancy query of a persistent-grid helper."""
    from .launches import LAUNCH_APIS, USE_APIS

    stack = [callee]
    cands = []
    while stack and not cands:
        c = stack.pop()
        if c.kind in (CK.OVERLOADED_DECL_REF, CK.DECL_REF_EXPR):
            cands = [primary_template(x) for x in ref_candidates(c)]
        stack.extend(child_cursors(c))
    out = []
    for fn in cands:
        d = fn.get_definition() if fn is not None else None
        if d is None:
            continue
        params = [p for p in child_cursors(d) if p.kind == CK.PARM_DECL]
        if j >= len(params):
            continue
        want = ix.decl_key(params[j])
        todo = [ch for ch in child_cursors(d) if ch.kind == CK.COMPOUND_STMT]
        while todo:
            c = todo.pop()
            if c.kind == CK.CALL_EXPR:
                kids = child_cursors(c)
                name = c.spelling or callee_name(kids[0] if kids else None)
                api = LAUNCH_APIS.get(name) or USE_APIS.get(name)
                if api and any((v := ix.var_ref(a)) is not None and ix.decl_key(v) == want for a in kids[1:]):
                    fname, line, col, _, _ = ix.pos(c)
                    out.append({"api": api, "file": ix.files.rel(fname) if fname else None, "line": line,
                                "col": col, "param": params[j].spelling})
                    continue
            todo.extend(child_cursors(c))
        if out:
            break
    return sorted(out, key=lambda u: (u["line"], u["col"]))


def bind_lambda_sites(fn: dict) -> None:
    """After a function's walk: each launch/use site through a lambda parameter gets the kernels of
    that lambda's passing sites (none: it stays unresolved, saying so)."""
    passing: dict[tuple, list[str]] = {}
    for s in fn["sites"].values():
        if s["kind"] == "variable" and s.get("lambda") and s.get("kernel"):
            passing.setdefault(_lam_key(s["lambda"]), []).append(s["kernel"])
    for s in fn["sites"].values():
        if s["kind"] not in ("launch", "use") or not s.get("lambda"):
            continue
        held = passing.get(_lam_key(s["lambda"]))
        if held:
            s["kernel"] = held[0]
            s["kernels"] = sorted(set(held))
            s.pop("unresolved", None)
        else:
            s["kernel"] = None
            s["unresolved"] = (f"'{s['lambda']['param']}' is a parameter of the generic lambda "
                               f"'{s['lambda']['name']}' and no call of it passes a kernel")


def _lam_key(lam: dict) -> tuple:
    return (lam["name"], lam["file"], lam["line"], lam["col"], lam["param"])
