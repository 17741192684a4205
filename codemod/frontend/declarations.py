"""Declarations of one TU as facts: project kernels, function definitions to walk, class facts,
typedefs and named constants at namespace scope, and the bindings (type aliases, constexpr
values) that a statement declares for the sites after it."""

from __future__ import annotations

import re

import clang.cindex as ci

from .cursors import (CK, FUNCTION_KINDS, INT_KINDS, child_cursors, device_only, eval_int, is_global, qualname,
                      template_params)
from .recognizers import recognize
from .source_text import normalize
from .traits import class_facts, qualify_self_named

# The declarations `Declarations._decl` records or descends into.
_DECL_KINDS = frozenset({CK.NAMESPACE, CK.LINKAGE_SPEC, CK.UNEXPOSED_DECL, CK.STRUCT_DECL, CK.CLASS_DECL,
                        CK.CLASS_TEMPLATE, CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, CK.TYPEDEF_DECL,
                        CK.TYPE_ALIAS_DECL, CK.VAR_DECL, *FUNCTION_KINDS})

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


class Declarations:
    """Mixin of `TUIndexer`: what declarations say, at namespace scope and in a block.

    Fills the indexer's `kernels`, `defs`, `classes`, `typedefs` and `type_sizes`; uses its `tu`,
    `loc` (`locations.Locator`), `files` and `scoped_text` (`sites.SiteRecorder`).
    """

    def _top_level(self) -> None:
        """Every project declaration of the TU; the standard typedefs spelled as clang's canonical
        type (`int32_t` and `int` name one instantiation)."""
        system_typedefs = {}
        top_level = child_cursors(self.tu.cursor)
        self.loc.index_expansions(top_level)
        for cur in top_level:
            if cur.kind in _DECL_KINDS and self.loc.declared_in_project(cur):
                self._decl(cur)
            elif cur.kind == CK.TYPEDEF_DECL and cur.spelling in _STD_TYPEDEFS:
                system_typedefs[cur.spelling] = cur.underlying_typedef_type.get_canonical().spelling
            elif cur.kind == CK.LINKAGE_SPEC:  # extern "C" { typedef ... int32_t; }
                for ch in child_cursors(cur):
                    if ch.kind == CK.TYPEDEF_DECL and ch.spelling in _STD_TYPEDEFS:
                        system_typedefs[ch.spelling] = ch.underlying_typedef_type.get_canonical().spelling
        for name, canon in {**_STD_TYPEDEFS, **system_typedefs}.items():
            self.typedefs.setdefault(name, canon)

    def _decl(self, cur):
        k = cur.kind
        if k in (CK.NAMESPACE, CK.LINKAGE_SPEC, CK.UNEXPOSED_DECL):
            for ch in child_cursors(cur):
                if ch.kind in _DECL_KINDS and self.loc.declared_in_project(ch):
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

    def _kernel(self, cur):
        usr = cur.get_usr()
        if usr in self.kernels:
            return
        f, line, col, off, _ = self.loc.pos(cur)
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
        d = cur.get_definition()
        df = self.loc.file_loc(d.location)[0] if d is not None else None
        if df and self.files.in_project(df):
            # where its body is: a TU that does not include it compiles no instantiation of it
            self.kernels[usr]["def_files"] = [self.files.rel(df)]

    def decl_key(self, decl) -> tuple:
        """A declaration's identity within this parse: its spelled file and offset (local
        declarations of dependent code have no usable USR)."""
        fname, _, _, off, _ = self.loc.pos(decl)
        return (fname, off)

    # -- bindings ------------------------------------------------------------------------------
    def _binding_of(self, decl) -> tuple[str, dict] | None:
        """A local alias or constexpr declared in a compound statement: name -> value + origin."""
        fname, line, col, off, in_body = self.loc.pos(decl)
        macro = None
        m = self.loc.macro_at(decl)
        if m:
            name_args = self.loc.macro_args(m, limit=2)
            args = name_args[1] if name_args else []
            macro = {"name": m["name"], "expr": args[0] if args else "", "line": m["line"],
                     "file": self.files.rel(m["file"])}
        made_by_macro = macro is not None or in_body
        if decl.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL):
            return decl.spelling, {"value": self._alias_value(decl, made_by_macro), "kind": "type", "macro": macro}
        if decl.kind == CK.VAR_DECL and self._is_constexpr(decl):
            value = self._constexpr_value(decl, made_by_macro)
            if value is None:
                return None
            binding = {"value": value, "kind": "value", "macro": macro}
            enumerator = _enumerator(decl.type, value)
            if enumerator:
                binding["enumerator"] = enumerator
            return decl.spelling, binding
        return None

    def _alias_value(self, decl, made_by_macro: bool) -> str:
        """A macro-made alias binds clang's canonical type; a spelled one its spelled initializer,
        names spelled from the global scope (`scoped_text`)."""
        self._type_size(decl.underlying_typedef_type)
        if made_by_macro:
            value = decl.underlying_typedef_type.get_canonical().spelling
            if "type-parameter" in value:
                value = decl.underlying_typedef_type.spelling
            return value
        value = self._decl_init_text(decl, alias=True) or decl.underlying_typedef_type.spelling
        return self.scoped_text(qualify_self_named(decl, value), [decl])

    def _constexpr_value(self, decl, made_by_macro: bool) -> str | None:
        """A macro-made constant binds clang's value; a spelled one its spelled initializer."""
        if made_by_macro:
            v = eval_int(decl)
            if v is None:
                return None
            if decl.type.spelling.endswith("bool"):
                return "true" if v else "false"
            return str(v)
        value = self._decl_init_text(decl)
        if value is None:
            return None
        return self.scoped_text(value, child_cursors(decl))

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
        fname, line, col, off, in_body = self.loc.pos(decl)
        if in_body:
            return True  # macro-made constexpr flags (e.g. a condition switch)
        ext = decl.extent
        sf, _, _, soff = self.loc.file_loc(ext.start)
        text = self.files.get(sf)
        return "constexpr" in text[soff:off]

    def _decl_init_text(self, decl, alias: bool = False) -> str | None:
        """Text after '=' of a spelled declaration, up to the ';' that ends it."""
        fname, line, col, off, _ = self.loc.pos(decl)
        ef, _, _, eoff = self.loc.file_loc(decl.extent.end)
        if not fname or ef != fname:
            return None
        text = self.files.get(fname)
        eq = text.find("=", off, eoff + 1)
        if eq < 0:
            return None
        return normalize(text[eq + 1 : eoff + 1].rstrip(";"))
