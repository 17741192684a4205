"""Fully qualified spellings of template arguments for NVRTC name expressions."""

from __future__ import annotations

import re

from ...errors import ApplyError
from ...model import Kernel, Site
from .consteval import NotConstant, evaluate, function_choice
from .spec import MigrateSpec


class Unspellable(Exception):
    """A template argument that has no canonical spelling (the variant cannot be named)."""

_IDENT = re.compile(r"(::)?\b([A-Za-z_][A-Za-z0-9_]*)\b")
_BUILTIN = {"float", "double", "int", "unsigned", "signed", "char", "short", "long", "bool", "true",
            "false", "nullptr", "void", "const", "volatile", "size_t", "int8_t", "uint8_t",
            "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "half"}


def named_value(text: str, values: dict[str, str]) -> str | None:
    """The rule's value (`names.values`) for a constant or enumerator: its key as spelled, or, for
    one the analysis spells from the global scope (`::te::router::Mode::Fast`, docs/analysis.md),
    the key its trailing components spell (`Mode::Fast`), the longest first."""
    text = text.strip()
    if text in values:
        return values[text]
    if text.startswith("::"):
        parts = text[2:].split("::")
        for i in range(len(parts)):
            got = values.get("::".join(parts[i:]))
            if got is not None:
                return got
    return None


def qualify(text: str, spec: MigrateSpec) -> str:
    """`gelu<fp32, Empty>` -> `::actlib::gelu<float, ::actlib::Empty>` (aliases resolved first)."""
    aliases = spec.aliases()
    explicit = spec.names.get("qualify", {})
    values = spec.names.get("values", {})
    ns = spec.names.get("default_namespace")

    def one(m: re.Match) -> str:
        lead, name = m.group(1), m.group(2)
        start = m.start()
        if lead or (start >= 2 and text[start - 2:start] == "::"):
            return m.group(0)
        if name in values:
            return values[name]
        if name in aliases:
            return aliases[name]
        if name in explicit:
            return explicit[name]
        if name in _BUILTIN or name.startswith("__") or name.isdigit() or ns is None:
            return name
        return f"::{ns}::{name}"

    return _IDENT.sub(one, text.strip())


def enum_cast(enum: str) -> str:
    """Opening of an enumeration argument's spelling; the stubs append the number and `)`."""
    return f"static_cast<::{enum.lstrip(':')}>("


def argument(kind: str, value: str, spec: MigrateSpec, enum: str | None = None) -> str:
    """One template argument as it appears in a name expression, canonical so that the host stubs
    render the same text at run time: constant expressions evaluated, `&` on function names, an
    enumeration value as `static_cast<::Enum>(N)` (the analysis gives its number)."""
    if kind == "value":
        # a named constant or enumerator the rule gives a value (`Mode::Balanced: "1"`)
        named = named_value(value, spec.names.get("values", {}))
        value = value if named is None else named
        try:
            v = evaluate(value, spec.type_sizes())
        except NotConstant:
            if enum or (not _IDENT.fullmatch(value.strip()) and not re.fullmatch(r"-?\d+", value.strip())):
                raise Unspellable(value) from None
            return qualify(value, spec)
        if enum:
            return f"{enum_cast(enum)}{int(v)})"
        return ("true" if v else "false") if isinstance(v, bool) else str(v)
    if kind == "function_pointer":
        value = function_choice(value)
    if not re.fullmatch(r"[\w:<>, &*]+", value.strip()):
        raise Unspellable(value)
    q = qualify(value, spec)
    if kind == "function_pointer" and q != "nullptr" and not q.startswith("&"):
        return "&" + q
    return q


ANONYMOUS = "(anonymous namespace)"


def spelled_id(kernel_id: str) -> str:
    """A qualified name as C++ spells it: the analysis writes members of an unnamed namespace as
    `ns::(anonymous namespace)::k`; C++ (and NVRTC's name expressions, also for internal-linkage
    kernels) reach them through the enclosing namespace, `ns::k`."""
    return "::".join(part for part in kernel_id.split("::") if part != ANONYMOUS)


def namespace_parts(namespace: str) -> list[str]:
    """The namespaces to open, outermost first, for a namespace as the analysis writes it; an
    unnamed one is "" (`namespace {`)."""
    return ["" if part == ANONYMOUS else part for part in namespace.split("::") if part]


def site_variants(site: Site, kernel: Kernel, spec: MigrateSpec) -> list[dict[str, str]]:
    """The exact argument tuples the static build instantiated at a site (the analysis' joint
    variants, in the kernel's parameter order), spelled for name expressions."""
    params = kernel.params
    out = []
    for v in site.variants:
        if v.get("kernel", kernel.id) != kernel.id:
            continue
        args = v["args"]
        if len(args) != len(params):
            raise ApplyError(f"variant of {kernel.id} has {len(args)} arguments for {len(params)} "
                             "template parameters", where=f"{site.file}:{site.line}",
                             hint="re-run `codemod analyze`; the analysis JSON may be stale")
        out.append({p.name: argument(p.kind, a, spec, p.enum) for p, a in zip(params, args)})
    return out
