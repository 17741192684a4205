"""Walk one libclang translation unit into plain, cacheable facts.

Facts per TU: kernels (`__global__` functions and templates), host functions defined under the
project root with their call sites, launch sites and other host uses of kernels, each at its
spelled position, with the per-expansion bindings (type aliases and constexpr values declared
around it) that a type-switch macro expansion gives every copy. Nothing here interprets them.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections import Counter
from pathlib import Path

import clang.cindex as ci

from .cursors import (CK, FUNCTION_KINDS, INT_KINDS, WORD, child_cursors, device_only, eval_int,
                      file_loc, is_global, primary_template, qualname, real_path, ref_candidates, setup_lib,
                      template_params)
from .recognizers import END_OF_FUNCTION, recognize
from .traits import class_facts, qualify_self_named
from .source_text import (bind_macro_args, find_pasted, macro_params, normalize, read_macro_args,
                          read_template_args, read_template_id, splice_varargs, substitute, vararg_names)

# The declarations `TUIndexer._decl` records or descends into.
_DECL_KINDS = frozenset({CK.NAMESPACE, CK.LINKAGE_SPEC, CK.UNEXPOSED_DECL, CK.STRUCT_DECL, CK.CLASS_DECL,
                         CK.CLASS_TEMPLATE, CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, CK.TYPEDEF_DECL,
                         CK.TYPE_ALIAS_DECL, CK.VAR_DECL, *FUNCTION_KINDS})


# References whose declarations `TUIndexer.scoped_text` spells, and the declarations that may
# stand before `::` in a nested name.
_REF_KINDS = frozenset({CK.NAMESPACE_REF, CK.TYPE_REF, CK.TEMPLATE_REF, CK.DECL_REF_EXPR,
                        CK.OVERLOADED_DECL_REF})
_SCOPE_KINDS = frozenset({CK.NAMESPACE, CK.NAMESPACE_ALIAS, CK.STRUCT_DECL, CK.CLASS_DECL, CK.UNION_DECL,
                          CK.ENUM_DECL, CK.TYPEDEF_DECL, CK.TYPE_ALIAS_DECL, CK.CLASS_TEMPLATE,
                          CK.TYPE_ALIAS_TEMPLATE_DECL})
_NAMESPACE_KINDS = (CK.NAMESPACE, CK.TRANSLATION_UNIT, CK.LINKAGE_SPEC)


def _global_spelling(decl) -> str:
    """`::a::b::c::X` for a declaration of namespace `a::b::c` (an unnamed namespace is reached
    through its enclosing one); "" when it lies in the global or outermost namespace, or in a
    class or function (a member, a local, a template parameter: not spelled from outside)."""
    parent = decl.semantic_parent
    if parent is None or parent.kind not in _NAMESPACE_KINDS:
        return ""
    parts = [p for p in qualname(decl).split("::") if p != "(anonymous namespace)"]
    return "::" + "::".join(parts) if len(parts) > 2 else ""


# Standard typedefs that template arguments spell (`IndexType = int32_t`), canonicalized like the
# types a switch macro's aliases give (`int`): clang's canonical type where the TU declares the
# name at top level, else the LP64 one (the host the frontend parses for is x86_64 Linux).
_STD_TYPEDEFS = {"int8_t": "signed char", "int16_t": "short", "int32_t": "int", "int64_t": "long",
                 "uint8_t": "unsigned char", "uint16_t": "unsigned short", "uint32_t": "unsigned int",
                 "uint64_t": "unsigned long", "size_t": "unsigned long", "ptrdiff_t": "long", "intptr_t": "long",
                 "uintptr_t": "unsigned long"}



def _enumerator(t, value: str) -> str | None:
    """`::E::kName` for a constant of enumeration type whose value is one of E's enumerators: the
    spelling of the value nested in a template-id (`Config<::E::kName, true>`), where a bare number
    is no valid argument of an enumeration parameter. None otherwise (not an enumeration, an
    unnamed one, one in an unnamed namespace, a value no enumerator has)."""
    canon = t.get_canonical()
    if canon.kind != ci.TypeKind.ENUM or not re.fullmatch(r"-?\d+", value):
        return None
    decl = canon.get_declaration()
    name = qualname(decl)
    if not decl.spelling or "(anonymous namespace)" in name:
        return None
    for ch in child_cursors(decl):
        if ch.kind == CK.ENUM_CONSTANT_DECL and ch.enum_value == int(value):
            return f"::{name}::{ch.spelling}"
    return None

class _Files:
    """File text and hashes, read once per parse."""

    def __init__(self, root: str):
        self.root = real_path(root)
        self.text: dict[str, str] = {}

    def in_project(self, name: str | None) -> bool:
        return bool(name) and real_path(name).startswith(self.root + os.sep)

    def rel(self, name: str) -> str:
        return os.path.relpath(real_path(name), self.root)

    def get(self, name: str) -> str:
        """The file's text, one character per byte: clang's offsets are byte offsets, and a UTF-8
        character before a site (a `×` in a comment) would shift every slice after it."""
        real = real_path(name)
        if real not in self.text:
            with open(real, "rb") as fh:
                self.text[real] = fh.read().decode("latin-1")
        return self.text[real]


class TUIndexer:
    def __init__(self, tu: ci.TranslationUnit, root: str):
        setup_lib()
        self.tu = tu
        self.files = _Files(root)
        self.kernels: dict[str, dict] = {}
        self.functions: dict[str, dict] = {}
        self.globals_uses: list[dict] = []
        self.typedefs: dict[str, str] = {}
        self.type_sizes: dict[str, int] = {}  # canonical type spelling -> sizeof, from clang
        self.classes: dict[str, dict] = {}  # qualified name -> traits.class_facts
        self.macros: dict[tuple[str, int], dict] = {}  # (file, offset) -> macro instantiation
        self._macro_args: dict[tuple, tuple | None] = {}  # (file, offset, limit) -> read_macro_args
        self._definitions: dict[tuple, dict | None] = {}  # (file, offset, name) -> _in_definition
        self._ordinals: dict[tuple, dict[int, int]] = {}  # (file, offset, name) -> cursor hash -> k
        self._call_cursor = None  # the callee cursor of the call _call_edge is recording
        self._project_files: dict[int, bool] = {}  # libclang file handle -> under the root
        self._file_names: dict[int, str] = {}  # libclang file handle -> name
        self.defs: dict[str, ci.Cursor] = {}  # usr -> function definition, walked when reached
        self.mains = {real_path(tu.spelling)}
        self._queue: list[str] = []
        self._kids: tuple | None = None
        self.var_kernels: dict[str, list] = {}
        self.lambdas: dict[tuple, dict] = {}
        self.lambda_params: dict[tuple, dict] = {}

    # -- positions -------------------------------------------------------------------------
    def file_loc(self, loc):
        return file_loc(loc, self._file_names)

    def pos(self, cursor):
        """Spelled position, plus whether the cursor was made by a macro body.

        A cursor whose extent starts at a macro invocation's name came from that macro's body
        (text not in the file); one spelled in a macro argument starts after the '('.
        """
        fname, line, col, off = self.file_loc(cursor.location)
        in_body = self.macro_at(cursor) is not None
        return fname, line, col, off, in_body

    def macro_at(self, cursor):
        sf, _, _, soff = self.file_loc(cursor.extent.start)
        if not sf:
            return None
        key = (real_path(sf), soff)
        if key not in self.macros:
            self.macros[key] = self._macro_instantiation(sf, soff)
        return self.macros[key]

    def _macro_instantiation(self, fname: str, off: int):
        """The macro invocation whose name starts at (file, offset), from the preprocessing record
        (looked up on demand: collecting all of them up front costs more than the walk)."""
        if not self.files.in_project(fname):
            return None
        f = self.tu.get_file(fname)
        c = ci.Cursor.from_location(self.tu, ci.SourceLocation.from_offset(self.tu, f, off))
        if c is None or c.kind != CK.MACRO_INSTANTIATION:
            return None
        mf, line, _, moff = self.file_loc(c.location)
        if moff != off:
            return None
        m = {"name": c.spelling, "file": mf, "line": line, "offset": moff}
        d = c.referenced
        if d is not None and d.kind == CK.MACRO_DEFINITION:
            df, _, _, doff = self.file_loc(d.extent.start)
            _, _, _, dend = self.file_loc(d.extent.end)
            if df and self.files.in_project(df):
                m["def"] = (df, doff, dend)
        return m

    # -- top level -------------------------------------------------------------------------
    def declared_in_project(self, cursor) -> bool:
        """Whether a declaration's (expansion) location is in a project file, asked once per file.

        NOTE: the top level holds every declaration of every header, the PCH's included; naming
        each one's file costs more than the rest of a small TU's walk.
        """
        f = ci.c_object_p()
        ci.conf.lib.clang_getInstantiationLocation(cursor.location, ctypes.byref(f), None, None, None)
        if not f:
            return False
        handle = ctypes.cast(f, ctypes.c_void_p).value
        known = self._project_files.get(handle)
        if known is None:
            known = self._project_files[handle] = self.files.in_project(ci.File(f).name)
        return known

    def run(self) -> dict:
        system_typedefs = {}
        for cur in child_cursors(self.tu.cursor):
            if cur.kind in _DECL_KINDS and self.declared_in_project(cur):
                self._decl(cur)
            elif cur.kind == CK.TYPEDEF_DECL and cur.spelling in _STD_TYPEDEFS:
                system_typedefs[cur.spelling] = cur.underlying_typedef_type.get_canonical().spelling
            elif cur.kind == CK.LINKAGE_SPEC:  # extern "C" { typedef ... int32_t; }
                for ch in child_cursors(cur):
                    if ch.kind == CK.TYPEDEF_DECL and ch.spelling in _STD_TYPEDEFS:
                        system_typedefs[ch.spelling] = ch.underlying_typedef_type.get_canonical().spelling
        # `int32_t` and `int` name one instantiation: spell both as clang's canonical type
        for name, canon in {**_STD_TYPEDEFS, **system_typedefs}.items():
            self.typedefs.setdefault(name, canon)
        # Walk only what the TU's own functions reach: the roots are the functions defined in
        # the main file(s); callees are queued as calls are found.
        for usr, cur in self.defs.items():
            f = cur.location.file
            if f is not None and self._is_main(f.name):
                self._queue.append(usr)
        while self._queue:
            usr = self._queue.pop()
            if usr not in self.functions and usr in self.defs:
                self._function(self.defs[usr])
        return {
            "kernels": self.kernels,
            "functions": self.functions,
            "global_uses": self.globals_uses,
            "typedefs": self.typedefs,
            "type_sizes": self.type_sizes,
            "classes": self.classes,
        }

    def _decl(self, cur):
        k = cur.kind
        if k in (CK.NAMESPACE, CK.LINKAGE_SPEC, CK.UNEXPOSED_DECL):
            for ch in child_cursors(cur):
                if ch.kind in _DECL_KINDS and self.declared_in_project(ch):
                    self._decl(ch)
            return
        if k in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE, CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
            if k != CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION and cur.is_definition():
                got = class_facts(cur)  # member constants used as template arguments (KT::N)
                if got is not None:
                    self.classes[qualname(cur)] = got
            for ch in child_cursors(cur):
                if ch.kind in FUNCTION_KINDS or ch.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE):
                    self._decl(ch)
            return
        if k in (CK.TYPEDEF_DECL, CK.TYPE_ALIAS_DECL):
            canon = cur.underlying_typedef_type.get_canonical().spelling
            if "type-parameter" not in canon:
                self.typedefs[cur.spelling] = canon
                self.typedefs[qualname(cur)] = canon
                self._type_size(cur.underlying_typedef_type)
            return
        if k == CK.VAR_DECL:
            # a kernel table at namespace scope, or a named constant (`constexpr int kVec = 4;`)
            if cur.type.is_const_qualified() and cur.type.get_canonical().kind in INT_KINDS:
                v = eval_int(cur)
                if v is not None:
                    self.typedefs[cur.spelling] = str(v)
                    self.typedefs[qualname(cur)] = self.typedefs[cur.spelling]
            recognize(self, "namespace_var", cur, [], [])
            return
        if k in FUNCTION_KINDS:
            if is_global(cur):
                self._kernel(cur)
                return
            if cur.is_definition() and not device_only(cur):
                self.defs.setdefault(cur.get_usr(), cur)

    def _is_main(self, name: str) -> bool:
        return real_path(name) in self.mains

    def _kernel(self, cur):
        usr = cur.get_usr()
        if usr in self.kernels:
            return
        f, line, col, off, _ = self.pos(cur)
        self.kernels[usr] = {
            "usr": usr,
            "name": cur.spelling,
            "qualname": qualname(cur),
            "file": self.files.rel(f) if f else None,
            "line": line,
            "is_template": cur.kind == CK.FUNCTION_TEMPLATE,
            "params": template_params(cur) if cur.kind == CK.FUNCTION_TEMPLATE else [],
            "fn_params": [{"name": p.spelling, "type": p.type.spelling} for p in child_cursors(cur) if p.kind == CK.PARM_DECL],
            "defined": cur.is_definition(),
        }

    # -- functions ---------------------------------------------------------------------------
    def _function(self, cur):
        usr = cur.get_usr()
        if usr in self.functions:
            return
        f, line, col, off, _ = self.pos(cur)
        fn = {
            "usr": usr,
            "name": cur.spelling,
            "qualname": qualname(cur),
            "file": self.files.rel(f),
            "line": line,
            "is_template": cur.kind == CK.FUNCTION_TEMPLATE,
            "tparams": template_params(cur) if cur.kind == CK.FUNCTION_TEMPLATE else [],
            "params": [{"name": p.spelling, "type": p.type.spelling} for p in child_cursors(cur) if p.kind == CK.PARM_DECL],
            "static": cur.storage_class == ci.StorageClass.STATIC,
            "sites": {},
        }
        parent = cur.semantic_parent
        if parent is not None and parent.kind in (CK.CLASS_TEMPLATE, CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
            fn["templated"] = True  # a member of a class template: instantiated, never an entry point
        self.functions[usr] = fn
        self._cur_fn = fn
        self.var_kernels: dict[str, list] = {}
        self.lambdas: dict[tuple, dict] = {}
        self.lambda_params: dict[tuple, dict] = {}
        body = [ch for ch in child_cursors(cur) if ch.kind == CK.COMPOUND_STMT]
        for b in body:
            self._walk(b, [], [])
        for hook in END_OF_FUNCTION:
            hook(fn)

    def decl_key(self, decl) -> tuple:
        """A declaration's identity within this parse: its spelled file and offset (local
        declarations of dependent code have no usable USR)."""
        fname, _, _, off, _ = self.pos(decl)
        return (fname, off)

    def _binding_of(self, decl) -> tuple[str, dict] | None:
        """A local alias or constexpr declared in a compound statement: name -> value + origin."""
        fname, line, col, off, in_body = self.pos(decl)
        macro = None
        m = self.macro_at(decl)
        if m:
            name_args = self.macro_args(m, limit=2)
            args = name_args[1] if name_args else []
            macro = {"name": m["name"], "expr": args[0] if args else "", "line": m["line"],
                     "file": self.files.rel(m["file"])}
        if decl.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL):
            self._type_size(decl.underlying_typedef_type)
            if macro is not None or in_body:
                value = decl.underlying_typedef_type.get_canonical().spelling
                if "type-parameter" in value:
                    value = decl.underlying_typedef_type.spelling
            else:
                value = self._decl_init_text(decl, alias=True) or decl.underlying_typedef_type.spelling
                value = self.scoped_text(qualify_self_named(decl, value), [decl])
            return decl.spelling, {"value": value, "kind": "type", "macro": macro}
        if decl.kind == CK.VAR_DECL and self._is_constexpr(decl):
            if macro is not None or in_body:
                v = eval_int(decl)
                if v is None:
                    return None
                if decl.type.spelling.endswith("bool"):
                    value = "true" if v else "false"
                else:
                    value = str(v)
            else:
                value = self._decl_init_text(decl)
                if value is None:
                    return None
                value = self.scoped_text(value, child_cursors(decl))
            binding = {"value": value, "kind": "value", "macro": macro}
            enumerator = _enumerator(decl.type, value)
            if enumerator:
                binding["enumerator"] = enumerator
            return decl.spelling, binding
        return None

    def _type_size(self, t) -> None:
        """`sizeof` of a concrete type clang knows, by canonical spelling (the analysis folds
        `sizeof(T)` in template arguments with it)."""
        canon = t.get_canonical()
        if canon.spelling not in self.type_sizes and "type-parameter" not in canon.spelling:
            size = canon.get_size()
            if size > 0:
                self.type_sizes[canon.spelling] = size

    def _is_constexpr(self, decl) -> bool:
        if not decl.type.is_const_qualified():
            return False
        fname, line, col, off, in_body = self.pos(decl)
        if in_body:
            return True  # macro-made constexpr flags (e.g. a condition switch)
        ext = decl.extent
        sf, _, _, soff = self.file_loc(ext.start)
        text = self.files.get(sf)
        return "constexpr" in text[soff:off]

    def _decl_init_text(self, decl, alias: bool = False) -> str | None:
        """Text after '=' of a spelled declaration, up to the ';' that ends it."""
        fname, line, col, off, _ = self.pos(decl)
        ef, _, _, eoff = self.file_loc(decl.extent.end)
        if not fname or ef != fname:
            return None
        text = self.files.get(fname)
        eq = text.find("=", off, eoff + 1)
        if eq < 0:
            return None
        return normalize(text[eq + 1 : eoff + 1].rstrip(";"))

    def _cond_text(self, cur) -> str | None:
        """Source text of a condition spelled in the file; None when a macro made it."""
        if self.macro_at(cur) is not None:
            return None
        sf, _, _, soff = self.file_loc(cur.extent.start)
        ef, _, _, eoff = self.file_loc(cur.extent.end)
        if not sf or sf != ef or eoff < soff or eoff - soff > 400:
            return None
        return self.scoped_text(normalize(self.files.get(sf)[soff:eoff]), [cur])

    def _walk_stmts(self, stmts, scope, branches):
        """Statements of one block: declarations extend the scope of the statements after them."""
        local = list(scope)
        for ch in stmts:
            if ch.kind == CK.DECL_STMT:
                for d in child_cursors(ch):
                    b = self._binding_of(d) if d.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL, CK.VAR_DECL) else None
                    if b:
                        local.append(b)
                    if d.kind == CK.VAR_DECL:
                        recognize(self, "local_var", d, local, branches)
                        for sub in child_cursors(d):
                            self._walk(sub, local, branches)
                continue
            self._walk(ch, local, branches)

    def _signature(self, cur, depth=0):
        """Where a statement's text lives: equal signatures mean the same spelled source."""
        if cur.kind == CK.COMPOUND_STMT and self.macro_at(cur) is not None and depth < 4:
            return tuple(self._signature(ch, depth + 1) for ch in child_cursors(cur))
        sf, _, _, so = self.file_loc(cur.extent.start)
        ef, _, _, eo = self.file_loc(cur.extent.end)
        return (sf, so, ef, eo)

    def _macro_arms(self, cur) -> bool:
        """A switch/if made by a macro (a type or value switch): walk its body once.

        Each arm of such a statement declares the switch's binding (`using T = float;`,
        `constexpr bool F = true;`) and then repeats the same spelled macro argument. Arms with
        the same spelled body are walked once, with a binding that holds every arm's value; the
        consumers expand the product. Arms that differ are walked on their own.
        """
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
            merged = []
            for j, name in enumerate(names):
                first = arms[0][0][j][1]
                values = [a[0][j][1]["value"] for a in arms]
                enumerators = [a[0][j][1].get("enumerator") for a in arms]
                merged.append((name, {**first, "values": values,
                                      **({"enumerators": enumerators} if any(enumerators) else {})}
                               if len(arms) > 1 else first))
            self._walk_stmts(arms[0][1], scope + merged, branches)
        for st in others:
            self._walk(st, scope, branches)

    def _walk(self, cur, scope, branches):
        """scope: list of (name, binding) visible here; branches: runtime conditions on the path."""
        k = cur.kind
        if k == CK.COMPOUND_STMT:
            self._walk_stmts(child_cursors(cur), scope, branches)
            return
        if k in (CK.SWITCH_STMT, CK.IF_STMT) and self.macro_at(cur) is not None:
            self._walk_macro_switch(cur, scope, branches)
            return
        if k == CK.IF_STMT:
            children = child_cursors(cur)
            # NOTE: `if constexpr` is a compile-time choice, not a runtime branch.
            cond = self._cond_text(children[0]) if children and self.macro_at(cur) is None else None
            fname, line, col, off, in_body = self.pos(cur)
            is_constexpr = False
            if fname and not in_body:
                is_constexpr = self.files.get(fname)[off : off + 40].replace(" ", "").startswith("ifconstexpr")
            for i, ch in enumerate(children):
                br = branches
                if i > 0 and cond:
                    text = cond if i == 1 else f"!({cond})"
                    br = branches + [("constexpr:" if is_constexpr else "") + text]
                self._walk(ch, scope, br)
            return
        if k == CK.SWITCH_STMT:
            children = child_cursors(cur)
            cond = self._cond_text(children[0]) if children and self.macro_at(cur) is None else None
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
        for ch in child_cursors(cur):
            self._walk(ch, scope, branches)

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
                    spelled = _global_spelling(d) if self.declared_in_project(d) else ""
                    roles = ("q", "n") if d.kind in _SCOPE_KINDS else ("n",)
                    for role in roles:
                        found.setdefault((role, name), set()).add(spelled)
        return {k: next(iter(v)) for k, v in found.items() if len(v) == 1 and next(iter(v))}

    # -- kernel references ---------------------------------------------------------------------
    def kernel_ref(self, cur):
        """If `cur` (an expression) names a kernel, return (kernel usr, position, name, targs)."""
        stack = [cur]
        while stack:
            c = stack.pop()
            if c.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF, CK.TEMPLATE_REF):
                cands = ref_candidates(c)
                for r in map(primary_template, cands):
                    if r is not None and r.kind in FUNCTION_KINDS and is_global(r):
                        self._kernel(r)
                        return r.get_usr(), c
            if c.kind in (CK.CALL_EXPR, CK.LAMBDA_EXPR):
                continue
            stack.extend(reversed(child_cursors(c)))
        return None

    def kernel_refs(self, cur) -> list:
        """Every kernel named in an expression (both arms of a conditional, say)."""
        out, stack = [], [cur]
        while stack:
            c = stack.pop()
            got = self.kernel_ref(c) if c.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF, CK.TEMPLATE_REF) else None
            if got:
                out.append(got)
                continue
            if c.kind in (CK.CALL_EXPR, CK.LAMBDA_EXPR):
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

    def macro_args(self, m: dict, limit: int | None = None):
        """`read_macro_args` at a macro invocation, read once per invocation (a type-switch macro's
        every arm asks again)."""
        key = (m["file"], m["offset"], limit)
        if key not in self._macro_args:
            self._macro_args[key] = read_macro_args(self.files.get(m["file"]), m["offset"], limit)
        return self._macro_args[key]

    def _in_definition(self, cur, name: str):
        """For a cursor made by a macro body: where `name` is spelled in the #define, and the
        invocation's arguments by parameter. None when it cannot be located."""
        m = self.macro_at(cur)
        if not m or "def" not in m or not name:
            return None
        key = (m["file"], m["offset"], name)
        if key not in self._definitions:
            self._definitions[key] = self._locate_in_definition(m, name) or self._locate_in_nested(m, name)
        got = self._definitions[key]
        if got and self._call_cursor is not None and cur == self._call_cursor:
            got = self._nth_occurrence(key, got, name, cur)
        return got

    def _nth_occurrence(self, key: tuple, got: dict, name: str, cur) -> dict:
        """A #define body that calls `name` more than once (`if (b) f<T, B>(...); else f<T, T>(...);`):
        every call of one expansion has the invocation's position, so the k-th call cursor met in
        the walk is taken for the k-th call spelled in the body (the walk follows source order)."""
        text = self.files.get(got["file"])
        start = text.rfind("#define", 0, got["offset"])
        end = start
        while True:  # the #define's last line: no backslash continuation
            nl = text.find("\n", end)
            if nl < 0 or not text[end:nl].rstrip().endswith("\\"):
                end = len(text) if nl < 0 else nl
                break
            end = nl + 1
        calls = [h.start() for h in re.finditer(r"\b" + re.escape(name) + r"\b(?=\s*[<(])", text[start:end])]
        if start < 0 or len(calls) < 2:
            return got
        seen = self._ordinals.setdefault(key, {})
        nth = seen.setdefault(cur.hash, len(seen)) % len(calls)
        off = start + calls[nth]
        q = re.search(r"(?:(?:::)?[A-Za-z_]\w*\s*::\s*)+$", text[start:off])
        if q:
            off = start + q.start()
        return {**got, "offset": off, "line": text.count("\n", 0, off) + 1,
                "col": off - (text.rfind("\n", 0, off) + 1) + 1}

    def _locate_in_nested(self, m: dict, name: str, depth: int = 0):
        """`name` spelled in the body of a macro that the invoked macro's body invokes
        (`#define OUTER(F) INNER(F, Mode::A) ... INNER(F, Mode::B)`): its place in the inner
        #define, and the inner macro's arguments with the outer invocation's substituted. libclang
        does not say which inner invocation made a cursor, so a parameter that differs between
        them holds every value (`alternatives`): each is compiled, whatever branch it sits in."""
        df, doff, dend = m["def"]
        text = self.files.get(df)
        body = text[doff:dend + 1]
        head = re.match(r"\s*(\w+)\s*(\(([^)]*)\))?", body)
        if not head or depth > 2:
            return None
        params = macro_params(head.group(3)) if head.group(2) else []
        inv = self.macro_args(m)
        outer = dict(zip(params, inv[1] if inv else []))
        found = None
        for call in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", body[head.end():]):
            inner = call.group(1)
            d = re.search(r"^[ \t]*#[ \t]*define[ \t]+" + re.escape(inner) + r"\(", text, re.M)
            if inner == head.group(1) or not d:
                continue
            end = d.start()
            while True:  # the #define's last line: no backslash continuation
                nl = text.find("\n", end)
                if nl < 0 or not text[end:nl].rstrip().endswith("\\"):
                    end = len(text) if nl < 0 else nl
                    break
                end = nl + 1
            sub = {"name": inner, "file": df, "line": m["line"], "offset": doff + head.end() + call.start(),
                   "def": (df, d.end() - 1 - len(inner), end - 1)}
            got = self._locate_in_definition(sub, name) or self._locate_in_nested(sub, name, depth + 1)
            if not got:
                continue
            args = {p: substitute(a, lambda n: outer.get(n)) for p, a in got["args"].items()}
            if found is None:
                found = {**got, "macro": m, "args": args, "alternatives": {p: [a] for p, a in args.items()}}
            elif (got["file"], got["offset"]) == (found["file"], found["offset"]):
                for p, a in args.items():
                    if a not in found["alternatives"].setdefault(p, []):
                        found["alternatives"][p].append(a)
        return found

    def _locate_in_definition(self, m: dict, name: str):
        df, doff, dend = m["def"]
        text = self.files.get(df)
        body = text[doff:dend + 1]
        head = re.match(r"\s*(\w+)\s*(\(([^)]*)\))?", body)
        params = macro_params(head.group(3)) if head and head.group(2) else []
        variadic = bool(head and head.group(2) and head.group(3).strip().endswith("..."))
        start = head.end() if head else 0
        inv = self.macro_args(m)
        args = bind_macro_args(params, inv[1] if inv else [], variadic)
        hit = re.search(r"\b" + re.escape(name) + r"\b", body[start:])
        # a name made by token pasting (`launch_##KIND##_<...>`): the pasted spelling
        pasted = None if hit else find_pasted(body[start:], name, args)
        if not hit and not pasted:
            return None
        off = doff + start + (hit.start() if hit else pasted[0])
        # include the qualifiers (`ns::kernel`) so the position is the expression's first byte
        q = re.search(r"(?:(?:::)?[A-Za-z_]\w*\s*::\s*)+$", text[doff:off])
        if q:
            off = doff + q.start()
        line = text.count("\n", 0, off) + 1
        col = off - (text.rfind("\n", 0, off) + 1) + 1
        out = {"file": df, "line": line, "col": col, "offset": off, "macro": m, "args": args}
        if pasted:
            out["pasted"] = (name, doff + start + pasted[1])
        if variadic:
            rest = (inv[1] if inv else [])[len(params) - 1:]
            out["varargs"] = (params[-1], rest)
            args.update(zip(vararg_names(params[-1], len(rest)), rest))
        return out

    def site_base(self, cur, scope, branches, kind, name: str = ""):
        fname, line, col, off, in_body = self.pos(cur)
        if in_body:
            d = self._in_definition(cur, name)
            if d:
                m = d["macro"]
                return {"kind": kind, "file": self.files.rel(d["file"]), "line": d["line"], "col": d["col"],
                        "offset": d["offset"], "in_macro_body": True, "branches": branches,
                        "macro_args": {p: {"value": a, "kind": "macro_arg",
                                           "macro": {"name": m["name"], "expr": a, "line": m["line"],
                                                     "file": self.files.rel(m["file"])},
                                           **({"values": d["alternatives"][p]}
                                              if len(d.get("alternatives", {}).get(p, ())) > 1 else {})}
                                       for p, a in d["args"].items()}}
        return {
            "kind": kind,
            "file": self.files.rel(fname) if fname else None,
            "line": line,
            "col": col,
            "offset": off,
            "in_macro_body": in_body,
            "branches": branches,
        }

    def ref_text(self, refcur):
        fname, line, col, off, in_body = self.pos(refcur)
        if in_body:
            d = self._in_definition(refcur, refcur.spelling or (refcur.referenced.spelling if refcur.referenced else ""))
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

    def _scope_dict(self, scope):
        d = {}
        for name, b in scope:
            d[name] = b
        return d

    def _relevant(self, scope, texts) -> dict:
        """Only the bindings a site's text can reach (directly or through other bindings)."""
        d = self._scope_dict(scope)
        want = set()
        todo = [t for t in texts if t]
        while todo:
            for tok in WORD.findall(todo.pop()):
                if tok in d and tok not in want:
                    want.add(tok)
                    todo.append(d[tok]["value"])
        return {k: d[k] for k in sorted(want)}

    def record(self, site, scope, extra=None):
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

    def resolve_kernel_expr(self, expr):
        """A kernel expression: direct template-id, or a variable holding kernels."""
        got = self.kernel_ref(expr)
        if got:
            usr, refcur = got
            name, targs = self.ref_text(refcur)
            return {"kernel": usr, "targs": targs, "callee_text": name, "via": None}
        var = self.var_ref(expr)
        if var is not None:
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
            return {"kernel": None, "via": var.spelling, "unresolved": f"'{var.spelling}' is a "
                    + ("function parameter" if var.kind == CK.PARM_DECL else "variable") + " not bound to a kernel template here"}
        return None

    def queue_function(self, d) -> str:
        """Walk a project function's definition when the walk gets to it (an edge the call graph
        does not show: a registry entry, a constructor); returns its USR."""
        u = d.get_usr()
        if u not in self.defs and d.is_definition() and not device_only(d):
            self.defs[u] = d
        self._queue.append(u)
        return u

    def children(self, cur) -> list:
        """`child_cursors(cur)`, remembered for the last cursor asked (each recognizer of a call asks)."""
        if self._kids is None or self._kids[0] != cur:
            self._kids = (cur, child_cursors(cur))
        return self._kids[1]

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
        cands = [x for x in cands if self.declared_in_project(x)]
        if not cands:
            return
        for c in cands:
            d = c.get_definition() or c
            u = d.get_usr()
            if u not in self.defs and d.is_definition() and not device_only(d):
                self.defs[u] = d
            self._queue.append(u)
        self._call_cursor = refcur
        name_text, targs = self.ref_text(refcur)
        arg_types = []
        for a in children[1:]:
            t = a.type
            arg_types.append(t.spelling if t is not None else "")
        # a call spelled in a macro body binds the macro's parameters (REGISTER(..., T, ...))
        site = self.site_base(refcur, scope, branches, "call", name_text or refcur.spelling)
        self._call_cursor = None
        site.update({
            "callees": sorted({c.get_usr() for c in cands}),
            "callee_names": sorted({qualname(c) for c in cands}),
            "targs": targs,
            "callee_text": name_text,
        })
        # register callee declarations so their template params are known even if defined elsewhere
        self.record(site, scope, {"arg_types": arg_types})


