"""Launch wrappers: a function that takes the kernel as a parameter and launches it,
`launch(k<T, 4>, grid, block, stream, args...)` with `kernel<<<grid, block, 0, stream>>>(args...)`
inside (a template `Kernel kernel` or a function pointer `void (*kernel)(float *)`).

The launch inside the wrapper is recorded with the index of the parameter it goes through
(sites.py). Each call passing a kernel records a *passing site* per kernel argument (a `variable`
site with `wrapper_arg`: the argument's index, and `call_at`: the call's position, which its call
edge carries too); an argument that is itself the caller's kernel parameter is forwarded
(`from_param`). The analysis binds the wrapper's parameter per call (instantiate.py), so the launch
gets the passed kernels' argument tuples under the callers' environments.
"""

from __future__ import annotations

from ..cursors import CK


def kernel_argument(ix, cur, scope, branches) -> bool:
    """`launch(k<T, 4>, ...)`, `launch(&k<T, 4>, ...)`, `launch(kernel, ...)` with the caller's own
    kernel parameter: a passing site per kernel argument. Not consuming: the call stays an edge."""
    children = ix.children(cur)
    if len(children) < 2 or ix._cur_fn is None:
        return False
    key = None
    for i, arg in enumerate(children[1:]):
        refs = ix.kernel_refs(arg)
        if not refs:
            var = ix.var_ref(arg) if arg.kind in (CK.DECL_REF_EXPR, CK.UNEXPOSED_EXPR) else None
            j = ix.param_index(var) if var is not None and var.kind == CK.PARM_DECL and kernel_typed(ix, arg) else None
            if j is None:
                continue
            key = key or ix.call_key(cur)
            site = ix.site_base(arg, scope, branches, "variable")
            site.update({"kernel": None, "wrapper_arg": i, "from_param": j, "call_at": key, "targs": None})
            ix.record(site, scope)
            continue
        key = key or ix.call_key(cur)
        for usr, refcur in refs:
            name, targs = ix.ref_text(refcur)
            site = ix.site_base(refcur, scope, branches, "variable")
            site.update({"kernel": usr, "targs": targs, "callee_text": name, "wrapper_arg": i, "call_at": key})
            ix.record(site, scope)
    return False


def kernel_typed(ix, arg) -> bool:
    """A parameter that can hold a kernel: a function pointer, or of a template type parameter of
    the walked function (`Kernel kernel`)."""
    t = (arg.type.spelling or "").replace(" ", "")
    tparams = {p["name"] for p in (ix._cur_fn or {}).get("tparams", [])}
    return "(*)" in t or t.rstrip("&*").removeprefix("const") in tparams
