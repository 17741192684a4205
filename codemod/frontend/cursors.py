"""libclang plumbing shared by the TU walk and the recognizers: cursor children, spelled
positions, constant evaluation, and what a declaration is (kernel, template parameters, name)."""

from __future__ import annotations

import ctypes
import os
import re

import clang.cindex as ci

CK = ci.CursorKind
WORD = re.compile(r"[A-Za-z_]\w*")
INT_KINDS = {ci.TypeKind.INT, ci.TypeKind.UINT, ci.TypeKind.LONG, ci.TypeKind.ULONG, ci.TypeKind.LONGLONG,
              ci.TypeKind.ULONGLONG, ci.TypeKind.SHORT, ci.TypeKind.USHORT, ci.TypeKind.CHAR_S, ci.TypeKind.UCHAR}

FUNCTION_KINDS = (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD, CK.CONSTRUCTOR)
_lib_ready = False


def setup_lib() -> None:
    global _lib_ready
    if _lib_ready:
        return
    lib = ci.conf.lib
    for fn in ("clang_getFileLocation", "clang_getSpellingLocation"):
        f = getattr(lib, fn)
        f.argtypes = [ci.SourceLocation, ctypes.POINTER(ci.c_object_p), ctypes.POINTER(ctypes.c_uint),
                      ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
        f.restype = None
    lib.clang_getNumOverloadedDecls.argtypes = [ci.Cursor]
    lib.clang_getNumOverloadedDecls.restype = ctypes.c_uint
    lib.clang_getOverloadedDecl.argtypes = [ci.Cursor, ctypes.c_uint]
    lib.clang_getOverloadedDecl.restype = ci.Cursor
    lib.clang_getOverloadedDecl.errcheck = ci.Cursor.from_result
    lib.clang_getSpecializedCursorTemplate.argtypes = [ci.Cursor]
    lib.clang_getSpecializedCursorTemplate.restype = ci.Cursor
    lib.clang_getSpecializedCursorTemplate.errcheck = ci.Cursor.from_result
    lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
    lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
    lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getKind.restype = ctypes.c_int
    lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
    lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_dispose.restype = None
    _lib_ready = True


def _collect(child, _parent, out) -> int:
    out.append(child)
    return 1  # CXChildVisit_Continue


_COLLECT = ci.callbacks["cursor_visit"](_collect)


def child_cursors(cursor) -> list:
    """`cursor.get_children()` without its per-call callback and per-child null-cursor check (a
    fifth of the walk)."""
    out: list = []
    ci.conf.lib.clang_visitChildren(cursor, _COLLECT, out)
    for child in out:
        child._tu = cursor._tu  # keeps the TU alive, as cindex does
    return out


def _loc(fn_name: str, loc: ci.SourceLocation, names: dict[int, str] | None = None) -> tuple[str | None, int, int, int]:
    """(file name, line, column, offset); `names` caches file names by libclang's file handle."""
    f, line, col, off = ci.c_object_p(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    getattr(ci.conf.lib, fn_name)(loc, ctypes.byref(f), ctypes.byref(line), ctypes.byref(col), ctypes.byref(off))
    if not f:
        return None, line.value, col.value, off.value
    if names is None:
        return ci.File(f).name, line.value, col.value, off.value
    handle = ctypes.cast(f, ctypes.c_void_p).value
    name = names.get(handle)
    if name is None:
        name = names[handle] = ci.File(f).name
    return name, line.value, col.value, off.value


def file_loc(loc, names: dict[int, str] | None = None):
    return _loc("clang_getFileLocation", loc, names)


def spelling_loc(loc):
    return _loc("clang_getSpellingLocation", loc)


def eval_int(cursor) -> int | None:
    lib = ci.conf.lib
    res = lib.clang_Cursor_Evaluate(cursor)
    if not res:
        return None
    try:
        if lib.clang_EvalResult_getKind(res) == 1:  # CXEval_Int
            return int(lib.clang_EvalResult_getAsLongLong(res))
        return None
    finally:
        lib.clang_EvalResult_dispose(res)


_REAL: dict[str, str] = {}


def real_path(name: str) -> str:
    r = _REAL.get(name)
    if r is None:
        r = _REAL[name] = os.path.realpath(name)
    return r


def default_text(param) -> str | None:
    """The spelled default of a template parameter: `16` in `int N = 16`, `X` in `typename T = X`,
    `0` in `enable_if_t<...> = 0`; tokens joined by spaces (comments are not tokens); None without
    one."""
    toks = [t.spelling for t in param.get_tokens()]
    rest = toks[toks.index(param.spelling) + 1:] if param.spelling in toks else toks
    if "=" not in rest:
        return None
    return " ".join(rest[rest.index("=") + 1:]) or None


def template_params(cursor) -> list[dict]:
    params = []
    for ch in child_cursors(cursor):
        if ch.kind == CK.TEMPLATE_TYPE_PARAMETER:
            params.append({"name": ch.spelling, "kind": "type"})
        elif ch.kind == CK.TEMPLATE_NON_TYPE_PARAMETER:
            t = ch.type.spelling
            kind = "function_pointer" if "(*)" in t.replace(" ", "") else "value"
            params.append({"name": ch.spelling, "kind": kind, "type": t})
            canonical = ch.type.get_canonical()
            if canonical.kind == ci.TypeKind.ENUM:
                params[-1]["enum"] = canonical.spelling
        elif ch.kind == CK.TEMPLATE_TEMPLATE_PARAMETER:
            params.append({"name": ch.spelling, "kind": "template"})
        else:
            continue
        text = default_text(ch)
        if text is not None:
            params[-1]["default"] = True
            params[-1]["default_text"] = text
    return params


def _overloads(cursor) -> list:
    lib = ci.conf.lib
    return [lib.clang_getOverloadedDecl(cursor, i) for i in range(lib.clang_getNumOverloadedDecls(cursor))]


def ref_candidates(c) -> list:
    """Declarations an expression may name: overload sets are expanded."""
    if c.kind == CK.OVERLOADED_DECL_REF:
        return _overloads(c)
    ref = c.referenced
    if ref is None:
        return []
    if ref.kind == CK.OVERLOADED_DECL_REF:
        return _overloads(ref)
    return [ref]


def callee_name(c) -> str:
    """Name of a dependent call's callee (such calls have no spelling of their own)."""
    stack = [c] if c is not None else []
    while stack:
        x = stack.pop()
        if x.kind in (CK.OVERLOADED_DECL_REF, CK.DECL_REF_EXPR) and x.spelling:
            return x.spelling
        if x.kind == CK.DECL_REF_EXPR and x.referenced is not None and x.referenced.kind == CK.OVERLOADED_DECL_REF:
            return x.referenced.spelling
        stack.extend(reversed(child_cursors(x)))
    return ""


def primary_template(cursor):
    """The primary template of an implicit specialization; the cursor itself otherwise."""
    if cursor is None:
        return None
    tmpl = ci.conf.lib.clang_getSpecializedCursorTemplate(cursor)
    return tmpl if tmpl is not None else cursor


def device_only(cursor) -> bool:
    """__device__ without __host__: cannot launch kernels (dynamic parallelism is out of scope)."""
    kinds = {ch.kind for ch in child_cursors(cursor)}
    return CK.CUDADEVICE_ATTR in kinds and CK.CUDAHOST_ATTR not in kinds


def is_global(cursor) -> bool:
    return any(ch.kind == CK.CUDAGLOBAL_ATTR for ch in child_cursors(cursor))


def qualname(cursor) -> str:
    parts = []
    c = cursor
    while c is not None and c.kind != CK.TRANSLATION_UNIT:
        if c.spelling:
            parts.append(c.spelling)
        elif c.kind == CK.NAMESPACE:
            parts.append("(anonymous namespace)")
        c = c.semantic_parent
    return "::".join(reversed(parts))
