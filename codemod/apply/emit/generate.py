"""Plan -> change set: generated files (kernel strings, stubs, prelude, shims), the manifest, edits of
library sources (launch rewrites: launch_rewrite.py, NVRTC guards, stub includes) and CMake lines, one
stage each (`generate`). Text comes from the jinja2 templates under codemod/templates/apply/;
generated C++ is formatted with clang-format."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable

import jinja2

from ... import __version__, strict_json
from ...errors import ApplyError
from . import comments, device_pass, layer, layer_cache, option_scope, own_layer, prelude_copies, sections, \
    setuptools_build, shared_header, stdnames, zero_length
from ..plan import framework_types, kernel_api, shared_variables, target_names
from ..base import source, stacking, stdshim
from . import launcher_values
from ..base.changeset import RTC_ENDIF, RTC_GUARD, RTC_IFNDEF, ChangeSet, Edit, hidden_from_nvrtc, relative_include
from .launch_rewrite import matching, rewrite_sites
from ..plan.names import enum_cast, spelled_id
from .texts import apply_edits
from ..base.tree import host_include, symbol_for
from ..plan.plan import Plan
from .prelude_copies import COPY_HASH_BASE, grouped_checks
from .style import (FALLBACK_STYLE, C_FILE, TargetStyle, find_clang_format, leading_comment, license_header,
                    target_style)


# an identifier (of the names a spelling names)
_IDENT = re.compile(r"[A-Za-z_]\w*")


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("codemod", "templates/apply"),
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                              undefined=jinja2.StrictUndefined)


def render(template: str, **ctx) -> str:
    return _env().get_template(template).render(**ctx)


def clang_format(text: str, filename: str) -> str:
    """`text` formatted in codemod's own style (files that belong to no target: the parity driver)."""
    exe, _ = find_clang_format(None)
    if exe is None:
        raise ApplyError("clang-format not found", hint="pip install clang-format (a codemod dependency)")
    return TargetStyle(exe, None, FALLBACK_STYLE).format(text, filename)


def _line_end(data: bytes, offset: int) -> int:
    nl = data.find(b"\n", offset)
    return len(data) if nl < 0 else nl + 1


def cmake_command_end(data: bytes, open_paren: int) -> int:
    """Offset just past the `)` closing the CMake command whose `(` is at `open_paren` (nested
    parentheses, quoted arguments and `#` comments skipped); -1 when it never closes."""
    depth, i, n = 0, open_paren, len(data)
    while i < n:
        c = data[i:i + 1]
        if c == b'"':
            i += 1
            while i < n and data[i:i + 1] != b'"':
                i += 2 if data[i:i + 1] == b"\\" else 1
        elif c == b"#":
            i = _line_end(data, i) - 1
        elif c == b"(":
            depth += 1
        elif c == b")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _axis_expr(kind: str, param: str, enum: str | None = None) -> str:
    """A template argument as the stubs' AxisValue (rtc_stubs.h.j2): types and functions by their
    spelling in the rule's tables (none: outside the migrated domain), other values as they are."""
    if enum:
        return f'stubs::enum_value({param}, "{enum_cast(enum)}")'
    if kind == "type":
        return f"type_arg<{param}>"
    if kind == "function_pointer":
        return f"fn_arg<{param}>"
    return f"stubs::value({param})"


# What rtc_stubs.h holds for each optional feature: another rule's stubs may need it already. (The
# calls a generic lambda's helper makes, `adl`, are a header of their own: rtc_kernel_calls.h.)
_STUB_FEATURES = {"cooperative": "launch_cooperative(", "occupancy": "occupancy(int *num_blocks",
                  "shared": "struct SharedVariable", "runtime_values": "struct RuntimeValues",
                  "copies": "struct Copy {"}


def _stub_features(root: Path, path: str, plan: Plan, values: bool = False, copies: bool = False) -> dict[str, bool]:
    """The optional launch methods the shared runtime holds: those this rule's sites need and those
    the tree's rtc_stubs.h already has for another rule's (a feature is never taken away)."""
    features = kernel_api.stub_features(s for kp in plan.kernels for s in kp.sites)
    features["shared"] = any(kp.shared_variables for kp in plan.kernels)
    features["runtime_values"] = values
    features["copies"] = copies          # build-time checks of prelude copies (rules without move_to)
    existing = (root / path).read_text() if (root / path).is_file() else ""
    out = {name: needed or _STUB_FEATURES[name] in existing for name, needed in features.items() if name != "adl"}
    out["adl"] = features["adl"] or (root / kernel_calls_location(plan.spec)).is_file()
    return out


def stubs_location(spec) -> tuple[str, str]:
    """(path, namespace) of the stubs' generic runtime, one header for every rule of a library: next
    to the NVRTC layer's header, in a namespace inside the layer's (that of its header type)."""
    qualifier = spec.layer["header_type"].lstrip(":").rpartition("::")[0]
    if not qualifier:
        raise ApplyError(f"nvrtc_layer/header_type {spec.layer['header_type']} names no namespace: the stubs' "
                         "runtime goes into the NVRTC layer's namespace", hint="spell the header type qualified")
    return posixpath.join(posixpath.dirname(spec.layer["header"]), "rtc_stubs.h"), qualifier + "::stubs"


def kernel_calls_location(spec) -> str:
    """The header of the calls that take a stub object or a kernel pointer (`occupancy`,
    `set_attribute`), beside the stubs' runtime, in its namespace."""
    return posixpath.join(posixpath.dirname(stubs_location(spec)[0]), "rtc_kernel_calls.h")


def program_paths(plan: Plan) -> dict[str, str]:
    """Kernel id -> its NVRTC program (`<output_dir>/<header stem>.cu`): one program per header
    that defines kernels, shared by those kernels (with the headers each one's name expressions
    need: _program_headers). The name depends on the header alone, not on which of its kernels a
    run migrates: a rule landed in two pull requests (`--only`, then `--update`) keeps its program
    files. Headers of one stem in two folders get their folder's name in front."""
    out = plan.spec.output_dir
    source = {kp.kernel.id: kp.source_file or kp.kernel.file for kp in plan.kernels}
    stems: dict[str, set] = {}
    for path in source.values():
        stems.setdefault(posixpath.splitext(posixpath.basename(path))[0], set()).add(path)
    by_header: dict[str, list] = {}
    for kp in plan.kernels:
        by_header.setdefault(source[kp.kernel.id], []).append(kp)
    paths = {}
    for kid, path in source.items():
        if _header_alone(by_header[path], plan.spec):
            paths[kid] = path           # the program is the header itself: no file that only includes it
            continue
        stem = posixpath.splitext(posixpath.basename(path))[0]
        if len(stems[stem]) > 1:
            stem = f"{posixpath.basename(posixpath.dirname(path)) or 'root'}_{stem}"
        paths[kid] = f"{out}/{stem}.cu"
    return paths


def _header_alone(kps, spec) -> bool:
    """Whether a program of these kernels (one header's) would include that header and nothing else:
    no header before it (include_first) or after it (type headers), no shared variables, no framework
    aliases. Such a program is the header (its kernel string), named by its library path. A header
    the migration writes (device code extracted from a unit) is one too."""
    return not any(kp.first_headers or kp.type_headers or kp.shared_variables for kp in kps) \
        and not framework_types.uses(kps, spec)


def _program_headers(kps, field: str) -> list[str]:
    """The headers (`type_headers` or `first_headers`) a program's kernels need, in kernel order, each
    once: a program includes what any of its kernels' name expressions spell."""
    out: list[str] = []
    for kp in sorted(kps, key=lambda kp: kp.kernel.id):
        out.extend(h for h in getattr(kp, field) if h not in out)
    return out


def generate(root: Path, plan: Plan, version: str = __version__, formatted: bool = True,
             later: frozenset = frozenset()) -> tuple[Plan, ChangeSet]:
    """(the plan as emitted, the change set). The plan as emitted is a copy whose kernels' header
    sets hold what their NVRTC programs see (each kernel's own file, the std names header and moved
    definitions a prelude includes): the manifest lists those. `plan` itself is left as it was.
    `formatted=False` (--no-format) keeps the templates' raw output instead of clang-format's.
    Generated C++ is formatted with the target's .clang-format and pinned clang-format (style.py).
    `later`: the rules migrated after this one on a tree being regenerated (stacking.py)."""
    plan = _as_emitted(plan)
    style = target_style(root, formatted)
    cmake_file = (plan.spec.cmake or {}).get("file")
    if cmake_file and (root / cmake_file).is_file():
        option_scope.check_global_flags(cmake_file, (root / cmake_file).read_text(errors="replace"), plan.spec.options)
    run = _Run(root, plan, ChangeSet(later=frozenset(later)), style.format,
               target_names.guard_convention(root, plan.spec.library))
    cs, std_cfg = run.cs, plan.spec.kernel_strings.get("std_names")
    programs = program_paths(plan)
    shipped = _kernel_strings(run, programs)
    if std_cfg:
        _std_header_in_prelude_kernels(plan, std_cfg["header"], shipped)
    copies = _preludes(run, shipped, std_cfg)
    _moved_in_prelude_kernels(plan, copies.moved)
    _shims(run)
    _framework_headers(run)
    _nvrtc_guards(run, shipped)
    _zero_length_arrays(root, plan, cs, shipped, std_cfg)
    if std_cfg:
        _std_names(root, plan, cs, shipped, std_cfg, copies.std_used, copies.ints)
    values = launcher_values.plan_values(root, plan)
    rewrite_sites(root, plan, cs, shipped, values)
    launcher_values.collapse_edits(root, values, cs)
    cs.launcher_values = values.summary()
    shipped.update({m.to: symbol_for(m.to) for m in copies.moved})     # the programs' own from here on
    _program_wide_headers(plan, programs)
    stubs = _stub_kernels(run, programs, copies.checks, values)
    features = _stubs_runtime(run, bool(values.params), bool(copies.checks))
    _kernels_h(run, stubs, shipped)
    _kernels_cpp(run, stubs, shipped, copies.checks)
    _nvrtc_layer(run, features)
    device_pass.edits(root, plan.spec, cs)
    comments.edits(root, plan.spec, cs)
    strings = sorted(set(shipped) | set(programs.values()) | {c["file"] for c in copies.checks})   # string headers
    if "setuptools" in plan.spec.raw:
        _setuptools(run, strings, _stub_paths(plan.spec)[1])
    else:
        _cmake(root, plan, cs, strings, _stub_paths(plan.spec)[1])
    _docs(root, plan, cs)
    _api_docs(root, plan, cs)
    _operator_test(root, plan, cs, run.fmt)
    _license_headers(root, plan.spec, cs)
    if style.warning:
        cs.notes.append(f"warning: {style.warning}")
    return plan, cs


