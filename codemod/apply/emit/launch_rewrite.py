"""Launch sites onto the stubs: `kernel<<<...>>>(` and `cudaFuncSetAttribute` on a kernel rewritten
to call its stub object, kernel handles taken from the stubs, the include of kernels.h in each
rewritten file, and the check that every site the plan migrates was rewritten."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import ApplyError, UnsupportedConstruct
from ...frontend.treesitter import scan_bytes
from . import explicit_sites, stdnames
from ..plan import kernel_api
from ..base import source
from ..base.changeset import ChangeSet, Edit, hidden_from_nvrtc, relative_include
from ..plan.plan import Plan


def rewrite_sites(root: Path, plan: Plan, cs: ChangeSet, shipped: dict[str, str], values=None) -> None:
    """Rewrite every planned site, then check that each one was (`_check_rewritten`). `values`
    (launcher_values.LauncherValues): the kernels whose factories take runtime parameters."""
    call = values.spell_call if values is not None else (lambda path, at, spelled, args: f"{spelled}({args})")
    rewritten = _rewrite_launches(root, plan, cs, shipped, call)
    rewritten |= _rewrite_at_positions(root, plan, cs, rewritten, call)
    rewritten |= explicit_sites.guard(root, plan, cs)
    _rewrite_helper_calls(root, plan, cs, shipped)
    _check_rewritten(plan, rewritten)


def _rewrite_helper_calls(root: Path, plan: Plan, cs: ChangeSet, shipped: dict[str, str]) -> None:
    """A helper that a generic lambda hands the stub object to (TE's compute_persistent_grid): its
    unqualified `cudaOccupancyMaxActiveBlocksPerMultiprocessor(` / `cudaFuncSetAttribute(` on the
    kernel become the stubs' `occupancy(` / `set_attribute(` (a kernel pointer still reaches the
    runtime), and its file includes their header, rtc_kernel_calls.h (hidden from NVRTC in a shipped
    header; it needs only the CUDA runtime, so a helper in the header the stubs include is fine)."""
    from .generate import kernel_calls_location, stubs_location     # generate imports this module

    header, namespace = kernel_calls_location(plan.spec), stubs_location(plan.spec)[1]
    files: set[str] = set()
    for kp in plan.kernels:
        for site in kp.sites:
            if site.api != "helper" or not site.generic_lambda:
                continue
            for use in site.helper_uses or []:
                path = str(use.get("file") or "")
                data = (root / path).read_bytes()
                starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
                line, col = int(use.get("line") or 0), int(use.get("col") or 0)
                if not 1 <= line <= len(starts):
                    continue
                at = starts[line - 1] + max(col - 1, 0)
                m = re.compile(rb"\s*(" + b"|".join(n.encode() for n in kernel_api.HELPER_CALLS) + rb")\b").match(data, at)
                if m is None:
                    continue        # kernel_api.helper_refusal names what it is
                name = kernel_api.HELPER_CALLS[m.group(1).decode()]
                cs.edits.append(Edit(path, m.start(1), m.end(1), f"::{namespace}::{name}",
                                     "the stubs' call for a helper a generic lambda hands the kernel to"))
                files.add(path)
    for path in sorted(files):
        data = (root / path).read_bytes()
        if f'"{relative_include(header, path)}"'.encode() in data:
            continue
        incs = [i for i in source.includes(data) if not i.nested]
        at = incs[-1].end if incs else 0
        inc = f'#include "{relative_include(header, path)}"\n'
        if path in shipped:
            inc = hidden_from_nvrtc(inc)
        cs.edits.append(Edit(path, at, at, inc, "the stubs' calls of a helper"))


@dataclass
class _Sites:
    """What the rewrite of each file looks up: the migrated kernels and their sites."""
    names: set[str]                     # the kernels' names
    factory_args: dict[str, str]        # a kernel with shared variables: its factory takes the unit's
    ids: set[str]                       # the sites the plan migrates
    deduced: dict[str, list[str]]       # site -> the template arguments its launch deduces
    variables: set[tuple[str, str]]     # (file, kernel variable) launched or configured
    passing: dict                       # a generic lambda's passing sites (kernel_api.passing_sites)

    @classmethod
    def of(cls, plan: Plan) -> _Sites:
        sites = [s for kp in plan.kernels for s in kp.sites]
        return cls(names={kp.name for kp in plan.kernels},
                   factory_args={kp.name: ", ".join(f"::{v}" for v in kp.shared_variables) for kp in plan.kernels},
                   ids={s.id for s in sites},
                   deduced={sid: args for kp in plan.kernels for sid, args in kp.deduced.items()},
                   variables={(s.file, s.via) for s in sites if s.via}, passing=kernel_api.passing_sites(sites))


def _rewrite_launches(root: Path, plan: Plan, cs: ChangeSet, shipped: dict[str, str], call) -> set[str]:
    """The launch and attribute rewrites; returns the ids of the sites rewritten."""
    sites = _Sites.of(plan)
    # a generic lambda's helper: its CUDA calls on the kernel are the stubs' (_rewrite_helper_calls)
    done = {s.id for kp in plan.kernels for s in kp.sites if s.api == "helper" and s.generic_lambda}
    files = sorted({s.file for kp in plan.kernels for s in kp.sites})
    for path in files:
        data = (root / path).read_bytes()
        scan = scan_bytes(path, data)
        spaces = sorted(stdnames._namespaces(source.parse(data), data))
        stub_ns = lambda at: _stub_qualifier(plan.spec.namespace,  # noqa: E731
                                             [n for a, b, n in spaces if a <= at < b])
        done |= _rewrite_launch_calls(path, data, scan.launches, sites, stub_ns, cs, call)
        done |= _rewrite_api_calls(path, scan.api_calls, sites, cs)
        done |= _rewrite_attribute_templates(path, data, scan.api_calls, sites, cs)
        done |= _rewrite_handles(path, data, sites, stub_ns, cs, call)
        _include_stubs(plan, cs, path, data, path in shipped)
    for unit in sorted(set(plan.extractions) - set(files)):
        _include_extracted(plan, cs, unit, plan.extractions[unit].include_at)
    return done


def _rewrite_launch_calls(path: str, data: bytes, launches, sites: _Sites, stub_ns, cs: ChangeSet, call) -> set[str]:
    """`kernel<...><<<cfg>>>(` onto the stub's factory, `var<<<cfg>>>(` onto the kernel variable's
    `.launch(cfg)(`; returns the ids of the sites rewritten."""
    done: set[str] = set()
    text = lambda a, b: data[a:b].decode()      # noqa: E731
    for ls in launches:
        if ls.macro is not None or _has_directive(data, ls.start, ls.end):
            continue        # not rewritten: _check_rewritten names the site
        callee = ls.callee.split("::")[-1].strip()
        cfg = list(ls.config) + ["0", "0"][len(ls.config) - 2:]
        sid = f"{path}:{ls.line}:{ls.col}"
        extra = sites.deduced.get(sid, [])
        if callee in sites.names and sid in sites.ids and (ls.template_args is not None or extra):
            name_end = ls.template_args_range[0] if ls.template_args is not None else ls.callee_range[1]
            name_start = data.rfind(callee.encode(), ls.callee_range[0], name_end)
            if not extra:
                spelled = text(name_start, ls.callee_range[1])
            elif ls.template_args:
                # the deduced arguments follow the spelled ones (explicit arguments are positional)
                close = ls.template_args_range[1] - 1
                spelled = (f"{text(name_start, close).rstrip()}, {', '.join(extra)}>"
                           f"{text(close + 1, ls.callee_range[1])}")
            else:
                spelled = f"{callee}<{', '.join(extra)}>"
            new = (f"{stub_ns(ls.callee_range[0])}::{call(path, name_start, spelled, sites.factory_args[callee])}"
                   f".launch({', '.join(cfg)})(")
        elif (path, ls.callee) in sites.variables and sid in sites.ids:
            new = f"{ls.callee}.launch({', '.join(cfg)})("
        else:
            continue
        cs.edits.append(Edit(path, ls.callee_range[0], ls.args_range[0] + 1, new, "launch through NVRTC"))
        done.add(sid)
    return done


def _rewrite_api_calls(path: str, calls, sites: _Sites, cs: ChangeSet) -> set[str]:
    """CUDA API calls on a kernel variable (`cudaFuncSetAttribute`, occupancy queries, cooperative
    launches) onto the stub object; returns the ids of the sites rewritten."""
    done: set[str] = set()
    for call in calls:
        sid = f"{path}:{call.line}:{call.col}"
        if call.api == "cudaFuncSetAttribute" and (path, call.kernel_arg) in sites.variables and sid in sites.ids:
            done.add(sid)
            rest = ", ".join(call.args[1:])
            cs.edits.append(Edit(path, call.start, call.end, f"{call.kernel_arg}.set_attribute({rest})",
                                 "attribute on the NVRTC kernel"))
            continue
        new = kernel_api.rewrite_call(call, {v for f, v in sites.variables if f == path})
        if new is not None and sid in sites.ids:
            done.add(sid)
            cs.edits.append(Edit(path, call.start, call.end, new, f"{call.api} on the NVRTC kernel"))
    return done


def _rewrite_attribute_templates(path: str, data: bytes, calls, sites: _Sites, cs: ChangeSet) -> set[str]:
    """`cudaFuncSetAttribute(kernel<...>, attr, value)` onto `(kernel<...>(...)).set_attribute(attr,
    value)`: the call's head and the comma after the template-id only, so that _rewrite_handles
    makes the stub object of the template-id as it does for every other handle (TE's
    cast_transpose_fusion.cu sets the carveout this way before each launch). Returns the site ids."""
    done: set[str] = set()
    handles = source.template_ids(data, sites.names)
    for call in calls:
        sid = f"{path}:{call.line}:{call.col}"
        if call.api != "cudaFuncSetAttribute" or sid not in sites.ids or len(call.args) != 3:
            continue
        lo, hi = call.args_range
        inside = [(a, b) for a, b, _ in handles if lo < a < hi]
        if not inside:
            continue
        start, end = min(inside)
        comma = end + len(data[end:hi]) - len(data[end:hi].lstrip())
        if data[lo + 1:start].strip() or data[comma:comma + 1] != b",":
            continue        # the template-id is not the whole first argument: _check_rewritten names it
        # NOTE: parenthesized when its arguments hold a comma: the call often sits in a one-argument
        # macro (`NVTE_CHECK_CUDA(cudaFuncSetAttribute(k<A, B>, ...))`), whose argument the
        # template-id's commas would split once it is no longer inside the call's parentheses.
        paren = b"," in data[start:end]
        cs.edits.append(Edit(path, call.start, lo + 1, "(" if paren else "", "attribute on the NVRTC kernel"))
        cs.edits.append(Edit(path, end, comma + 1, ").set_attribute(" if paren else ".set_attribute(",
                             "attribute on the NVRTC kernel"))
        done.add(sid)
    return done


def _rewrite_handles(path: str, data: bytes, sites: _Sites, stub_ns, cs: ChangeSet, call) -> set[str]:
    """Every other `kernel<...>` (`&kernel<...>`) of a migrated kernel: the stub object from its
    factory; returns the ids of the generic lambdas' passing sites it covers."""
    done: set[str] = set()
    starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
    for start, end, name in source.template_ids(data, sites.names):
        for pid, p in sites.passing.items():      # a generic lambda's passing site gets the stub object
            if p["file"] == path and 1 <= p["line"] <= len(starts) and \
                    start <= starts[p["line"] - 1] + p["col"] - 1 < end:
                done.add(pid)
        t = data[start:end].decode()
        t = t[1:] if t.startswith("&") else t       # `&kernel<...>`: the stub returns an object
        t = t[t.index(name):]
        cs.edits.append(Edit(path, start, end, f"{stub_ns(start)}::{call(path, start, t, sites.factory_args.get(name, ''))}",
                             "kernel handle from the stub"))
    return done


