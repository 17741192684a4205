"""Runtime-API uses of a kernel variable that apply rewrites onto the stub object (cooperative
launches, occupancy queries), and the headers an NVRTC program needs for the types its name
expressions spell (declared in a header the kernel's own header does not include)."""

from __future__ import annotations

import re
from pathlib import Path

from ..base import source

# Site APIs (as the analysis names them) apply rewrites on a kernel variable, besides `<<<>>>`
# launches: api -> the stub method the rewrite calls.
COOPERATIVE = "cudaLaunchCooperativeKernel"
OCCUPANCY = "cudaOccupancyMaxActiveBlocksPerMultiprocessor"
STUB_METHODS = {COOPERATIVE: "launch_cooperative", OCCUPANCY: "occupancy"}
# The analysis' site api for occupancy queries (with or without flags).
OCCUPANCY_SITE = "occupancy"

# `reinterpret_cast<void *>(kernel)`, `static_cast<const void*>(kernel)`, `(void *)kernel`,
# `(const void*)(kernel)`: the runtime API's `const void *func` spelled around the variable.
_CAST = re.compile(r"^(?:(?:reinterpret|static)_cast\s*<\s*(?:const\s+)?void\s*\*\s*>\s*\((?P<a>.*)\)"
                   r"|\(\s*(?:const\s+)?void\s*\*\s*\)\s*(?P<b>.*))$", re.S)


def kernel_variable(arg: str | None) -> str | None:
    """The kernel variable a runtime call's kernel argument names, a `void *` cast dropped."""
    if arg is None:
        return None
    text = arg.strip()
    m = _CAST.match(text)
    if m:
        text = (m.group("a") if m.group("a") is not None else m.group("b")).strip()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    return text if re.fullmatch(r"[A-Za-z_]\w*", text) else None


def rewrite_call(call, variables: set[str]) -> str | None:
    """The stub-method call replacing a cooperative launch or an occupancy query whose kernel
    argument is one of `variables` (the cast dropped), or None:
    `cudaLaunchCooperativeKernel(reinterpret_cast<void *>(k), grid, block, args, smem, stream)`
    -> `k.launch_cooperative(grid, block, args, smem, stream)`;
    `cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, threads, smem)` -> `k.occupancy(&n, threads, smem)`.
    The arguments are the call's own, in the runtime API's order."""
    method = STUB_METHODS.get(call.api)
    var = kernel_variable(call.kernel_arg)
    if method is None or var not in variables:
        return None
    if call.api == COOPERATIVE and len(call.args) == 6:
        return f"{var}.{method}({', '.join(call.args[1:])})"
    if call.api == OCCUPANCY and len(call.args) == 4:
        return f"{var}.{method}({', '.join([call.args[0]] + call.args[2:])})"
    return None


def rewritable(site) -> bool:
    """A cooperative launch or an occupancy query on a kernel variable (rewrite_call decides the
    exact form; a site it cannot rewrite is refused by generate's every-site check)."""
    if not site.via:
        return False
    return (site.kind == "launch" and site.api == COOPERATIVE) or (site.kind == "use" and site.api == OCCUPANCY_SITE)


# --- Generic lambdas ----------------------------------------------------------------------------
# A helper a generic lambda hands its `auto kernel` to (TE's compute_persistent_grid) calls the
# stubs' functions of the same job instead of these (rtc_stubs.h: `stubs::occupancy`,
# `stubs::set_attribute`, overloaded for a stub object and for a kernel pointer, which goes to the
# runtime API as before): an explicit call, no overload of a CUDA runtime name found by
# argument-dependent lookup.
ADL_APIS = (OCCUPANCY, "cudaFuncSetAttribute")
HELPER_CALLS = {OCCUPANCY: "occupancy", "cudaFuncSetAttribute": "set_attribute"}


def _called_name(root: Path, use: dict) -> str | None:
    """The function named at a helper use's position (`cudaOccupancy...(` after an optional `::`)."""
    path = root / str(use.get("file") or "")
    if not path.is_file():
        return None
    lines = path.read_bytes().split(b"\n")
    line, col = int(use.get("line") or 0), int(use.get("col") or 0)
    if not 1 <= line <= len(lines):
        return None
    m = re.match(rb"\s*(::\s*)?([A-Za-z_]\w*)", lines[line - 1][max(col - 1, 0):])
    if m is None:
        return None
    return ("::" if m.group(1) else "") + m.group(2).decode()


def helper_refusal(root: Path, site) -> str | None:
    """Why a generic lambda's helper call cannot take the stub object unchanged, or None: every
    CUDA call the helper makes on the kernel must be an unqualified one of ADL_APIS."""
    uses = site.helper_uses or []
    where = f"the helper {site.helper or '?'} called at {site.id}"
    if not uses:
        return (f"{where} takes the kernel and the analysis found no CUDA call on it there: what it does "
                "with a stub object is unknown; migrate that site by hand, or exclude the kernel")
    for use in uses:
        name = _called_name(root, use)
        if name not in ADL_APIS:
            at = f"{use.get('file')}:{use.get('line')}"
            what = f"`{name}`" if name else f"a {use.get('api')} call"
            return (f"{where} hands the kernel to {what} at {at}: the stubs stand in only for the unqualified "
                    f"{' and '.join(ADL_APIS)} on a stub object; migrate that call by hand, or exclude "
                    "the kernel")
    return None


def passing_sites(sites) -> dict[str, dict]:
    """Passing-site id -> record, for the generic lambdas of `sites` (each rewritten to pass the
    stub object: `launch(k<...>)` -> `launch(ns::k<...>())`)."""
    out = {}
    for s in sites:
        for p in (s.generic_lambda or {}).get("passing_sites", []):
            out[p["id"]] = p
    return out