def _as_emitted(plan: Plan) -> Plan:
    """emit's own copy of the plan: each kernel's headers with its own file first (the file its
    NVRTC program includes), in a dict the prelude stages add to (_std_header_in_prelude_kernels,
    _moved_in_prelude_kernels)."""
    own = {kp.kernel.id: kp.source_file or kp.kernel.file for kp in plan.kernels}
    return replace(plan, kernels=[replace(kp, headers={own[kp.kernel.id]: own[kp.kernel.id], **kp.headers})
                                  for kp in plan.kernels])


@dataclass
class _Run:
    """What the stages of one generate() call share."""
    root: Path
    plan: Plan
    cs: ChangeSet
    fmt: Callable[[str, str], str]      # generated C++ formatted in the target's style (or not: --no-format)
    guards: target_names.GuardConvention    # the target's include guards

    def guard(self, path: str) -> str:
        """Include guard of a generated header (not `#pragma once`: NVRTC may see one in-memory
        header under several include names), in the target's convention."""
        return self.guards.guard(path)


@dataclass
class _Copies:
    """What the preludes' copies leave for later stages."""
    checks: list[dict] = field(default_factory=list)   # checked against their header at build time (kernels.cpp)
    std_used: set[str] = field(default_factory=set)    # std names the copies use
    ints: set[str] = field(default_factory=set)        # <cstdint> integers the copies spell
    moved: list = field(default_factory=list)          # shared_header.Moved: definitions moved, not copied


@dataclass
class _Stubs:
    """The kernels' stub contexts (kernels.h, its sections, kernels.cpp) and the names they spell."""
    kernels: list[dict]
    programs: list[dict]        # kernels.cpp's Program per (program, its headers)
    type_names: set[str]
    fn_names: set[str]


def _stub_paths(spec) -> tuple[str, str]:
    """(kernels.h, kernels.cpp) of the rule's output folder."""
    return f"{spec.output_dir}/kernels.h", f"{spec.output_dir}/kernels.cpp"


def _kernel_strings(run: _Run, programs: dict[str, str]) -> dict[str, str]:
    """The kernel strings, one program per kernel header; returns every file NVRTC sees -> its symbol."""
    plan, cs = run.plan, run.cs
    listed = [v for vs in shared_variables.listed(plan.spec.raw).values() for v in vs]
    for path in sorted(set(programs.values())):
        kps = [kp for kp in plan.kernels if programs[kp.kernel.id] == path]
        if path == (kps[0].source_file or kps[0].kernel.file):
            continue                    # the kernels' header is the program (program_paths)
        shared = sorted({v for kp in kps for v in kp.shared_variables})
        for kp in kps:
            if kp.shared_variables:
                cs.notes.append(f"{kp.kernel.id} reads {', '.join(f'`{v}`' for v in kp.shared_variables)}, which a "
                                "static kernel writes: the stubs copy the launching unit's into the NVRTC module's "
                                "before each launch (migrate.shared_variables)")
        cs.new_files[path] = run.fmt(render("kernel_string.cu.j2",
                                            kernel_ids=[kp.kernel.id for kp in kps],
                                            include=kps[0].source_file or kps[0].kernel.file,
                                            type_headers=_program_headers(kps, "type_headers"),
                                            first_headers=_program_headers(kps, "first_headers"),
                                            framework_aliases=framework_types.uses(kps, plan.spec),
                                            shared=[dict(name=v, symbol=shared_variables.module_symbol(v, listed))
                                                    for v in shared]),
                                     path)
    shipped: dict[str, str] = {}
    for kp in plan.kernels:
        for repo_path in kp.headers.values():
            shipped[repo_path] = symbol_for(repo_path)
    return shipped


def _preludes(run: _Run, shipped: dict[str, str], std_cfg: dict | None) -> _Copies:
    """The preludes replacing host-only headers under NVRTC, with their copies; returns what the copies leave."""
    root, plan, cs = run.root, run.plan, run.cs
    spec, ks_spec = plan.spec, plan.spec.kernel_strings
    replaced_all = ks_spec.get("replace_with_prelude", [])
    copy_names = ks_spec.get("prelude_copy", [])
    declared = prelude_copies.replaced_declarations(root, replaced_all, copy_names)    # each header parsed once
    move_to = ks_spec.get("move_to", {})
    for replaced, to in move_to.items():       # moved by an earlier rule: they are the header's still
        if replaced in declared and (root / to).is_file():
            declared[replaced] += source.named_declarations((root / to).read_bytes(), set(copy_names))
    if {kp.kernel.id for kp in plan.kernels} != set(spec.kernels):
        copy_names = prelude_copies.selected_copies(root, plan, shipped, copy_names, replaced_all, declared, cs)
    copy_from = prelude_copies.copy_sources(replaced_all, copy_names, declared)
    copies = _Copies()
    texts = {r: (root / r).read_bytes() for r in replaced_all}
    include_conds = {r: source.include_conditions(texts[r]) for r in replaced_all}
    for replaced in replaced_all:
        path = f"{spec.output_dir}/prelude/{replaced}"
        includes = prelude_copies.prelude_includes(ks_spec.get("prelude_includes", []), replaced, include_conds)
        shared = None
        if replaced in move_to:
            own = [i for i in includes if i["name"] in include_conds[replaced]]
            moved = shared_header.move(root, replaced, move_to[replaced], copy_from.get(replaced, []), std_cfg, own,
                                       run.guard(move_to[replaced]), cs, spec.rule_id)
            copies.std_used |= moved.std_used
            copies.ints |= moved.ints
            # nothing to move and no earlier rule's header (a part of a rule, --only): no such header
            to = move_to[replaced]
            to_text = _final_text(root, cs, to) if to in cs.new_files or (root / to).is_file() else None
            if to_text is not None:
                copies.moved.append(moved)
            shared, macros, copied = (moved.include if to_text is not None else None), [], []
        else:
            to_text = None
            groups = prelude_copies.copied(replaced, copy_from.get(replaced, []), declared, cs)
            groups = prelude_copies.checked(groups, replaced, path, copies.checks)
            macros, copied = prelude_copies.early_macros(
                prelude_copies.respell_copies(groups, std_cfg, copies.std_used, copies.ints))
        aliases = _prelude_aliases(texts[replaced], to_text or b"", spec.types["cases"])
        std_header = std_cfg["header"] if std_cfg else None
        if shared and not (macros or copied or aliases) \
                and _includes_all(to_text, [i["name"] for i in includes], std_header):
            # the prelude would include the moved-definitions header and what that header includes
            # already: NVRTC reads that header under the replaced header's names, no prelude file
            _read_as(plan, shipped, path, move_to[replaced])
            cs.notes.append(f"{replaced}: read under NVRTC as {move_to[replaced]}, which holds all the kernels "
                            "use of it (no prelude)")
            continue
        cs.new_files[path] = run.fmt(render(
            "prelude.h.j2", replaced=replaced, guard=run.guard(path), macros=macros, shared=shared,
            includes=includes,
            namespace=ks_spec.get("prelude_namespace", spec.names.get("default_namespace", "")),
            aliases=aliases, std_header=std_header, copied=copied),
            "prelude.h")
        cs.notes.append(f"{replaced}: replaced under NVRTC by the generated prelude {path} (dtype aliases, "
                        "toolkit headers)")
    return copies


def _includes_all(text: bytes, system: list[str], local: str | None) -> bool:
    """Whether a header's text includes each of `system` (<name>) and `local` ("name")."""
    names = {(i.system, i.name) for i in source.includes(text)}
    return all((True, n) in names for n in system) and (local is None or (False, local) in names)


def _read_as(plan: Plan, shipped: dict[str, str], prelude: str, header: str) -> None:
    """The kernels that would have read `prelude` read `header` under the same include names."""
    for kp in plan.kernels:
        for name, path in list(kp.headers.items()):
            if path == prelude:
                kp.headers[name] = header
    shipped.pop(prelude, None)      # `header` joins the shipped files with the moved definitions (generate)


def _prelude_aliases(replaced: bytes, moved: bytes, cases: dict) -> list[dict]:
    """The dtype aliases a prelude declares: those its replaced header's text declares (a prelude
    stands in for nothing else of it), unless the header its definitions moved to (`moved`, its
    text; empty: none) has them (the prelude includes it)."""
    def declares(text: bytes, alias: str) -> bool:
        name = re.escape(alias.encode())
        return re.search(rb"\busing\s+" + name + rb"\s*=|\btypedef\b[^;]*\b" + name + rb"\s*;", text) is not None
    return [c for c in cases.values()
            if c.get("alias") and declares(replaced, c["alias"]) and not declares(moved, c["alias"])]


def _shims(run: _Run) -> None:
    """The in-memory shims of the standard headers NVRTC lacks (`kernel_strings.shims`)."""
    out, cs = run.plan.spec.output_dir, run.cs
    for name, shim in sorted(run.plan.spec.kernel_strings.get("shims", {}).items()):
        std_names, global_names = shim.get("std_names", []), shim.get("global_names", [])
        defined, libcu = [], std_names + global_names    # names written out / taken from libcu++
        if shim.get("minimal") or "include" not in shim:
            defined, libcu = stdshim.definitions(std_names + global_names)
        cs.new_files[stdshim.shim_path(out, name)] = run.fmt(render(
            "shim.j2", name=name, include=shim.get("include"), definitions=defined,
            std_names=[n for n in std_names if n in libcu], global_names=[n for n in global_names if n in libcu],
            defined_global=[n for n in global_names if n not in libcu]), stdshim.shim_path(out, name))
        over = f" over <{shim['include']}>" if "include" in shim else " (a C header: global names only)"
        cs.notes.append(f"<{name}>: not in NVRTC; shipped as the in-memory shim {stdshim.shim_path(out, name)}{over}"
                        + (f", with {len(defined)} names defined by codemod" if defined else ""))