def _include_stubs(plan: Plan, cs: ChangeSet, path: str, data: bytes, shipped: bool) -> None:
    """kernels.h included after the file's last include at file scope (hidden from NVRTC in a shipped
    header), after the header its moved device code went to. An include inside a namespace (TE's
    string headers of its hand-written NVRTC kernels) is code of that namespace, not the place."""
    incs = [i for i in source.includes(data) if not i.nested]
    at = incs[-1].end if incs else 0
    inc = f'#include "{relative_include(f"{plan.spec.output_dir}/kernels.h", path)}"\n'
    if shipped:
        inc = hidden_from_nvrtc(inc)
    if path in plan.extractions:
        # NOTE: a comment line ends the include block, so the target's clang-format (TE sorts
        # and regroups includes) cannot move the stubs above the header they declare again.
        inc = "// The host stubs of the kernels the header above defines.\n" + inc
    _include_extracted(plan, cs, path, at)
    cs.edits.append(Edit(path, at, at, inc, "host stubs"))


def _rewrite_at_positions(root: Path, plan: Plan, cs: ChangeSet, done: set[str], call) -> set[str]:
    """Sites tree-sitter did not find (a launch inside a macro argument that holds statements, as
    TE's nested TRANSFORMER_ENGINE_SWITCH_CONDITION): rewritten from the analysis' position when
    the text there is exactly `var<<<cfg>>>(` or `cudaFuncSetAttribute(var, ...)` with `var` the
    kernel variable, or the same with `kernel<...>` / `&kernel<...>` spelled in place of `var` (TE's
    quantize_transpose_vector_blockwise.cu) and no other edit there. Anything else stays for
    _check_rewritten to refuse."""
    rewritten: set[str] = set()
    sites = _Sites.of(plan)
    for kp in plan.kernels:
        for site in kp.sites:
            if site.id in done or site.in_macro_body or not (site.via or site.axes and all(a.arg for a in site.axes)):
                continue
            data = (root / site.file).read_bytes()
            starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
            if site.line > len(starts):
                continue
            at = starts[site.line - 1] + site.col - 1
            var, var_end = site.via, None
            if var is None:
                found = source.template_id_at(data, at if site.api == "<<<>>>" else source.first_argument(data, at), kp.name)
                if found is None:
                    continue
                var, var_end = found
            if site.kind == "launch" and site.api == "<<<>>>":
                edit = _launch_at(data, at, var, var_end)
            elif site.api == "cudaFuncSetAttribute":
                edit = _attribute_at(data, at, var)
            else:
                edit = None
            if edit is not None and site.via is None:
                spelled = var[1:].lstrip() if var.startswith("&") else var
                handle = (f"{_stub_qualifier(plan.spec.namespace, _namespaces_at(data, at))}::"
                          f"{call(site.file, at, spelled, sites.factory_args.get(kp.name, ''))}")
                if site.api == "cudaFuncSetAttribute" and "," in spelled:
                    handle = f"({handle})"      # as _rewrite_attribute_templates: a macro argument
                edit = (edit[0], edit[1], handle + edit[2][len(var):])
                if any(e.path == site.file and e.start < edit[1] and edit[0] < e.end for e in cs.edits):
                    continue
            if edit is not None and not _has_directive(data, edit[0], edit[1]):
                cs.edits.append(Edit(site.file, edit[0], edit[1], edit[2], "launch through NVRTC (analysis position)"))
                rewritten.add(site.id)
    return rewritten


