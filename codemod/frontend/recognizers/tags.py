"""Generic-lambda tags: a dispatch helper calls the lambda it is given with a tag whose type
carries the value, `dispatch_bool(flag, [&](auto tag) { constexpr bool kFlag =
decltype(tag)::value; k<kFlag><<<...>>>(...); })` with `f(std::true_type{})` and
`f(std::false_type{})` inside the helper.

The lambda's `auto` parameters are bindings of its body (kind `tag`: which call, which argument,
which lambda parameter); the helper records the argument types of every call through its own
parameters (`param_calls`). The analysis gives each tag the types the helper passes
(analysis/tags.py), and `decltype(std::integral_constant<bool, true>)::value` folds to `true`.
"""

from __future__ import annotations

from ..cursors import CK, child_cursors

_THROUGH = (CK.UNEXPOSED_EXPR, CK.CALL_EXPR, CK.CXX_FUNCTIONAL_CAST_EXPR)


def _lambda_in(arg):
    """The LAMBDA_EXPR an argument is (through implicit conversions and temporaries), or None."""
    stack, depth = [arg], 0
    while stack and depth < 8:
        c = stack.pop()
        if c.kind == CK.LAMBDA_EXPR:
            return c
        if c.kind in _THROUGH:
            stack.extend(child_cursors(c))
        depth += 1
    return None


def tag_lambda_argument(ix, cur, scope, branches) -> bool:
    """A lambda with `auto` parameters passed to a function: its parameters become tag bindings
    of its body (`ix.tag_params`, read by the walk when it enters the lambda). Not consuming."""
    children = ix.children(cur)
    key = None
    for i, arg in enumerate(children[1:]):
        lam = _lambda_in(arg)
        if lam is None:
            continue
        params = [p for p in child_cursors(lam) if p.kind == CK.PARM_DECL]
        for j, p in enumerate(params):
            if "auto" in (p.type.spelling or "") or "type-parameter" in (p.type.spelling or ""):
                key = key or ix.call_key(cur)
                ix.tag_params[ix.decl_key(p)] = {"call_at": key, "arg": i, "pos": j, "param": p.spelling}
    return False


def parameter_call(ix, cur, scope, branches) -> bool:
    """`f(std::true_type{})` where `f` is a parameter of the walked function: the argument types,
    canonical (`std::integral_constant<bool, true>`), under `param_calls[index]`. Not consuming."""
    children = ix.children(cur)
    if not children or ix._cur_fn is None:
        return False
    callee = children[0]
    var = ix.var_ref(callee) if callee.kind in (CK.DECL_REF_EXPR, CK.UNEXPOSED_EXPR) else None
    if var is None or var.kind != CK.PARM_DECL:
        return False
    idx = ix.param_index(var)
    if idx is None:
        return False
    args = [a for a in children[1:] if not (a.spelling == "operator()" and a.kind != CK.LAMBDA_EXPR
                                            and a.referenced is not None and a.referenced.kind == CK.CXX_METHOD)]
    types = [a.type.get_canonical().spelling if a.type is not None else "" for a in args]
    calls = ix._cur_fn.setdefault("param_calls", {}).setdefault(str(idx), [])
    if types not in calls:
        calls.append(types)
    return False


def tag_bindings(ix, lam) -> list[tuple[str, dict]]:
    """The tag bindings of a lambda's parameters (the walk adds them to the body's scope)."""
    out = []
    for p in child_cursors(lam):
        if p.kind == CK.PARM_DECL:
            info = ix.tag_params.get(ix.decl_key(p))
            if info is not None:
                out.append((p.spelling, {"value": p.spelling, "kind": "tag", "macro": None, "tag": info}))
    return out