def _framework_headers(run: _Run) -> None:
    """The NVRTC stand-ins of the PyTorch headers the programs include (types.framework: torch)."""
    out, cs = run.plan.spec.output_dir, run.cs
    used = {name for kp in run.plan.kernels for name, path in kp.headers.items()
            if path == framework_types.stand_in_path(out, name)}
    for name in sorted(used):
        path = framework_types.stand_in_path(out, name)
        cs.new_files[path] = run.fmt(render(framework_types.FRAMEWORK_HEADERS[name][0], guard=run.guard(path),
                                            std_shims=framework_types.stand_in_std(run.plan.spec, name)), path)
        cs.notes.append(f"<{name}>: PyTorch's header is host C++; NVRTC gets the stand-in {path} under its name "
                        "(types.framework: torch)")


def _nvrtc_guards(run: _Run, shipped: dict[str, str]) -> None:
    """The shipped headers' edits for NVRTC (host-only code guarded, include names unique); moved device code."""
    root, plan, cs = run.root, run.plan, run.cs
    extracted = {ex.header: ex for ex in plan.extractions.values()}
    for repo_path in sorted(shipped):
        if repo_path.startswith(plan.spec.output_dir + "/"):
            continue
        if repo_path in extracted:
            _extracted_header(root, plan, extracted[repo_path], cs)
            continue
        data = (root / repo_path).read_bytes()
        for start, end in _host_include_blocks(root, repo_path, data, plan.spec):
            cs.edits.append(Edit(repo_path, start, start, RTC_IFNDEF, "host-only include hidden from NVRTC"))
            cs.edits.append(Edit(repo_path, end, end, RTC_ENDIF, "host-only include hidden from NVRTC"))
            line = data[:start].count(b"\n") + 1
            cs.notes.append(f"{repo_path}:{line}: host-only includes guarded by #ifndef {RTC_GUARD}")
        _respell_includes(repo_path, data, plan.respelled, cs)
        for start, end in source.host_variable_qualifiers(data):
            cs.edits.append(Edit(repo_path, start, end, "\n" + hidden_from_nvrtc("__host__\n"),
                                 "__host__ on a variable hidden from NVRTC"))
            line = data[:start].count(b"\n") + 1
            cs.notes.append(f"{repo_path}:{line}: `__host__` of a `__device__ __host__` variable guarded by "
                            f"#ifndef {RTC_GUARD} (NVRTC rejects it on a variable)")
        for start, end in source.host_only_functions(data):
            s = source.comment_start(data, start)
            e = _line_end(data, end)
            # NOTE: a file whose last line has no newline (mamba's selective_scan_bwd_kernel.cuh)
            # gets one before the #endif, else the directive ends that line's code
            nl = "\n" if e == len(data) and not data.endswith(b"\n") else ""
            cs.edits.append(Edit(repo_path, s, s, RTC_IFNDEF, "host-only code hidden from NVRTC"))
            cs.edits.append(Edit(repo_path, e, e, nl + RTC_ENDIF, "host-only code hidden from NVRTC"))
            line = data[:start].count(b"\n") + 1
            cs.notes.append(f"{repo_path}:{line}: host-only definitions guarded by #ifndef {RTC_GUARD}")


def _stub_kernels(run: _Run, programs: dict[str, str], copy_checks: list[dict],
                  values: launcher_values.LauncherValues) -> _Stubs:
    """Each kernel's stub context and the spellings it names (cs.domain); its declaration check to copy_checks."""
    root, plan, cs = run.root, run.plan, run.cs
    spec = plan.spec
    listed = [v for vs in shared_variables.listed(spec.raw).values() for v in vs]
    kernels_ctx = []
    type_names, fn_names = set(), set()
    for c in spec.types["cases"].values():
        type_names.add(c["type"])
    program_list: dict[tuple, dict] = {}     # (program, its headers) -> kernels.cpp's Program
    entry_files = {e.name: e.file for e in plan.entry_points}
    for kp in plan.kernels:
        kinds = {p.name: p.kind for p in kp.kernel.params}
        enums = {p.name: p.enum for p in kp.kernel.params if p.enum}
        for v in kp.variants:
            for param, value in v.axes.items():
                if kinds.get(param) == "type":
                    type_names.add(value)
                elif kinds.get(param) == "function_pointer" and value != "nullptr":
                    fn_names.add(value)
        params = [p.name for p in kp.kernel.params]
        headers = tuple((symbol_for(path), name) for name, path in _stub_headers(spec, kp))
        program = _program_entry(program_list, programs[kp.kernel.id], headers)
        signature = _signature_as_left(root, kp, cs)
        named = _template_param_names(signature.template_params)
        if len(named) == len(params) and named != params:
            # the factory heads spell the definition's names; a declaration may use others
            # (bitsandbytes' kDequantizeBlockwise: BLOCK_SIZE declared, TILE_SIZE defined)
            rename = dict(zip(params, named))
            kinds, enums = {rename[k]: v for k, v in kinds.items()}, {rename[k]: v for k, v in enums.items()}
            params = named
        kernels_ctx.append(dict(
            id=kp.kernel.id, spelled_id=spelled_id(kp.kernel.id), name=kp.name,
            namespace=kp.namespace, symbol=symbol_for(programs[kp.kernel.id]),
            kernel_string_path=programs[kp.kernel.id], template_params=signature.template_params,
            declared_template_params=kernel_api.without_defaults(signature.template_params),
            guard=plan.extractions[kp.kernel.file].guard if kp.kernel.file in plan.extractions else None,
            param_decls=", ".join(signature.param_decls), param_types=", ".join(signature.param_types),
            param_names=", ".join(params), params=params,
            axes=[_axis_expr(kinds[p], p, enums.get(p)) for p in params], program=program,
            options=spec.options["kernels"].get(kp.kernel.id, []),
            # the static kernel's body is one `#if __CUDA_ARCH__ >= N` block: no code below sm_<N/10>
            min_arch=(kp.kernel.body_arch_min or 0) // 10,
            scoped=option_scope.scoped_options(kp, spec.options["conditional"], entry_files),
            shared=[dict(name=v, symbol=shared_variables.module_symbol(v, listed)) for v in kp.shared_variables],
            shared_template_params=_with_shared(signature.template_params, len(kp.shared_variables)),
            declared_shared_template_params=_with_shared(kernel_api.without_defaults(signature.template_params),
                                                         len(kp.shared_variables))))
    for ctx, kp in zip(kernels_ctx, plan.kernels):
        ctx.update(_runtime_ctx(kp, ctx, values.params.get(kp.kernel.id, [])))
    cs.domain = (frozenset(type_names), frozenset(fn_names))
    return _Stubs(kernels_ctx, list(program_list.values()), type_names, fn_names)


def _program_entry(program_list: dict[tuple, dict], path: str, headers: tuple) -> dict:
    """kernels.cpp's Program of `path` for a kernel whose in-memory headers are `headers`: one per
    program, its headers the union of its kernels' (NVRTC reads only those a program includes);
    a second one only where an include name would mean two files."""
    for (p, _), entry in program_list.items():
        if p != path:
            continue
        have = {h["include_name"]: h["symbol"] for h in entry["headers"]}
        if all(have.get(name, sym) == sym for sym, name in headers):
            entry["headers"].extend(dict(symbol=sym, include_name=name) for sym, name in headers if name not in have)
            return entry
    return program_list.setdefault((path, headers), dict(
        path=path, symbol=symbol_for(path), headers=[dict(symbol=sym, include_name=name) for sym, name in headers]))


def _runtime_ctx(kp, ctx: dict, runtime: list) -> dict:
    """A factory's runtime parameters (launcher_values): its template head without them, their
    function parameters and domains, and the kernel's template arguments with each of them spelled
    `decltype(vN)::value` (vN: the generic lambda's parameter naming one value of its domain)."""
    if not runtime:
        return dict(runtime=[])
    at = {r.index: n for n, r in enumerate(runtime)}
    decls = kernel_api._split_args(ctx["template_params"].strip()[1:-1])      # the signature as left
    fixed = [d for i, d in enumerate(decls) if i not in at]
    head = "<" + ", ".join(fixed) + ">"
    if ctx["shared"]:
        head = _with_shared(head, len(ctx["shared"]))
    enums = {p.name: p.enum for p in kp.kernel.params if p.enum}
    axes = list(ctx["axes"])
    for n, r in enumerate(runtime):
        axes[r.index] = (f'stubs::at_run_time({n}, "{enum_cast(enums[r.name])}")' if r.name in enums
                         else f"stubs::at_run_time({n})")
    return dict(
        runtime=[dict(name=r.name, decl=r.decl, type=r.type, domain=list(r.domain)) for r in runtime],
        factory_params=head, declared_factory_params=kernel_api.without_defaults(head),
        runtime_axes=axes,       # every template argument, the run-time ones stubs::at_run_time(n)
        lambda_params=", ".join(f"auto v{n}" for n in range(len(runtime))),
        lambda_args=", ".join(f"decltype(v{at[i]})::value" if i in at else p for i, p in enumerate(ctx["params"])))


def _stubs_runtime(run: _Run, values: bool = False, copies: bool = False) -> dict[str, bool]:
    """rtc_stubs.h, the stubs' runtime every rule shares; returns the optional launch methods it holds."""
    root, plan, cs = run.root, run.plan, run.cs
    spec = plan.spec
    stubs_path, stubs_ns = stubs_location(spec)
    features = _stub_features(root, stubs_path, plan, values, copies)
    cs.new_files[stubs_path] = run.fmt(render(
        "rtc_stubs.h.j2", guard=run.guard(stubs_path), layer=spec.layer,
        features=features, copy_hash_base=COPY_HASH_BASE, spell_macro=_spell_macro(spec),
        build_value=target_names.macro_prefix(spec) + "_RTC_BUILD_VALUE",
        layer_header=relative_include(spec.layer["header"], stubs_path), namespace=stubs_ns,
        # the header defining the error macro; without one, the rule's stub includes (which kernels.h had)
        error_headers=[relative_include(h, stubs_path) for h in
                       ([spec.layer["error_header"]] if spec.layer.get("error_header") else spec.stub_includes)]),
        stubs_path)
    cs.layer_files.add(stubs_path)
    if features["adl"]:
        calls = kernel_calls_location(spec)
        cs.new_files[calls] = run.fmt(render("layer/kernel_calls.h.j2", guard=run.guard(calls), namespace=stubs_ns),
                                      calls)
        cs.layer_files.add(calls)
    return features