def group_diagnostics(tu, files: _Files) -> list[dict]:
    """Errors grouped by (message, spelled location), with counts."""
    counter: Counter = Counter()
    first = {}
    from .toolchain import DEPTH_DIAGNOSTIC

    for d in tu.diagnostics:
        if d.severity < ci.Diagnostic.Error or DEPTH_DIAGNOSTIC in d.spelling:
            continue
        loc = d.location
        fname = loc.file.name if loc.file else None
        key = (d.spelling, fname, loc.line, loc.column, d.severity)
        counter[key] += 1
    out = []
    for (msg, fname, line, col, sev), n in sorted(counter.items(), key=lambda kv: (str(kv[0][1]), kv[0][2], kv[0][0])):
        out.append({"severity": "fatal" if sev >= ci.Diagnostic.Fatal else "error", "message": msg,
                    "file": (files.rel(fname) if files.in_project(fname) else fname), "line": line,
                    "col": col, "count": n})
    return out


def parse_tu(path: Path, root: Path, flags: list[str]) -> tuple[ci.TranslationUnit, dict]:
    """Parse one TU (or an umbrella file including several): the libclang TU and the facts that
    need no walk (diagnostics, project and external includes)."""
    setup_lib()
    tu = ci.Index.create().parse(str(path), args=flags, options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    files = _Files(str(root))
    includes = sorted({real_path(inc.include.name) for inc in tu.get_includes() if inc.include is not None})
    return tu, {"diagnostics": group_diagnostics(tu, files),
                "includes": [files.rel(i) for i in includes if files.in_project(i)],
                "external_includes": [i for i in includes if not files.in_project(i)]}


def index_tu(tu: ci.TranslationUnit, root: Path, mains: list[Path] | None = None) -> dict:
    """Walk a parsed TU into its facts (kernels, functions, global uses, typedefs; JSON-serializable).

    `mains`: the files whose functions are the roots of the walk (default: the TU itself).
    """
    indexer = TUIndexer(tu, str(root))
    if mains:
        indexer.mains = {real_path(str(m)) for m in mains}
    return indexer.run()
