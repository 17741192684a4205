"""Recognizers of kernel launches and of host API calls on a kernel: `k<...><<<g, b, s, st>>>(...)`,
`cudaLaunchKernel{,Ex,ExC}`, `cudaLaunchCooperativeKernel`, `cuLaunchKernel`,
`cudaFuncSetAttribute` and friends, occupancy queries."""

from __future__ import annotations

from ..cursors import CK, callee_name
from ..source_text import normalize, split_top_level
from .wrappers import kernel_typed

# API name -> the `api` a site records.
LAUNCH_APIS = {
    "cudaLaunchKernel": "cudaLaunchKernel",
    "cudaLaunchKernelEx": "cudaLaunchKernelEx",
    "cudaLaunchKernelExC": "cudaLaunchKernelEx",
    "cudaLaunchCooperativeKernel": "cudaLaunchCooperativeKernel",
    "cuLaunchKernel": "cuLaunchKernel",
}
USE_APIS = {
    "cudaFuncSetAttribute": "cudaFuncSetAttribute",
    "cudaFuncGetAttributes": "cudaFuncGetAttributes",
    "cudaFuncSetCacheConfig": "cudaFuncSetCacheConfig",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor": "occupancy",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": "occupancy",
    "cudaOccupancyMaxPotentialBlockSize": "occupancy",
    "cudaOccupancyAvailableDynamicSMemPerBlock": "occupancy",
}


def triple_chevron_launch(ix, cur, scope, branches) -> bool:
    """`callee<<<config>>>(args)`: clang makes it a call whose second child is the
    `__cudaPushCallConfiguration` call."""
    children = ix.children(cur)
    if not (len(children) >= 2 and children[1].kind == CK.CALL_EXPR
            and children[1].spelling == "__cudaPushCallConfiguration"):
        return False
    res = ix.resolve_kernel_expr(children[0]) or {"kernel": None, "unresolved": "callee is not a kernel reference"}
    site = ix.site_base(cur, scope, branches, "launch", callee_name(children[0]))
    site["api"] = "<<<>>>"
    site.update(res)
    if not site["in_macro_body"]:
        fname, _, _, off, _ = ix.pos(cur)
        got = chevron_texts(ix.files.get(fname), off) if fname else None
        if got:
            site["config"], site["args"] = got
    arg_types = [a.type.spelling if a.type is not None else "" for a in children[2:]]
    ix.record(site, scope, {"arg_types": arg_types})
    return True


def chevron_texts(text: str, off: int) -> tuple[list[str], list[str]] | None:
    """The `<<<grid, block, shmem, stream>>>` and `(args)` texts of the launch whose callee starts
    at `off`, normalized; None when they cannot be read."""
    # NOTE: `<<<` is looked for up to the statement's `;` only: a launch spelled in a macro's body
    # has none after it, and a search to the end of the file per launch was quadratic in TU size.
    semi = text.find(";", off)
    i = text.find("<<<", off, len(text) if semi < 0 else semi)
    j = text.find(">>>", i + 3) if i >= 0 else -1
    if i < 0 or j < 0:
        return None
    config = split_top_level("(" + text[i + 3:j] + ")", "(", ")", 0)
    k = j + 3
    while k < len(text) and text[k].isspace():
        k += 1
    args = split_top_level(text, "(", ")", k)
    if config is None or args is None:
        return None
    return [normalize(c) for c in config[0]], [normalize(a) for a in args[0] if a.strip()]


def _api_name(cur, children) -> str:
    return cur.spelling or callee_name(children[0] if children else None)


def _api_call(ix, cur, children, scope, branches, kind: str, api: str) -> None:
    """The kernel argument: the first one naming a kernel (or a generic lambda's kernel
    parameter, or a launch wrapper's: recognizers/wrappers.py); failing that, the first one of
    function-pointer type (reported as unresolved)."""
    found, fnptr = None, False
    for arg in children[1:]:
        res = ix.resolve_kernel_expr(arg)
        is_fnptr = "(*)" in (arg.type.spelling or "").replace(" ", "")
        if res and (res.get("kernel") or res.get("lambda") or res.get("param") is not None and kernel_typed(ix, arg)):
            found, fnptr = res, is_fnptr
            break
        if res and found is None and is_fnptr:
            found, fnptr = res, True
    if found is not None:
        site = ix.site_base(cur, scope, branches, kind)
        site["api"] = api
        site.update(found)
        if found.get("param") is not None and not fnptr:
            site["param_only"] = True   # dropped unless a caller passes a kernel (analysis)
        ix.record(site, scope)


def launch_api(ix, cur, scope, branches) -> bool:
    """`cudaLaunchKernel(kernel, ...)` and the other launch APIs of `LAUNCH_APIS`."""
    children = ix.children(cur)
    name = _api_name(cur, children)
    if name not in LAUNCH_APIS:
        return False
    _api_call(ix, cur, children, scope, branches, "launch", LAUNCH_APIS[name])
    return True


def use_api(ix, cur, scope, branches) -> bool:
    """`cudaFuncSetAttribute(kernel, ...)`, occupancy queries: the other host APIs of `USE_APIS`."""
    children = ix.children(cur)
    name = _api_name(cur, children)
    if name not in USE_APIS:
        return False
    _api_call(ix, cur, children, scope, branches, "use", USE_APIS[name])
    return True