def _kernels_h(run: _Run, stubs: _Stubs, shipped: dict[str, str]) -> None:
    """kernels.h (the rule's stub factories) and its sections (what it cannot name where units include it)."""
    root, plan, cs, fmt = run.root, run.plan, run.cs, run.fmt
    spec = plan.spec
    stubs_path, stubs_ns = stubs_location(spec)
    stub_path, cpp_path = _stub_paths(spec)
    type_names, fn_names = stubs.type_names, stubs.fn_names
    error_header = spec.layer.get("error_header")
    lay = sections.layout(root, plan, type_names | fn_names,
                          [*spec.stub_includes, spec.layer["header"], *([error_header] if error_header else [])])
    # kernels.h declares the factories its includers' launch sites name before the section defining
    # them (in the header defining the kernel); a kernel moved out of a unit, or launched only in its
    # own header after that header includes its section, is named first there: not in kernels.h.
    # where each library header includes its section (a header the migration writes: at its end)
    points = {h: _section_point(root, h, [k["name"].rsplit("::", 1)[-1] for k in stubs.kernels
                                          if lay.kernel_home.get(k["id"]) == h],
                                [t for t in type_names | fn_names if lay.spelling_home.get(t) == h])
              for h in lay.section if h not in cs.new_files}
    first = _first_in_section(plan, stubs, lay, points)
    declared = [dict(k, section=posixpath.basename(lay.section[lay.kernel_home[k["id"]]]),
                     home=lay.kernel_home[k["id"]]) for k in stubs.kernels if k["id"] not in first]
    stub_ctx = dict(
        guard=run.guard(stub_path), cpp_name=posixpath.basename(cpp_path),
        stubs_header=relative_include(stubs_path, stub_path), stubs_header_name=posixpath.basename(stubs_path),
        stubs_namespace=stubs_ns, stub_includes=[relative_include(i, stub_path) for i in spec.stub_includes],
        legacy_option=spec.legacy_option, namespace=spec.namespace,
        type_names=sorted(t for t in type_names if t not in lay.spelling_home),
        spell_macro=_spell_macro(spec), function_names=sorted(f for f in fn_names if f not in lay.spelling_home),
        kernels=declared,
        sections=[posixpath.basename(p) for p in lay.section.values()])
    _render_spelled(cs, fmt, "kernels.h.j2", stub_path, stub_ctx)
    for header, path in lay.section.items():
        # a kernel moved out of a unit: its section holds the factory's first declaration
        own = [dict(k, first=k["id"] in first) for k in stubs.kernels if lay.kernel_home.get(k["id"]) == header]
        _render_spelled(cs, fmt, "kernels_section.h.j2", path, dict(
            guard=run.guard(path), header=header, kernels_h=relative_include(stub_path, path),
            stubs_namespace=stubs_ns, namespace=spec.namespace,
            spell_macro=_spell_macro(spec), kernels=own,
            type_names=sorted(t for t in type_names if lay.spelling_home.get(t) == header),
            function_names=sorted(f for f in fn_names if lay.spelling_home.get(f) == header)))
        _include_section(cs, header, path, header in shipped, points.get(header))
        cs.notes.append(f"{path}: the stubs of what {header} defines and declares ({len(own)} kernel(s), "
                        f"{sum(1 for h in lay.spelling_home.values() if h == header)} spelling(s)); the header "
                        "includes it after them")


def _first_in_section(plan, stubs: _Stubs, lay, points: dict[str, tuple[bytes, int]]) -> set[str]:
    """The kernels whose factory no code names before its section: moved out of a unit (launched
    only there, after the unit includes its header), or launched only in the library header defining
    them, after the point where it includes its section (`points`: header -> (text, offset); no
    macro, generic lambda or helper between)."""
    sites = {kp.kernel.id: kp.sites for kp in plan.kernels}
    lines = {h: data[:at].count(b"\n") + 1 for h, (data, at) in points.items()}
    first = set()
    for k in stubs.kernels:
        home = lay.kernel_home[k["id"]]
        if k["guard"]:
            first.add(k["id"])
            continue
        own = [s for s in sites.get(k["id"], []) if s.file == home and not s.in_macro_body
               and not s.generic_lambda and not s.helper]
        if not own or len(own) < len(sites.get(k["id"], [])) or home not in lines:
            continue
        if all(s.line > lines[home] for s in own):
            first.add(k["id"])
    return first


def _kernels_cpp(run: _Run, stubs: _Stubs, shipped: dict[str, str], copy_checks: list[dict]) -> None:
    """kernels.cpp, the one unit including the string headers (programs and copy checks)."""
    spec = run.plan.spec
    stubs_path, stubs_ns = stubs_location(spec)
    cpp_path = _stub_paths(spec)[1]
    run.cs.new_files[cpp_path] = run.fmt(render(
        "kernels.cpp.j2", stubs_header=relative_include(stubs_path, cpp_path),
        stubs_namespace=stubs_ns, string_headers_by="string_headers.py" if "setuptools" in spec.raw else "CMake",
        string_headers=sorted({symbol_for(p) for p in shipped} | {k["symbol"] for k in stubs.kernels}
                              | {c["symbol"] for c in copy_checks}), copy_checks=grouped_checks(copy_checks),
        copy_hash_base=COPY_HASH_BASE, build_value=target_names.macro_prefix(spec) + "_RTC_BUILD_VALUE",
        layer=spec.layer, legacy_option=spec.legacy_option, cpp_path=cpp_path,
        namespace=spec.namespace, options=spec.options, kernels=stubs.kernels,
        scoped=any("sources" in c for c in spec.options["conditional"]),
        programs=_program_names(stubs.programs), shared_headers=_shared_headers(stubs.programs),
        value_lists=_scoped_value_lists(stubs.kernels, spec.options["conditional"]),
        framework_layouts=framework_types.layout_checks(shipped, spec.output_dir)), cpp_path)


def _nvrtc_layer(run: _Run, features: dict[str, bool]) -> None:
    """The NVRTC layer's edits: what the stubs call and it lacks (nvrtc_layer.extend), its disk cache."""
    root, spec, cs = run.root, run.plan.spec, run.cs
    if "create" in spec.layer:
        files, note = own_layer.add(root, spec.layer, spec.legacy_option, spec.library or spec.rule_id, features,
                                    render, run.fmt, run.guard, relative_include)
        cs.new_files.update(files)
        cs.layer_files.update(files)
        cs.notes.append(note)
    elif "extend" in spec.layer:
        edits, added, present = layer.extend(root, spec.layer, features, render)
        cs.edits += [Edit(e.path, e.start, e.end, e.text, e.why, layer=True) for e in edits]
        if added:
            cs.notes.append(f"{spec.layer['header']}: the NVRTC layer lacked {', '.join(added)}: added "
                            f"(nvrtc_layer.extend){'; already present: ' + ', '.join(present) if present else ''}")
    else:
        layer.require_without_extend(root, spec.layer, features)
    _layer_cache(root, spec, cs, run.guard, run.fmt)


def _layer_cache(root: Path, spec, cs: ChangeSet, guard: Callable[[str], str], fmt) -> None:
    """`nvrtc_layer.cache`: the generated cache header and the layer source's edits, unless a rule
    applied before already added them (layer_cache.present)."""
    cfg = layer_cache.settings(spec.layer)
    if cfg is None:
        return
    data = (root / cfg["source"]).read_bytes()
    # NOTE: the template's first line is `// {{ banner }}`: a title here, no tool name.
    text = fmt(render("layer/rtc_cache.h.j2", banner="The NVRTC layer's disk cache.", guard=guard(cfg["header"]),
                      layer_source=cfg["source"], namespace=cfg["namespace"], env=cfg["env"],
                      default_dir=cfg["default_dir"]), cfg["header"])
    if layer_cache.present(data, cfg["header"]):
        _same_cache(root, cfg["header"], text, spec.rule_id)
        cs.notes.append(f"{cfg['source']}: the NVRTC layer already has the disk cache ({cfg['header']})")
        return
    # what other layer features replace in the same source (extend's helpers around NVRTC's calls)
    others = [(e.start, e.end, e.text) for e in cs.edits if e.path == cfg["source"] and e.end > e.start]
    for e in layer_cache.layer_edits(data, cfg["source"], spec.layer["header"], cfg["header"], others):
        cs.edits.append(Edit(e.path, e.start, e.end, e.text, e.why, layer=True, cache=True))
    cs.layer_files.add(cfg["header"])
    cs.cache_files.add(cfg["header"])
    cs.new_files[cfg["header"]] = text
    test = cfg.get("test")
    if test:
        # the layer's own tests, in the target's test tree (docs/rtc_cache.md, tests in the target)
        path = spec.repo_path(test["file"])
        cs.new_files[path] = fmt(render("layer/rtc_cache_test.cpp.j2", header=cfg["header"],
                                        include=test.get("include") or cfg["header"], namespace=cfg["namespace"],
                                        env=cfg["env"], default_dir=cfg["default_dir"]), path)
        _test_source(root, spec, cs, test, f"{spec.rule_id}/nvrtc_layer/cache/test", "the layer cache's tests")
        cs.edits[-1].layer = cs.edits[-1].cache = True
        cs.layer_files.add(path)
        cs.cache_files.add(path)
    _cache_docs(root, spec, cfg, cs)
    env = cfg["env"]
    cs.notes.append(f"{cfg['source']}: NVRTC layer with per-label compiles and an opt-in disk cache shared by "
                    f"the processes of a machine ({cfg['header']}); off unless {env['dir']}=FOLDER or "
                    f"{env['prefix']}=1 (default folder $XDG_CACHE_HOME/{cfg['default_dir']})")