def _namespaces_at(data: bytes, at: int) -> list[str]:
    return [n for a, b, n in sorted(stdnames._namespaces(source.parse(data), data)) if a <= at < b]


def _launch_at(data: bytes, at: int, var: str, var_end: int | None = None) -> tuple[int, int, str] | None:
    """`var<<<cfg>>>(` at `at` (`var_end`: where a template-id spelled over several lines ends)."""
    m = (re.compile(rb"\s*<<<").match(data, var_end) if var_end is not None
         else re.compile(re.escape(var.encode()) + rb"\s*<<<").match(data, at))
    if m is None:
        return None
    close = data.find(b">>>", m.end())
    cfg = _arguments(data[m.end():close]) if close >= 0 else None
    if cfg is None or not 2 <= len(cfg) <= 4:
        return None
    cfg += ["0", "0"][len(cfg) - 2:]
    paren = re.compile(rb"\s*\(").match(data, close + 3)
    if paren is None:
        return None
    return at, paren.end(), f"{var}.launch({', '.join(cfg)})("


def _attribute_at(data: bytes, at: int, var: str) -> tuple[int, int, str] | None:
    m = re.compile(rb"(::)?cudaFuncSetAttribute\s*\(").match(data, at)
    if m is None:
        return None
    close = matching(data, m.end() - 1)
    args = _arguments(data[m.end():close - 1]) if close >= 0 else None
    if not args or args[0] != var:
        return None
    return at, close, f"{var}.set_attribute({', '.join(args[1:])})"


