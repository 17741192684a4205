"""Recognizers of indirect dispatch: functions stored in a registry by static registration objects
(`static int r = Registry<P>::add(key, launcher);`, typically made by a REGISTER(...) macro), and
objects built through `std::make_unique<T>(...)` / `std::make_shared<T>(...)`, whose constructor
the call reaches."""

from __future__ import annotations

from ..cursors import CK, FUNCTION_KINDS, child_cursors, is_global, primary_template, qualname

FACTORIES = frozenset({"make_unique", "make_shared"})


def _registered_function(ix, arg):
    """The project function an argument names (`launcher`, `&launcher`), or None."""
    stack = [arg]
    while stack:
        c = stack.pop()
        if c.kind == CK.DECL_REF_EXPR:
            ref = c.referenced
            if ref is not None and ref.kind == CK.FUNCTION_DECL and not is_global(ref) and ix.declared_in_project(ref):
                return ref
            return None
        if c.kind in (CK.UNEXPOSED_EXPR, CK.UNARY_OPERATOR, CK.PAREN_EXPR, CK.CSTYLE_CAST_EXPR):
            stack.extend(child_cursors(c))
    return None


def registration(ix, var, scope, branches) -> bool:
    """`static int r = Registry<P>::add(key, f);` at namespace scope: `f` is registered in
    `Registry` (the primary template's qualified name). A call of any member of that class from
    a reached function reaches `f` (the instantiator's registry edges)."""
    stack = child_cursors(var)
    while stack:
        c = stack.pop()
        if c.kind != CK.CALL_EXPR:
            stack.extend(child_cursors(c))
            continue
        method = c.referenced
        if method is None or method.kind != CK.CXX_METHOD or not method.is_static_method():
            stack.extend(child_cursors(c))
            continue
        owner = primary_template(method.semantic_parent)
        if owner is None or not ix.declared_in_project(owner):
            continue
        for arg in child_cursors(c)[1:]:
            fn = _registered_function(ix, arg)
            if fn is None:
                continue
            d = fn.get_definition() or fn
            usr = ix.queue_function(d)
            fname, line, col, off, in_body = ix.pos(var)
            m = ix.macro_at(var)
            ix.globals_uses.append({"kind": "registration", "registry": qualname(owner), "function": usr,
                                    "function_name": qualname(d), "var": var.spelling,
                                    "file": ix.files.rel(fname) if fname else None, "line": line, "col": col,
                                    "macro": m["name"] if m else None})
    return False


def factory_construction(ix, cur, scope, branches) -> bool:
    """`std::make_unique<C<P>>(args)`: an edge to C's constructors (the factory itself is not
    project code, so without this the walk would stop there)."""
    children = ix.children(cur)
    if not children or cur.spelling not in FACTORIES:
        return False
    ref = children[0]
    while ref.kind == CK.UNEXPOSED_EXPR and child_cursors(ref):
        ref = child_cursors(ref)[0]
    cls = None
    for ch in child_cursors(ref):
        if ch.kind in (CK.TEMPLATE_REF, CK.TYPE_REF) and ch.referenced is not None:
            cls = primary_template(ch.referenced)
            break
    if cls is None or cls.kind not in (CK.CLASS_TEMPLATE, CK.CLASS_DECL, CK.STRUCT_DECL) \
            or not ix.declared_in_project(cls):
        return False
    ctors = [c for c in child_cursors(cls) if c.kind == CK.CONSTRUCTOR
             or (c.kind == CK.FUNCTION_TEMPLATE and c.spelling.split("<")[0] == cls.spelling)]
    if not ctors:
        return False
    usrs = sorted({ix.queue_function(c.get_definition() or c) for c in ctors})
    site = ix.site_base(ref, scope, branches, "call", cur.spelling)
    site.update({"callees": usrs, "callee_names": sorted({f"{qualname(cls)}::{cls.spelling}"}), "targs": [],
                 "callee_text": qualname(cls), "via": cur.spelling})
    ix.record(site, scope, {"arg_types": [a.type.spelling if a.type is not None else "" for a in children[1:]]})
    return True


def _class_named(ref):
    """The project class (primary template) a TEMPLATE_REF/TYPE_REF names, through a member alias
    (`using KernelRegistry = Registry<P>;`)."""
    d = ref.referenced
    if d is not None and d.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL):
        d = next((ch.referenced for ch in child_cursors(d) if ch.kind == CK.TEMPLATE_REF), None)
    d = primary_template(d) if d is not None else None
    return d if d is not None and d.kind in (CK.CLASS_TEMPLATE, CK.CLASS_DECL, CK.STRUCT_DECL) else None


def dependent_member_call(ix, cur, scope, branches) -> bool:
    """`Registry<P>::find(key)` / `KernelRegistry::getKernel(key)` inside a template, where the
    class depends on a template parameter and clang resolves no callee: recorded by name
    (`ns::Registry::find`), without a call-graph edge, so that a registry lookup is seen."""
    children = ix.children(cur)
    if cur.spelling or not children or cur.referenced is not None:
        return False
    callee = children[0]
    if callee.kind not in (CK.MEMBER_REF_EXPR, CK.DECL_REF_EXPR, CK.UNEXPOSED_EXPR) or callee.referenced is not None:
        return False
    cls = next((c for c in map(_class_named, (ch for ch in child_cursors(callee)
                                              if ch.kind in (CK.TEMPLATE_REF, CK.TYPE_REF))) if c is not None), None)
    if cls is None or not ix.declared_in_project(cls):
        return False
    words = [t.spelling for t in callee.get_tokens() if t.kind == t.kind.IDENTIFIER]
    if not words:
        return False
    site = ix.site_base(callee, scope, branches, "call", words[-1])
    site.update({"callees": [], "callee_names": [f"{qualname(cls)}::{words[-1]}"], "targs": [],
                 "callee_text": f"{qualname(cls)}::{words[-1]}"})
    ix.record(site, scope, {"arg_types": []})
    return True