def _cache_docs(root: Path, spec, cfg: dict, cs: ChangeSet) -> None:
    """The disk cache's two environment variables in the target's envvar page (migrate.docs.envvars),
    after the layer's disable switch (else after the rule's `after` entry): what turns it on, where
    it keeps kernels, which folders it refuses. Nothing when the page documents them already."""
    docs = spec.docs.get("envvars")
    if not docs:
        return
    path = spec.repo_path(docs["file"])
    try:
        text = (root / path).read_bytes().decode()
    except (OSError, UnicodeDecodeError):
        return                                      # _docs reports the page
    lines = text.splitlines(keepends=True)
    if _envvar_block(lines, cfg["env"]["prefix"]) is not None:
        return
    disable = spec.layer.get("disable_env")
    block = (_envvar_block(lines, disable) if disable else None) or _envvar_block(lines, docs["after"])
    if block is None:
        return                                      # _docs reports the missing entry
    at = sum(len(line) for line in lines[:block[1]])
    entries = render("envvar_cache.rst.j2", env=cfg["env"], default_dir=cfg["default_dir"]).rstrip("\n") + "\n"
    lead = "" if block[1] == 0 or not lines[block[1] - 1].strip() else "\n"
    tail = "\n" if block[1] < len(lines) else ""
    cs.edits.append(Edit(path, at, at, lead + entries + tail, "the disk cache's environment variables",
                         layer=True, cache=True))


def _same_cache(root: Path, header: str, text: str, rule_id: str) -> None:
    """A rule applied after another that added the layer's disk cache keeps that cache as it is: its
    own `nvrtc_layer.cache` must ask for the same header, or the difference would go unapplied."""
    try:
        have = (root / header).read_text()
    except (OSError, UnicodeDecodeError):
        return                                  # included but not generated here: the layer's own
    # From the include guard on: the license and the comments above it are the target's to edit.
    opening = re.search(r"(?m)^#ifndef (\w+)\n#define \1$", text)
    def body(t: str) -> list[str] | None:
        at = t.find(opening.group(0)) if opening else -1
        return None if at < 0 else t[at:].splitlines()
    mine, theirs = body(text), body(have)
    if mine is None or theirs is None or mine == theirs:      # the layer's own header, or the same cache
        return
    at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
    line = lambda lines: lines[at].strip() if at < len(lines) else "(end of file)"
    raise ApplyError(
        f"{header}: the NVRTC layer's disk cache was added by an earlier rule with other settings than "
        f"rule {rule_id}'s nvrtc_layer.cache, or by another codemod version; first difference: "
        f"`{line(theirs)}` there, `{line(mine)}` here",
        where=f"{rule_id}/nvrtc_layer/cache",
        hint="give every rule applied to the tree the same nvrtc_layer.cache (pch, minimal, env_prefix, "
             "default_dir), or none; after a codemod upgrade, regenerate the earlier rule first "
             "(codemod apply --update)")


def _docs(root: Path, plan: Plan, cs: ChangeSet) -> None:
    """`migrate.docs.envvars`: in the target's Sphinx page of `.. envvar::` entries, an entry for the
    legacy option after the rule's `after` entry, and a sentence on the migrated kernels appended to
    the description of the layer's disable switch (an entry of its own when the page has none)."""
    spec = plan.spec
    cfg = spec.docs.get("envvars")
    if not cfg:
        return
    path = spec.repo_path(cfg["file"])
    where = "migrate/docs/envvars"
    try:
        text = (root / path).read_bytes().decode()
    except (OSError, UnicodeDecodeError) as exc:
        raise ApplyError(f"{path}: cannot read the page {where}/file names ({exc})", where=path,
                         hint="check migrate/repo_root and migrate/docs/envvars/file in the rule") from None
    lines = text.splitlines(keepends=True)
    after = _envvar_block(lines, cfg["after"])
    if after is None:
        raise ApplyError(f"{path} has no `.. envvar:: {cfg['after']}` entry ({where}/after)", where=path,
                         hint="name an entry of the page for the legacy option to follow")
    if any(line.rstrip() == f".. envvar:: {spec.legacy_option}" for line in lines):
        return                                                  # documented already (by hand or before)
    names = sorted(kp.kernel.id.rsplit("::", 1)[-1] for kp in plan.kernels)
    ctx = dict(marker=stacking.mark(spec.rule_id), rule=spec.rule_id, legacy_option=spec.legacy_option,
               disable_env=spec.layer.get("disable_env"), kernels=[f"``{n}``" for n in names])
    entry = render("envvar_entry.rst.j2", **ctx)
    at = sum(len(line) for line in lines[:stacking.docs_entry_line(lines, after[1], cs.later)])
    disable = ctx["disable_env"]
    switch = _envvar_block(lines, disable) if disable else None
    if disable and switch is None:
        entry += "\n" + render("envvar_disable.rst.j2", new_entry=True, **ctx)
    cs.edits.append(Edit(path, at, at, entry + "\n", "documentation of the legacy option"))
    drops = cfg.get("drops")
    if drops and switch is None:
        raise ApplyError(f"{path} has no `.. envvar:: {disable}` entry to drop a sentence from ({where}/drops)",
                         where=path)
    if drops:
        start = sum(len(line) for line in lines[:switch[0]])
        block = "".join(lines[switch[0]:switch[1]])
        found = block.find(drops)
        if found < 0:
            raise ApplyError(f"{path}: the `{disable}` entry does not say \"{drops}\" ({where}/drops)", where=path,
                             hint="the page changed: drop the key, or give the sentence as the page has it now")
        end = found + len(drops)
        end += len(block[end:]) - len(block[end:].lstrip(" "))      # the space before the next sentence
        cs.edits.append(Edit(path, start + found, start + end, "",
                             "a sentence on the disable switch the migrated kernels make untrue"))
    if switch is not None:
        last = max(i for i in range(switch[0], switch[1]) if lines[i].strip())
        start = sum(len(line) for line in lines[:last])
        end = start + stacking.sentence_at(lines[last], len(lines[last].rstrip("\r\n")), cs.later)
        cs.edits.append(Edit(path, end, end, render("envvar_disable.rst.j2", new_entry=False, **ctx).rstrip("\n"),
                             "the disable switch's effect on the migrated kernels"))


def _api_docs(root: Path, plan: Plan, cs: ChangeSet) -> None:
    """`migrate.docs.api` (Sphinx pages rendering headers with Breathe's `.. doxygenfile::`): a header
    the migration creates for definitions it moves out of a documented header (kernel_strings.move_to:
    TE's C API enums into transformer_engine_device.h) is rendered on the same page, after it, so the
    moved definitions stay in the API reference."""
    spec = plan.spec
    created = [(replaced, to) for replaced, to in sorted(spec.kernel_strings.get("move_to", {}).items())
               if to in cs.new_files and not (root / to).exists()]   # else documented before, or not at all
    pages = []
    for rel in spec.docs.get("api", []):
        page = root / spec.repo_path(rel)
        if not page.is_file():
            raise ApplyError(f"{spec.repo_path(rel)}: no such page (migrate/docs/api)", where=spec.repo_path(rel),
                             hint="name the pages that render the headers move_to takes definitions from")
        if created:                                     # read only when a header is to be rendered
            pages.append((spec.repo_path(rel), page.read_bytes().decode().splitlines(keepends=True)))
    for replaced, to in created:
        origin, new = posixpath.basename(replaced), posixpath.basename(to)
        for path, lines in pages:
            at = next((i for i, line in enumerate(lines) if line.strip() == f".. doxygenfile:: {origin}"), None)
            if at is None or any(line.strip() == f".. doxygenfile:: {new}" for line in lines):
                continue
            end = sum(len(line) for line in lines[:at + 1])
            lead = "" if lines[at].endswith("\n") else "\n"
            cs.edits.append(Edit(path, end, end, f"{lead}\n.. doxygenfile:: {new}\n",
                                 f"{new}, which holds definitions moved out of {origin}, in the API reference"))
            break


def _operator_test(root: Path, plan: Plan, cs: ChangeSet, fmt) -> None:
    """`migrate.tests.operator`: a googletest file in the target's operator-test layout that calls the
    rule's entry points (those of the two tensor-in/tensor-out forms that reach a migrated kernel),
    its line in the executable's source list, and two ctest entries: the NVRTC run recording each
    output, then the static-fallback run (the disable switch set) comparing with the record."""
    from ..base.c_api import prototypes

    spec = plan.spec
    cfg = spec.raw.get("tests", {}).get("operator")
    if not cfg:
        return
    disable = spec.layer.get("disable_env")
    if not disable:
        raise ApplyError("migrate/tests/operator needs nvrtc_layer/disable_env (the fallback run sets it)",
                         hint="name the library's switch that disables NVRTC in the rule")
    protos = {}
    for header in cfg["api_headers"]:
        try:
            protos.update(prototypes(root / header, header))
        except OSError as exc:
            raise ApplyError(f"cannot read {header} ({exc.strerror})", where="migrate/tests/operator/api_headers",
                             hint="name public headers of the library, relative to its root") from None
    migrated = {kp.kernel.id for kp in plan.kernels}
    gated = set(cfg.get("gated", []))
    tensor, entries = cfg["tensor"], []
    for ep in sorted(plan.entry_points, key=lambda e: e.name):
        proto = protos.get(ep.name)
        if proto is None or not migrated & set(ep.kernels):
            continue
        kinds = [p.base for p in proto.params]
        if kinds[-1:] != ["cudaStream_t"] or any(k != tensor for k in kinds[:-1]) or len(kinds) not in (3, 4):
            continue
        entries.append(dict(name=ep.name, test="".join(w.capitalize() for w in ep.name.split("_")),
                            binary=len(kinds) == 4, gated=bool(gated & set(ep.kernels))))
    if not entries:
        cs.notes.append(f"warning: migrate/tests/operator: no entry point of the rule has the form "
                        f"f(const {tensor}, {tensor}, cudaStream_t) or f(const {tensor}, const {tensor}, {tensor}, "
                        "cudaStream_t); no operator test generated")
        return
    suite = "Nvrtc" + "".join(w.capitalize() for w in spec.rule_id.split("_")) + "Test"
    path = spec.repo_path(cfg["file"])
    ctx = dict(marker=stacking.mark(spec.rule_id), rule=spec.rule_id, suite=suite, entries=entries,
               disable_env=disable, legacy_option=spec.legacy_option, record_env="NVTE_TEST_NVRTC_RECORD_DIR",
               headers=sorted(h.split("include/", 1)[-1] for h in cfg["api_headers"]),
               inputs=cfg["inputs"], outputs=cfg["outputs"], executable=cfg["executable"],
               file=posixpath.basename(cfg["file"]))
    cs.new_files[path] = fmt(render("operator_test.cu.j2", **ctx), path)
    cmake, data = _test_source(root, spec, cs, cfg, "migrate/tests/operator", "the operator test's source")
    block = render("operator_test.cmake.j2", **ctx)
    cs.edits.append(Edit(cmake, len(data), len(data), block, "the operator test's two ctest runs"))