def _check_rewritten(plan: Plan, rewritten: set[str]) -> None:
    """Every `<<<>>>` launch and kernel-variable attribute site the plan migrates must have been
    rewritten: one left as `kernel<<<...>>>` while its kernel variable became a stub object (a
    launch tree-sitter could not parse, e.g. an `#if` inside `<<<...>>>`) would not compile. So must
    every passing site of a generic lambda (a raw kernel pointer has no `.launch`)."""
    missed = [(kp.kernel.id, s) for kp in plan.kernels for s in kp.sites if s.id not in rewritten]
    passing = kernel_api.passing_sites(s for kp in plan.kernels for s in kp.sites)
    unpassed = sorted(set(passing) - rewritten)
    if unpassed and not missed:
        p = passing[unpassed[0]]
        more = f" (and {len(unpassed) - 1} more)" if len(unpassed) > 1 else ""
        raise UnsupportedConstruct(
            f"{p.get('kernel')} passed to a generic lambda at {p['id']} could not be rewritten to pass the "
            f"stub object: tree-sitter found no `{p.get('callee_text')}<...>` there{more}",
            where=f"{p['file']}:{p['line']}",
            hint="spell the kernel as a template-id at that call, or leave the kernels passed to that lambda "
                 "static with --exclude")
    if missed:
        kid, site = missed[0]
        more = f" (and {len(missed) - 1} more)" if len(missed) > 1 else ""
        raise UnsupportedConstruct(
            f"{'launch' if site.kind == 'launch' else site.api + ' use'} of {kid} at {site.id} could not be "
            f"rewritten: tree-sitter did not find it where the analysis did{more}",
            where=f"{site.file}:{site.line}",
            hint="simplify that statement (no preprocessor conditional inside `<<<...>>>` or the call), "
                 "or leave the kernel static with --exclude")