def stub_features(sites) -> dict[str, bool]:
    """Which optional stub methods the migrated sites need (kernels.h emits only those); `adl`: the
    free functions a generic lambda's helper calls (`stubs::occupancy`, `stubs::set_attribute`)."""
    sites = list(sites)
    apis = {s.api for s in sites}
    helper = {u.get("api") for s in sites if s.api == "helper" for u in (getattr(s, "helper_uses", None) or [])}
    adl = any(getattr(s, "generic_lambda", None) for s in sites)
    return {"cooperative": COOPERATIVE in apis, "occupancy": OCCUPANCY_SITE in apis or OCCUPANCY_SITE in helper or adl,
            "adl": adl}


# --- Headers for the name expressions' types -------------------------------------------------

_QUALIFIED = re.compile(r"(?:::)?(?:[A-Za-z_]\w*::)+([A-Za-z_]\w*)")


def spelled_type_names(values) -> set[str]:
    """The unqualified names of the qualified types spelled in name-expression arguments
    (`::ns::Kernel_traits_finalize<1024, float>` -> Kernel_traits_finalize)."""
    return {m.group(1) for v in values for m in _QUALIFIED.finditer(v)}


def _declares(data: bytes, name: str) -> bool:
    """Whether `data` declares `name`: a declaration, or an enumerator (`::E::kName`, the analysis'
    spelling of an enumeration constant nested in a type argument)."""
    return any(True for _ in source.declarations(data, {name})) or name in source.enumerators(data)


def type_headers(root: Path, names: set[str], reached: list[str], units: list[str], resolve,
                 read, known: set[str] = frozenset()) -> tuple[list[str], list[str]]:
    """(headers to include in the NVRTC program, names declared nowhere the units include).

    `reached`: the library files the program already reaches (its kernel header's closure);
    `units`: the files holding the kernel's launch sites, whose includes (breadth first, in
    order) are searched for the first header declaring each name not declared in `reached`;
    `resolve(includer, include) -> repo path | None`; `read(path) -> bytes`; `known`: names the
    program has from elsewhere (the prelude's copies)."""
    missing = sorted(n for n in names - set(known) if not any(_declares(read(p), n) for p in reached))
    if not missing:
        return [], []
    order, seen, todo = [], set(), list(units)
    while todo:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        if path not in units:
            order.append(path)
        for inc in source.includes(read(path)):
            target = resolve(path, inc)
            if target is not None and target not in seen:
                todo.append(target)
    found, nowhere = [], []
    for name in missing:
        header = next((h for h in order if _declares(read(h), name)), None)
        if header is None:
            nowhere.append(name)
        elif header not in found:
            found.append(header)
    return found, nowhere


# --- One spelling per type --------------------------------------------------------------------

def template_defaults(data: bytes, name: str) -> list[str | None] | None:
    """The default argument of each template parameter of class template `name` declared in
    `data` (None: no default), from its first declaration; None when `data` declares no such
    class template."""
    for _, text in source.declarations(data, {name}):
        root = source.parse(text.encode())
        plist = next((n for n in source._walk(root) if n.type == "template_parameter_list"), None)
        if plist is None:
            continue
        raw = text.encode()
        out = []
        for p in plist.named_children:
            if p.type == "comment":
                continue
            d = p.child_by_field_name("default_value") or p.child_by_field_name("default_type")
            out.append(" ".join(raw[d.start_byte:d.end_byte].decode().split()) if d is not None else None)
        return out
    return None


_LITERAL = re.compile(r"^(?:-?\d+[uUlL]*|true|false)$")


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for c in text:
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def with_literal_defaults(spelling: str, defaults_of) -> str:
    """`spelling` with each class template-id's omitted trailing arguments whose defaults are
    literals (`int N = 16`) spelled out, so that `K<a, b>` and `K<a, b, 16>`, one type, get one
    spelling (the stubs' TypeName<T> specializations would otherwise define it twice). A default
    that is not a literal (it may name other parameters) stops the expansion.
    `defaults_of(name) -> list | None` gives a template's defaults (template_defaults)."""
    out, i = [], 0
    for m in re.finditer(r"([A-Za-z_]\w*)\s*<", spelling):
        if m.start() < i:
            continue
        close, depth = m.end(), 1
        while close < len(spelling) and depth:
            depth += {"<": 1, ">": -1}.get(spelling[close], 0)
            close += 1
        inner = spelling[m.end():close - 1]
        args = [with_literal_defaults(a, defaults_of) for a in _split_args(inner)]
        defaults = defaults_of(m.group(1)) or []
        for d in defaults[len(args):]:
            if d is None or not _LITERAL.match(d):
                break
            args.append(d)
        out.append(spelling[i:m.start()] + f"{m.group(1)}<{', '.join(args)}>")
        i = close
    out.append(spelling[i:])
    return "".join(out)


def without_defaults(template_params: str) -> str:
    """`<typename K, bool F = false>` -> `<typename K, bool F>`: the stubs declare the static
    kernel again, after the library's header, and C++ forbids repeating a default argument."""
    text = f"template {template_params} void codemod_f();".encode()
    plist = next(n for n in source._walk(source.parse(text)) if n.type == "template_parameter_list")
    cuts = []
    for p in plist.named_children:
        d = p.child_by_field_name("default_value") or p.child_by_field_name("default_type")
        if d is not None:
            eq = text.rfind(b"=", p.start_byte, d.start_byte)
            cuts.append((eq, d.end_byte))
    for start, end in reversed(cuts):
        text = text[:start].rstrip() + text[end:]
    return text[plist.start_byte:].decode().split(" void codemod_f")[0].strip()