def _test_source(root: Path, spec, cs: ChangeSet, cfg: dict, where: str, why: str) -> tuple[str, bytes]:
    """A new test file's line in its executable's source list (`cfg`: file, cmake, after), after the
    `after` entry with its indent; (the CMake list's path, its bytes)."""
    cmake = spec.repo_path(cfg["cmake"])
    try:
        data = (root / cmake).read_bytes()
    except OSError as exc:
        raise ApplyError(f"cannot read {cmake} ({exc.strerror})", where=f"{where}/cmake") from None
    entry = re.search(rb"(?m)^([ \t]+)" + re.escape(cfg["after"].encode()) + rb"[ \t]*\n", data)
    if entry is None:
        raise ApplyError(f"{cmake} lists no `{cfg['after']}` on a line of its own ({where}/after)",
                         where=cmake, hint="name a source entry of the test executable")
    line = entry.group(1).decode() + posixpath.basename(cfg["file"]) + "\n"
    cs.edits.append(Edit(cmake, entry.end(), entry.end(), line, why))
    return cmake, data


def _envvar_block(lines: list[str], name: str) -> tuple[int, int] | None:
    """(first line, line after) of the `.. envvar:: name` entry: its directive line and the blank or
    indented lines that follow it; None when the page has no such entry."""
    for i, line in enumerate(lines):
        if line.rstrip() == f".. envvar:: {name}":
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "\t"))):
                j += 1
            return i, j
    return None


def _extracted_header(root: Path, plan: Plan, ex, cs: ChangeSet) -> None:
    """The header a translation unit's device code moves into (a new library file, not
    reformatted: its text is the unit's), without the unit's host-only includes (the unit keeps
    them, and includes the header after them; NVRTC could not read them), and the unit's edits: the
    moved ranges cut, the header included after the unit's own includes."""
    data = ex.text.encode()
    blocks = _host_include_blocks(root, ex.header, data, plan.spec)
    for start, end in reversed(blocks):
        data = data[:start] + data[_line_end(data, end - 1):]
    if blocks:       # an include group left empty: one blank line where it stood
        head = _line_end(data, max((i.end for i in source.includes(data)), default=0))
        data = re.sub(rb"\n\n\n+", b"\n\n", data[:head]) + data[head:]
    cs.new_files[ex.header] = data.decode()
    for start, end in ex.removed:
        cs.edits.append(Edit(ex.unit, start, end, "", f"device code moved to {ex.header}"))
    cs.notes.append(f"{ex.unit}: device code moved into {ex.header} ({', '.join(ex.moved)}); "
                    f"{ex.unit} includes it, and so do the NVRTC programs")


def _license_headers(root: Path, spec, cs: ChangeSet) -> None:
    """Every generated C/C++ file opens with the target's license header (`migrate.license`: the
    leading comment of a file of the target, read now; never stored in codemod), then its own comment lines."""
    if not spec.license:
        return
    header = license_header(root, spec.license["from"], spec.license.get("year", "keep"))
    for path, text in cs.new_files.items():
        if C_FILE.search(path) and "copyright" not in leading_comment(text).lower():
            cs.new_files[path] = header + "\n" + text


def _stub_headers(spec, kp) -> list[tuple[str, str]]:
    """The (include name, library path) pairs a kernel's stub passes to the layer: its program's
    headers less those the layer passes to every program itself (`nvrtc_layer.headers`). NVRTC
    refuses a program whose headers name one include twice (NVRTC_ERROR_INVALID_INPUT), which
    verify cannot see: it compiles the program's headers once each."""
    provided = spec.layer.get("headers", {})
    for name, path in kp.headers.items():
        if name in provided and provided[name] != path:
            raise ApplyError(f"{kp.kernel.id}: include name {name} means {path}, but the NVRTC layer passes "
                             f"{provided[name]} under that name to every program", where=path,
                             hint="check migrate/nvrtc_layer/headers in the rule")
    return [(name, path) for name, path in kp.headers.items() if name not in provided]


def _program_wide_headers(plan: Plan, programs: dict[str, str]) -> None:
    """Kernels of one program get each other's in-memory headers: the program includes every
    header any of them needs (_program_headers), so each compile of it needs them all. An include
    name two kernels give two files stays with its own kernel."""
    by_program: dict[str, list] = {}
    for kp in plan.kernels:
        by_program.setdefault(programs[kp.kernel.id], []).append(kp)
    for kps in by_program.values():
        union: dict[str, str] = {}
        clash: set[str] = set()
        for kp in kps:
            for name, path in kp.headers.items():
                if union.setdefault(name, path) != path:
                    clash.add(name)
        for kp in kps:
            for name, path in union.items():
                if name not in clash:
                    kp.headers.setdefault(name, path)


def _moved_in_prelude_kernels(plan: Plan, moved: list) -> None:
    """Kernels that see a prelude including a moved-definitions header get it under the name the
    prelude includes it by."""
    for m in moved:
        prelude = f"{plan.spec.output_dir}/prelude/{m.header}"
        for kp in plan.kernels:
            if prelude in kp.headers.values():
                kp.headers.setdefault(m.include, m.to)


def _std_header_in_prelude_kernels(plan: Plan, header: str, shipped: dict[str, str]) -> None:
    """Kernels that see the prelude also get the std_names header under its library path, the name
    the prelude includes it by (its copies use the names that header defines)."""
    prelude = f"{plan.spec.output_dir}/prelude/"
    for kp in plan.kernels:
        if any(p.startswith(prelude) for p in kp.headers.values()):
            if kp.headers.get(header, header) != header:
                raise ApplyError(f"include name {header} already means {kp.headers[header]} for {kp.kernel.id}",
                                 where=header, hint="check migrate/kernel_strings/std_names/header in the rule")
            kp.headers[header] = header
            shipped[header] = symbol_for(header)


def _final_text(root: Path, cs: ChangeSet, path: str) -> bytes:
    """A library file as the migration leaves it (a new file, or the original with its edits)."""
    if path in cs.new_files:
        return cs.new_files[path].encode()
    mine = ChangeSet(edits=[e for e in cs.edits if e.path == path])
    return (apply_edits(root, mine)[path][1] if mine.edits else (root / path).read_text()).encode()


def _template_param_names(template_params: str) -> list[str]:
    """The parameter names of a template head `<typename T, int N = 4>`: ["T", "N"]."""
    inner = template_params.strip()
    inner = inner[inner.find("<") + 1:inner.rfind(">")] if "<" in inner else inner
    parts, depth, cur = [], 0, ""
    for c in inner:
        depth += c in "<([{"
        depth -= c in ">)]}"
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    names = []
    for part in parts:
        head = part.split("=")[0]
        pointer = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", head)     # `float (*OP)(float, const P &)`
        found = re.findall(r"[A-Za-z_]\w*", head)
        names.append(pointer.group(1) if pointer else found[-1] if found else "")
    return names


def _signature_as_left(root: Path, kp, cs: ChangeSet) -> source.KernelSignature:
    """The kernel's signature re-read from its header as the migration leaves it (std names
    respelled): the factories' template heads spell it. The launcher type is not copied from it:
    the sections take it from the kernel (`decltype`)."""
    path = kp.source_file or kp.kernel.file
    data = _final_text(root, cs, path)
    decl = source.kernel_definition(path, data, kp.kernel.name)
    if decl is None:
        raise ApplyError(f"definition of {kp.kernel.id} not found after the migration's edits", where=path)
    return source.kernel_signature(data, *decl)


def _spell_macro(spec) -> str:
    """The macro kernels.h and its sections spell name-expression arguments with (defined in
    rtc_stubs.h), under the target's macro prefix."""
    return target_names.macro_prefix(spec) + "_RTC_SPELLING"


def _with_shared(template_params: str, count: int) -> str:
    """A factory's template head with a type parameter per shared variable it takes."""
    return (template_params.rstrip()[:-1].rstrip() + ", "
            + ", ".join(f"typename Shared{i}" for i in range(count)) + ">")


def _render_spelled(cs: ChangeSet, fmt, template: str, path: str, ctx: dict) -> None:
    """kernels.h or a section, formatted; unformatted around the spellings when the formatter broke
    an argument where it had no blank (#__VA_ARGS__ would spell it otherwise)."""
    cs.new_files[path] = fmt(render(template, **ctx), path)
    if not _spellings_kept(cs.new_files[path], ctx["spell_macro"], set(ctx["type_names"]) | set(ctx["function_names"])):
        cs.new_files[path] = fmt(render(template, format_off=True, **ctx), path)


_NO_DEFINITION_WARNING = """
#if defined(__CUDACC__) && !defined(__CUDACC_RTC__)
// nvcc 13 warns (#20280) that a kernel the NVRTC stubs name through `decltype` has no definition
// in the unit: NVRTC compiles it (no device code, no host stub is made for it here).
#pragma nv_diag_suppress 20280
#endif
"""


def _section_point(root: Path, header: str, kernels: list[str], spelled: list[str]) -> tuple[bytes, int]:
    """A library header's text (another rule's block read as blank) and the offset where it includes
    its section: after its kernels and the declarations the section spells (source.stubs_point)."""
    data = source.without_stub_blocks((root / header).read_bytes())
    ends = [span[1] for name in kernels if (span := source.kernel_definition(header, data, name)) is not None]
    if ends:        # the names the section spells are declared before it too
        names = {n.rsplit("::", 1)[-1] for s in spelled for n in _IDENT.findall(s)}
        for _, _, text in source.named_declarations(data, names):
            at = data.find(text.encode())
            if at >= 0:
                ends.append(at + len(text.encode()))
    end = source.guard_end(data)
    return data, (source.stubs_point(data, ends, end) if ends else end)