_DIRECTIVE = re.compile(rb"(?m)^[ \t]*#")


def _has_directive(data: bytes, start: int, end: int) -> bool:
    """A preprocessor line inside a launch: tree-sitter takes `#if 1` for a configuration item."""
    return _DIRECTIVE.search(data, start, end) is not None


def _stub_qualifier(namespace: str, chain: list[str]) -> str:
    """How a launch inside namespaces `chain` names the stubs' namespace: relative to the enclosing
    namespace they share (`rtc_activation` inside `transformer_engine`), unless a namespace in
    between has the same name; else from the global namespace."""
    parts = namespace.split("::")
    parent = parts[:-1]
    if parent and chain[:len(parent)] == parent and parts[-1] not in chain[len(parent):]:
        return parts[-1]
    return "::" + namespace


def _include_extracted(plan: Plan, cs: ChangeSet, path: str, at: int) -> None:
    """A unit whose device code moved includes the new header (before the stubs, which declare
    its kernels again)."""
    ex = plan.extractions.get(path)
    if ex is not None:
        if at != ex.include_at:
            raise ApplyError(f"{path}: its last #include is not where the moved device code's header goes",
                             where=path, hint="put every #include of the unit before its code")
        cs.edits.append(Edit(path, at, at, ex.include_line, f"device code moved to {ex.header}"))


def matching(data: bytes, i: int) -> int:
    """Offset just past the bracket closing the one at `i` (`(`, `[`, `{`), comments, string and
    character literals skipped; -1 when it never closes."""
    pairs = {b"(": b")", b"[": b"]", b"{": b"}"}
    stack, n = [], len(data)
    while i < n:
        c = data[i:i + 1]
        if data[i:i + 2] == b"//":
            i = data.find(b"\n", i)
            i = n if i < 0 else i
            continue
        if data[i:i + 2] == b"/*":
            i = data.find(b"*/", i + 2)
            i = n if i < 0 else i + 2
            continue
        if c in (b'"', b"'"):
            i += 1
            while i < n and data[i:i + 1] != c:
                i += 2 if data[i:i + 1] == b"\\" else 1
        elif c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return -1


def _arguments(text: bytes) -> list[str] | None:
    """The comma-separated expressions of `text` (a launch configuration or a call's arguments),
    as tree-sitter parses them inside a call; None when that parse has an error."""
    prefix = b"void codemod_f() { codemod_g("
    root = source.parse(prefix + text + b"); }")
    if root.has_error:
        return None
    call = next((n for n in source._walk(root) if n.type == "call_expression"), None)
    args = call.child_by_field_name("arguments") if call is not None else None
    if args is None:
        return None
    shift = len(prefix)
    return [" ".join((prefix + text)[a.start_byte:a.end_byte].decode().split())
            for a in args.named_children if a.type != "comment" and a.start_byte >= shift]