def _include_section(cs: ChangeSet, header: str, section: str, shipped: bool,
                     point: tuple[bytes, int] | None) -> None:
    """The header includes its section after its kernels and the declarations the section spells,
    before the code launching them (source.stubs_point: at its end, inside its include guard, when
    nothing else follows them; else at namespace scope, its namespaces closed and reopened around
    the include). Hidden from NVRTC like the include of kernels.h. Another rule's block in the
    header is read as blank. A header the migration writes (device code moved out of a unit) gets
    the line at its end, in its text."""
    if header in cs.new_files:
        data = cs.new_files[header].encode()
        at = source.guard_end(data)
        inc = ("" if data[:at].endswith(b"\n\n") else "\n") + (
               hidden_from_nvrtc(f"{source.STUBS_COMMENT} kernels above.\n"
                                 f'#include "{relative_include(section, header)}"\n'))
        text = data[:at].decode() + inc + ("\n" if at < len(data) else "") + data[at:].decode()
        # its kernels come before the unit includes kernels.h, whose pragma would silence nvcc's
        # #20280 for them: the header says it itself, after its own includes
        tops = [i for i in source.includes(data) if not i.nested and i.end < at]
        if tops:
            after = data.index(b"\n", tops[-1].end) + 1       # ASCII before it: offsets are the text's
            after += text[after:after + 1] == "\n"               # after the blank line there, with one of its own
            text = text[:after] + _NO_DEFINITION_WARNING.lstrip("\n") + "\n" + text[after:]
        cs.new_files[header] = text
        return
    data, at = point         # _section_point: the header's text and where it includes its section
    end = source.guard_end(data)
    inc = f'#include "{relative_include(section, header)}"\n'
    opened = source.namespaces_at(data, at) if at < end else []
    if opened:
        # after the kernels and before the code launching them: at namespace scope, as an include must be
        closing = "".join(f"}}  // namespace {name}\n".replace("namespace \n", "namespace\n")
                          for _, name in reversed(opened))
        reopening = "".join(text + "\n" for text, _ in opened)
        inc = hidden_from_nvrtc(closing + inc + reopening)
    elif shipped:
        inc = hidden_from_nvrtc(inc)
    lead = "" if data[:at].endswith(b"\n\n") or at == 0 else ("\n" if data[:at].endswith(b"\n") else "\n\n")
    what = "kernels above" if opened else "kernels and types above"
    text = f"{lead}{source.STUBS_COMMENT} {what}.\n{inc}"
    if at < len(data) and data[at:at + 1] != b"\n":
        text += "\n"
    cs.edits.append(Edit(header, at, at, text, "host stubs naming this header's declarations"))


def _spellings_kept(text: str, macro: str, spellings: set[str]) -> bool:
    """Whether each `<macro>(table, ARG)` line of a formatted kernels.h still stringizes
    to the spelling it was generated from (the preprocessor turns each run of blanks between tokens
    into one space, and adds none)."""
    found = set()
    for m in re.finditer(re.escape(macro) + r"\(\s*(?:type_arg|fn_arg)\s*,", text):
        end = matching(text.encode(), m.start() + m.group(0).index("("))    # the text is ASCII C++
        found.add(" ".join(text[m.end():end - 1].split()))
    return found == set(spellings)


def _scoped_value_lists(kernels: list[dict], conditional: list[dict]) -> list[dict]:
    """The value lists of scoped options that several kernels share (TE's activation kernels: the ten
    activation functions `--use_fast_math` applies to), each written once in kernels.cpp as a named
    list; each kernel's scoped option then names it (`values_name`)."""
    uses: dict[tuple[int, tuple[str, ...]], int] = {}
    for k in kernels:
        for sc in k["scoped"]:
            if sc["values"]:
                key = (sc["index"], tuple(sc["values"]))
                uses[key] = uses.get(key, 0) + 1
    shared = sorted(key for key, n in uses.items() if n > 1 and len(key[1]) > 1)
    out = []
    for index, values in shared:
        stem = re.sub(r"\W+", "_", conditional[index]["option"]).strip("_")
        same = [v for i, v in shared if i == index]
        name = f"{stem}_arguments" + (f"_{same.index(values)}" if len(same) > 1 else "")
        out.append(dict(name=name, option=conditional[index]["option"], values=list(values)))
        for k in kernels:
            for sc in k["scoped"]:
                if sc["index"] == index and tuple(sc["values"]) == values:
                    sc["values_name"] = name
    return out


def _program_names(programs: list[dict]) -> list[dict]:
    """kernels.cpp's Program functions, named after their program file (`vectorized_pointwise()`);
    one program with two header lists (not seen) gets a number per list."""
    stems = [posixpath.splitext(posixpath.basename(p["path"]))[0] for p in programs]
    for i, (p, stem) in enumerate(zip(programs, stems)):
        p["name"] = (stem if stems.count(stem) == 1 else f"{stem}_{i}") + "_program"
    return programs


def _shared_headers(programs: list[dict]) -> list[dict] | None:
    """One in-memory header list for every program of the rule (kernels.cpp), the union of theirs,
    when no include name means two files in two programs; else None (a list per program). NVRTC
    reads only the headers a program includes, so a program compiles the same with the union; the
    source hash in each cache key then covers every header of the rule (a change to one recompiles
    all the rule's kernels: conservative)."""
    seen: dict[str, dict] = {}
    for p in programs:
        for h in p["headers"]:
            if seen.setdefault(h["include_name"], h)["symbol"] != h["symbol"]:
                return None
    return sorted(seen.values(), key=lambda h: h["include_name"])


def _std_names(root: Path, plan: Plan, cs: ChangeSet, shipped: dict[str, str], std_cfg: dict,
               used: set[str], copy_ints: set[str] = frozenset()) -> None:
    """No `namespace std` under NVRTC (`kernel_strings.std_names`): every `std::X` that device code
    of a shipped header uses (host-only definitions aside) is respelled in the target's namespace
    (`detail::X` inside its parent), and the definitions that namespace lacks are added to the
    target's header that holds it (TE: utils.cuh's transformer_engine::detail)."""
    target, header = std_cfg["namespace"], std_cfg["header"]
    clashes = stdnames.namespace_clashes(root, target)
    names = set(used)
    out = plan.spec.output_dir + "/"
    extracted = {ex.header for ex in plan.extractions.values()}
    for repo_path in sorted(shipped):
        if repo_path.startswith(out):
            continue
        if repo_path in extracted and repo_path in cs.new_files:     # a new file: respelled in place
            text = cs.new_files[repo_path]
            cs.new_files[repo_path], used_here = stdnames.respell(
                text, target, skip=source.host_only_functions(text.encode()))
            names |= used_here
            continue
        data = (root / repo_path).read_bytes()
        found = stdnames.uses(data, source.host_only_functions(data))
        for start, end, name, chain in found:
            rooted = data[start:start + 2] == b"::"
            cs.edits.append(Edit(repo_path, start, end, stdnames.replacement(target, chain, rooted, name, clashes),
                                 "std name in the target's namespace (NVRTC has no std)"))
            names.add(name)
        if found:
            cs.notes.append(f"{repo_path}: {len(found)} std:: uses in device code respelled in {target} "
                            f"({', '.join(sorted({f[2] for f in found}))})")
    data = (root / header).read_bytes()
    defined = stdnames.defined_names(names, data, target)
    for at, text in stdnames.additions(header, data, target, names, plan.spec.rule_id, cs.later):
        cs.edits.append(Edit(header, at, at, text, "std names for NVRTC in the target's namespace", layer=True))
    if defined:
        cs.notes.append(f"{header}: {', '.join(defined)} defined in {target} for device code (NVRTC has no std; "
                        "the library's own build takes the standard library's)")
    ints = stdnames.integer_names([cs.new_files[p].encode() if p in cs.new_files else (root / p).read_bytes()
                                   for p in shipped if not p.startswith(out)]) | (names & set(stdnames._INTEGERS)) | copy_ints
    at, text, defined = stdnames.integer_additions(header, data, target, ints, plan.spec.rule_id, cs.later)
    if defined:
        cs.edits.append(Edit(header, at, at, text, "<cstdint> names for NVRTC", layer=True))
        cs.notes.append(f"{header}: {', '.join(defined)} defined for NVRTC (global, as <cstdint> has them)")


def _zero_length_arrays(root: Path, plan: Plan, cs: ChangeSet, shipped: dict[str, str], std_cfg: dict | None,
) -> None:
    """Class templates of the shipped headers with a member array that can be zero-length get a
    specialization without it (zero_length.py): NVRTC rejects what nvcc accepts as a GNU extension."""
    out = plan.spec.output_dir + "/"
    for repo_path in sorted(shipped):
        if repo_path.startswith(out) or repo_path in cs.new_files:
            continue
        data = (root / repo_path).read_bytes()
        edits, skipped = zero_length.find(data)
        for e in edits:
            text = render("zero_length.h.j2", **e.special_ctx).rstrip("\n")
            param = e.param_text
            if std_cfg:      # the names are the header's own std uses, which _std_names defines
                text, _ = stdnames.respell(text, std_cfg["namespace"])
                param, _ = stdnames.respell(param, std_cfg["namespace"])
            cs.edits.append(Edit(repo_path, e.param_at, e.param_at, param,
                                 "flag: the member array is non-empty (NVRTC rejects zero-length arrays)"))
            cs.edits.append(Edit(repo_path, e.special_at, e.special_at, text,
                                 "specialization without the zero-length array"))
            cs.notes.append(f"{repo_path}:{e.line}: {e.class_name}::{e.field} can be a zero-length array (NVRTC "
                            f"rejects it): specialized without it when empty")
        for sk in skipped:
            cs.notes.append(f"{repo_path}:{sk.line}: {sk.class_name}: a member array may be zero-length, left as "
                            f"is ({sk.reason}); NVRTC rejects the variants where it is")


def _respell_includes(path: str, data: bytes, respelled: dict, cs: ChangeSet) -> None:
    """Quoted includes of `path` whose name means two headers in one NVRTC program, spelled
    through an ancestor folder (plan.include_respellings): the same file for the compiler."""
    for inc in source.includes(data):
        new = respelled.get((path, inc.name))
        if new and not inc.system:
            cs.edits.append(Edit(path, inc.name_start, inc.name_end, new,
                                 "include name unique for NVRTC (in-memory headers match by name)"))
            line = data[:inc.start].count(b"\n") + 1
            cs.notes.append(f'{path}:{line}: #include "{inc.name}" spelled "{new}" (another header '
                            "of the NVRTC program has that name)")


def _host_include_blocks(root: Path, path: str, data: bytes, spec) -> list[tuple[int, int]]:
    """Byte ranges of the rule's `host_includes` in a shipped header, not yet guarded by the
    library; consecutive directives (only blank space between) share one guard."""
    blocks: list[tuple[int, int]] = []
    for inc in source.includes(data):
        if inc.rtc_guarded or not host_include(root, path, inc, spec, lambda n: framework_types.stand_in(spec, n)):
            continue
        start = data.rfind(b"\n", 0, inc.start) + 1
        if blocks and not data[blocks[-1][1]:start].strip():
            blocks[-1] = (blocks[-1][0], inc.end)
        else:
            blocks.append((start, inc.end))
    return blocks


def _cmake(root: Path, plan: Plan, cs: ChangeSet, strings: list[str], cpp: str) -> None:
    spec, cm = plan.spec, plan.spec.cmake
    path = cm["file"]
    if not (root / path).is_file():
        raise ApplyError(f"migrate/cmake/file: {path} is not a file under {root}",
                         hint="name the CMakeLists.txt that defines the target, relative to the library root")
    data = (root / path).read_bytes()
    from .texts import library_text
    library_text(data, path)  # a CMakeLists that is not UTF-8: one error naming its line, before any decode
    # After the library's last string-header line, else before its add_library(<target> ...).
    fn = cm["string_header_function"].encode() + b"("
    lines = [i for i in range(len(data)) if data.startswith(fn, i) and (i == 0 or data[i - 1:i] == b"\n")]
    target_line = re.search(rb"(?m)^[ \t]*add_library\(\s*" + re.escape(cm["target"].encode()) + rb"\s", data)
    if lines:
        close = cmake_command_end(data, lines[-1] + len(fn) - 1)
        if close < 0:
            raise ApplyError(f"{path}: the last {cm['string_header_function']}( call never closes", where=path)
        at = _line_end(data, close)
    else:
        at = target_line.start() if target_line else -1
    if at < 0:
        raise ApplyError(f"{path}: no add_library({cm['target']} ...) to attach the kernel strings to",
                         where=path, hint="check migrate/cmake/target in the rule")
    # A string header the library (or another rule) already makes is not made twice.
    made = {tuple(data[i + len(fn):cmake_command_end(data, i + len(fn) - 1) - 1].decode().split()[:2]) for i in lines}
    made |= made_in_loops(data, cm["string_header_function"])
    own_function = "create" in spec.layer and target_line is not None and not lines
    # the string function makes each file it reads a configure dependency (own_layer's does; the
    # library's gets the line where it reads the file, a layer edit), else every call of the block
    refresh = own_function or _strings_refresh(data, path, cm["string_header_function"], cs)
    block = render("cmake_block.cmake.j2", marker=stacking.mark(spec.rule_id), rule=spec.rule_id,
                   legacy_option=spec.legacy_option, configure_depends=not refresh,
                   disable_env=spec.layer.get("disable_env"), function=cm["string_header_function"],
                   strings=[dict(path=p, symbol=symbol_for(p)) for p in strings if (p, symbol_for(p)) not in made])
    if lines:
        at = stacking.cmake_block_at(data.decode(), at, cs.later)
    else:
        at = stacking.before_first(data.decode(), stacking.cmake_block_starts(data.decode()), at, cs.later)
    defines = [spec.legacy_option] + [c["cmake_option"] for c in spec.options["conditional"]]
    defs = render("cmake_defs.cmake.j2", marker=stacking.mark(spec.rule_id), target=cm["target"], defines=defines,
                  cpp=cpp)
    end = stacking.before_first(data.decode(), stacking.cmake_options_starts(data.decode()), len(data), cs.later)
    if own_function:
        # a library without a layer: the string function (unless defined), and the layer's block and the
        # stubs' after add_library, at its indentation (inside its if(), when it is inside one)
        indent = re.match(rb"[ \t]*", target_line.group(0)).group(0).decode()
        block = own_layer.cmake_function(data, cm["string_header_function"], stacking.mark(spec.rule_id),
                                         spec.rule_id, render) + block
        defs = own_layer.cmake_layer(spec.layer, spec.legacy_option, cm["target"], stacking.mark(spec.rule_id),
                                     spec.rule_id, render) + "\n" + defs
        block, defs = own_layer.indented(block, indent), own_layer.indented(defs, indent) + "\n"
        end = _line_end(data, cmake_command_end(data, data.index(b"(", target_line.start())))
    if cm.get("condition"):     # the blocks only where the target's CUDA part is configured (bitsandbytes: BUILD_CUDA)
        block, defs = own_layer.conditional(block, cm["condition"]), own_layer.conditional(defs, cm["condition"])
    cs.edits.append(Edit(path, at, at, "\n" + block if lines else block + "\n", "kernel strings and legacy option"))
    cs.edits.append(Edit(path, end, end, "\n" + defs, "options seen by the stubs"))


def _strings_refresh(data: bytes, path: str, function: str, cs: ChangeSet) -> bool:
    """Whether the library's string function, defined in this CMake file, makes the file it reads
    a configure dependency, after a layer edit that adds it where needed: the string is read at
    configure time (`file(READ)`), and without one an edit of an embedded file leaves the old string
    (TE's make_string_header_from_file, the files TE's own calls embed included). False where the
    function is elsewhere or reads its file in a way not recognised here: then the block adds the
    dependency for the files it embeds."""
    text = data.decode(errors="replace")
    head = re.search(r"(?mi)^[ \t]*function\(\s*" + re.escape(function) + r"\s+(\w+)[^)]*\)[ \t]*\n", text)
    if not head:
        return False
    end = re.compile(r"(?mi)^[ \t]*endfunction\s*\(").search(text, head.end())
    if not end:
        return False
    body = text[head.end():end.start()]
    if "CMAKE_CONFIGURE_DEPENDS" in body:
        return True
    arg = re.escape(head.group(1))
    # file(READ "${file}" ...), also with ${CMAKE_CURRENT_SOURCE_DIR}/ before it (the path it reads)
    read = re.search(r'(?mi)^([ \t]*)file\(\s*READ\s+("?)((?:\$\{CMAKE_CURRENT_SOURCE_DIR\}/)?\$\{' + arg
                     + r'\})\2\s[^)\n]*\)[ \t]*\n', body)
    if not read:
        return False
    at = len(text[:head.end() + read.end()].encode())
    indent = read.group(1)
    cs.edits.append(Edit(path, at, at, f"{indent}# The string is read at configure time: re-run CMake when the file "
                                       f"changes.\n{indent}set_property(DIRECTORY APPEND PROPERTY "
                                       f"CMAKE_CONFIGURE_DEPENDS \"{read.group(3)}\")\n",
                         "kernel strings that refresh", layer=True))
    return True


def _setuptools(run: _Run, strings: list[str], cpp: str) -> None:
    """`migrate.setuptools`: the string-header script and the setup script's edits (setuptools_build.py)."""
    spec = run.plan.spec
    sources = [cpp] + ([spec.layer["source"]] if "create" in spec.layer else [])
    files, edits = setuptools_build.edits(run.root, spec.raw["setuptools"], spec.repo_path, spec.rule_id,
                                          spec.output_dir, sources, strings, spec.library or spec.rule_id, render)
    run.cs.new_files.update(files)
    run.cs.edits += [Edit(e.path, e.start, e.end, e.text, e.why) for e in edits]


_STRING_LOOP = (r'foreach\(\s*(\w+)\s+IN\s+ITEMS\s+([^)]*)\)\s*string\(\s*MAKE_C_IDENTIFIER\s+"string_code_\$\{\1\}"\s+'
                r'(\w+)\s*\)\s*FN\(\s*\$\{\1\}\s+\$\{\3\}\s*\)')


def made_in_loops(data: bytes, function: str) -> set[tuple[str, str]]:
    """(path, symbol) of the string headers a CMake file makes in the loops the CMake block writes
    (`foreach(rtc_file IN ITEMS ...)` calling `function` on each, symbol `string_code_` + the path
    as a C identifier, as symbol_for spells it)."""
    loop = re.compile(_STRING_LOOP.replace("FN", re.escape(function)))
    return {(p, symbol_for(p)) for m in loop.finditer(data.decode(errors="replace")) for p in m.group(2).split()}


def manifest(plan: Plan, version: str = __version__, outside: dict | None = None) -> str:
    """The manifest's text. `outside`: kernel id -> variants only translation units outside the
    analysis launch (check/reach.py), listed with `"outside": true` so verify compiles each."""
    spec, out = plan.spec, plan.spec.output_dir
    programs = program_paths(plan)
    outside = outside or {}
    doc = {
        "schema": "codemod-manifest/1", "rule": spec.rule_id, "tool_version": version,
        "output_dir": out, "legacy_option": spec.legacy_option,
        "kernels": [{
            "id": kp.kernel.id,
            "kernel_string": {"path": programs[kp.kernel.id], "symbol": symbol_for(programs[kp.kernel.id])},
            "headers": kp.headers,
            "include_cuda_toolkit": True,
            "include_cuda_cccl": bool(spec.layer.get("cuda_includes_cccl", False)),
            "nvrtc_options": list(spec.options["always"]) + spec.options["kernels"].get(kp.kernel.id, []),
            "conditional_options": [dict(c) for c in spec.options["conditional"]],
            **({"build_defines": dict(plan.build_defines)} if plan.build_defines else {}),
            **({"defined_macros": list(spec.options["defined_macros"])} if spec.options.get("defined_macros") else {}),
            **({"arch_targets": {str(cc): t for cc, t in spec.options["arch_targets"].items()}}
               if spec.options.get("arch_targets") else {}),
            "sites": sorted(s.id for s in kp.sites),
            "variants": [{"name_expression": v.name_expression(kp.kernel.id), "axes": v.axes,
                          "sites": sorted(v.sites)} for v in kp.variants]
                        + [{"name_expression": v.name_expression(kp.kernel.id), "axes": v.axes, "outside": True,
                            "sites": sorted(v.sites)} for v in outside.get(kp.kernel.id, [])],
        } for kp in plan.kernels],
    }
    return strict_json.dumps(doc, "manifest", indent=1) + "\n"
