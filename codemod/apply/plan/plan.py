"""Analysis + rule -> a migration plan: the kernels to move, their variants, sites and headers. The
plan stage's one entry is `build_plan`; what it returns is frozen (later stages read it, none adds to it)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...errors import ApplyError, UnsupportedConstruct, UsageError
from ...model import Analysis, Kernel, Site
from . import build_defines, framework_types, kernel_api, shared_variables
from ..base import source
from ..base.tree import HEADER_SUFFIXES, host_include, read_overlay, resolve_include
from .names import Unspellable, site_variants, spelled_id
from .spec import MigrateSpec, check_selection, selected
from ..base.stdshim import shim_path


@dataclass(frozen=True)
class Variant:
    axes: dict[str, str]
    sites: list[str]
    # the analysis' entry points reaching it (option_scope: options the static build gives some
    # sources only follow them)
    entry_points: list[str] = field(default_factory=list)

    def name_expression(self, kernel_id: str) -> str:
        return f"&::{spelled_id(kernel_id)}<{', '.join(self.axes.values())}>"


@dataclass(frozen=True)
class KernelPlan:
    kernel: Kernel
    signature: source.KernelSignature
    sites: list[Site]
    variants: list[Variant]
    headers: dict[str, str] = field(default_factory=dict)   # include name -> repo path
    # site id -> template arguments the launch deduces, spelled as in its enclosing scope; the
    # rewrite appends them to the spelled ones (the stub factories take explicit arguments only)
    deduced: dict[str, list[str]] = field(default_factory=dict)

    # the file holding the kernel's definition for the NVRTC program: the kernel's header, or the
    # header its device code is extracted into from a translation unit (extract.py)
    source_file: str = ""
    # headers the NVRTC program includes after source_file: they declare types the name
    # expressions spell that source_file does not reach (kernel_api.type_headers)
    type_headers: list[str] = field(default_factory=list)
    # qualified `__device__` variables a static kernel writes and this one reads: copied into the
    # NVRTC module's before each launch (migrate.shared_variables, shared_variables.py)
    shared_variables: list[str] = field(default_factory=list)
    # headers the NVRTC program includes before source_file (kernel_strings.include_first): what a
    # kernel header takes from its includers
    first_headers: list[str] = field(default_factory=list)
    # the header declaring a kernel a unit defines (the launching units see only it): its stubs' home
    declared_in: str | None = None

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def namespace(self) -> str:
        return self.kernel.id.rsplit("::", 1)[0] if "::" in self.kernel.id else ""


@dataclass(frozen=True)
class Skipped:
    what: str
    reason: str


@dataclass(frozen=True)
class Plan:
    spec: MigrateSpec
    kernels: list[KernelPlan]
    skipped: list[Skipped]
    removed_instantiations: int
    # translation unit -> the header its kernels' device code moves into (extract.Extraction)
    extractions: dict = field(default_factory=dict)
    # the analysis' entry points (model.EntryPoint): the generated operator test calls them
    entry_points: list = field(default_factory=list)
    # (includer, include name) -> the spelling apply writes (include_respellings)
    respelled: dict = field(default_factory=dict)
    # migrate.options.build_defines: NAME -> the library's default (build_defines.defaults), what the
    # precheck and verify compile with; the stubs pass the host compile's value
    build_defines: dict = field(default_factory=dict)

    def read(self, root: Path, path: str) -> bytes:
        """A library file as the patch leaves it for NVRTC: an extracted header's new text."""
        return read_overlay(root, path, self.extractions)


def _closure_includes(root: Path, start: str, spec: MigrateSpec, out_dir: str, extractions: dict | None,
                      respelled: dict[tuple[str, str], str]):
    """(includer, include, name NVRTC sees, repo path or generated file it means) for every library
    header the kernel's file reaches, in walk order; replaced headers map to the generated prelude."""
    ks = spec.kernel_strings
    replaced = set(ks.get("replace_with_prelude", []))
    shims = ks.get("shims", {})
    todo, seen = [start], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for inc in source.includes(read_overlay(root, path, extractions or {})):
            if host_include(root, path, inc, spec, lambda name: framework_types.stand_in(spec, name)):
                continue            # hidden from NVRTC by generate (or already by the library)
            if inc.system and inc.name in shims:
                yield path, inc, inc.name, shim_path(out_dir, inc.name)
                continue
            if framework_types.stand_in(spec, inc.name):
                for name in framework_types.stand_in_closure(inc.name):
                    yield path, inc, name, framework_types.stand_in_path(out_dir, name)
                    for std in framework_types.stand_in_std(spec, name):
                        yield path, inc, std, shim_path(out_dir, std)
                continue
            target = resolve_include(root, path, inc, spec.include_dirs)
            if target is None:
                continue
            yield path, inc, respelled.get((path, inc.name), inc.name), (
                f"{out_dir}/prelude/{target}" if target in replaced else target)
            if target not in replaced:
                todo.append(target)


def _header_closure(root: Path, start: str, spec: MigrateSpec, out_dir: str,
                    extractions: dict | None = None,
                    respelled: dict[tuple[str, str], str] | None = None) -> dict[str, str]:
    """Include name -> repo path for every library header the kernel's file reaches (NVRTC matches
    in-memory headers by the name as spelled, `respelled` where apply changes the spelling).
    Replaced headers map to the generated prelude."""
    headers: dict[str, str] = {}
    for path, _, name, mapped in _closure_includes(root, start, spec, out_dir, extractions, respelled or {}):
        if headers.get(name, mapped) != mapped:
            raise UnsupportedConstruct(
                f"include name '{name}' means {headers[name]} and {mapped}",
                where=path, hint="NVRTC matches in-memory headers by name; spell one of the "
                                 "includes differently, or exclude the kernel")
        headers[name] = mapped
    for inc in spec.kernel_strings.get("prelude_includes", []):
        if inc in spec.kernel_strings.get("shims", {}):
            headers[inc] = shim_path(out_dir, inc)
    return dict(sorted(headers.items()))


def include_respellings(root: Path, starts: list[str], spec: MigrateSpec, out_dir: str,
                        extractions: dict | None = None) -> dict[tuple[str, str], str]:
    """(includer, spelled name) -> the name apply writes instead, for quoted includes whose name
    means two library headers within one NVRTC program (TE: `swizzle.cuh` in `cast/mxfp8/` and in
    `cast/mxfp8/specialized/`, both reached by quantize_mxfp8.cuh). NVRTC matches in-memory headers
    by the name alone; the compiler resolves a quoted include from the includer's folder first. So
    every include of such a name, in every header the programs reach, is spelled from an ancestor
    of its includer's folder (`../specialized/swizzle.cuh`): the same file for nvcc, a distinct name
    for NVRTC. The fewest `../` that make the spellings of different headers differ."""
    ambiguous: set[str] = set()
    uses: dict[str, list[tuple[str, str]]] = {}          # name -> [(includer, target)]
    for start in sorted(set(starts)):
        means: dict[str, set[str]] = {}
        for path, inc, name, mapped in _closure_includes(root, start, spec, out_dir, extractions, {}):
            means.setdefault(name, set()).add(mapped)
            if not inc.system and (path, mapped) not in uses.setdefault(name, []):
                uses[name].append((path, mapped))
        ambiguous |= {n for n, targets in means.items() if len(targets) > 1}
    out: dict[tuple[str, str], str] = {}
    for name in sorted(ambiguous):
        pairs = uses.get(name, [])
        for up in range(1, 1 + max((p.count("/") for p, _ in pairs), default=0)):
            spelled = {(p, t): _spelled_from_ancestor(p, t, up) for p, t in pairs}
            if None in spelled.values():
                break
            if all(spelled[a] != spelled[b] for a in pairs for b in pairs if a[1] != b[1]):
                out.update({(p, name): spelled[(p, t)] for p, t in pairs})
                break
    return out


def _spelled_from_ancestor(includer: str, target: str, up: int) -> str | None:
    """`target` as a quoted include of `includer` through the folder `up` levels above the
    includer's (`../mxfp8/swizzle.cuh`); None when that folder is above the library root."""
    folder = posixpath.dirname(includer)
    for _ in range(up):
        if not folder:
            return None
        folder = posixpath.dirname(folder)
    rel = posixpath.relpath(target, folder or ".")
    return None if rel.startswith("..") else "../" * up + rel


class _KernelBodies:
    """The definition text of every kernel the analysis found, read once per file on demand."""

    def __init__(self, root: Path, analysis: Analysis):
        self.root, self.kernels, self._texts = root, analysis.kernels, None

    def items(self) -> list[tuple[str, bytes]]:
        if self._texts is None:
            self._texts, scans = [], {}
            for k in self.kernels:
                if k.file not in scans:
                    data = (self.root / k.file).read_bytes()
                    scans[k.file] = data
                data = scans[k.file]
                decl = source.kernel_definition(k.file, data, k.name)
                self._texts += [(k.id, data[decl[0]:decl[1]])] if decl else []
        return self._texts


def _shared_device_variables(root: Path, kernel: Kernel, body: bytes, files: list[str], bodies: _KernelBodies,
                             extractions: dict) -> list[shared_variables.Shared]:
    """The mutable namespace-scope `__device__` variables of the kernel's headers that its body and
    another kernel's body name (TE: group_quantize_mxfp8_kernel reads `g_tensor_maps`, which
    update_tma_descriptors writes). An NVRTC module has its own copy of every `__device__`
    variable, so the two would no longer share it (shared_variables.resolve decides). Uses through
    device functions are not followed."""
    out = []
    for path in dict.fromkeys(files):
        if not path.endswith(HEADER_SUFFIXES) or not (root / path).is_file() and path not in {
                ex.header for ex in extractions.values()}:
            continue
        for name in source.device_variables(read_overlay(root, path, extractions)):
            word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
            if not word.search(body):
                continue
            others = tuple(kid for kid, text in bodies.items() if kid != kernel.id and word.search(text))
            if others:
                out.append(shared_variables.Shared(name, path, others))
    return out


def _deduced_arguments(site: Site) -> tuple[list[str], str | None]:
    """(the template arguments a launch leaves to deduction, spelled as the analysis found them in
    the enclosing scope, in parameter order; a refusal reason or None). Explicit template arguments
    are positional, so the deduced ones follow the spelled ones; each needs `deduced_from`."""
    if site.via is not None:
        return [], None
    missing = [i for i, a in enumerate(site.axes) if not a.arg]
    if not missing:
        return [], None
    first = missing[0]
    tail = site.axes[first:]
    unknown = [a.param for a in tail if a.arg or not a.deduced_from or not str(a.deduced_from.get("type", "")).strip()]
    if unknown:
        return [], (f"template arguments {', '.join(unknown)} are deduced from the launch's arguments at "
                    f"{site.id} and the analysis names no spelled type for them (deduced_from); spell "
                    "them at the launch, or exclude the kernel")
    return [a.deduced_from["type"].strip() for a in tail], None


def _attribute_on_template_id(root: Path, site: Site) -> bool:
    """`cudaFuncSetAttribute(kernel<...>, attr, value)` with the spelled template-id (or its
    address) the whole first argument."""
    if not site.axes or not all(a.arg for a in site.axes):
        return False
    path = root / site.file
    if not path.is_file():
        return False
    data = path.read_bytes()
    starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
    if not 1 <= site.line <= len(starts):
        return False
    found = source.template_id_at(data, source.first_argument(data, starts[site.line - 1] + site.col - 1),
                                  site.kernel.rsplit("::", 1)[-1] if site.kernel else "")
    return found is not None and re.compile(rb"\s*,").match(data, found[1]) is not None


def _unrewritable(root: Path, site: Site) -> str | None:
    """Why apply cannot rewrite a site of a kernel it migrates, or None. Apply rewrites `<<<>>>`
    launches and cudaFuncSetAttribute on a kernel variable or a spelled template-id; anything else (cudaLaunchKernel*,
    cooperative launches, occupancy queries, kernel tables) would keep a static instantiation or
    stop compiling, so the kernel stays static instead."""
    if site.kind == "launch" and site.api == "<<<>>>":
        return None
    if site.kind == "use" and site.api == "cudaFuncSetAttribute" and site.via:
        return None
    if site.kind == "use" and site.api == "cudaFuncSetAttribute" and _attribute_on_template_id(root, site):
        return None     # the stub object's set_attribute (launch_rewrite)
    if kernel_api.rewritable(site) or site.kind == "use" and site.api == "explicit_instantiation":
        return None     # an explicit instantiation: behind the legacy option (explicit_sites.py)
    if site.kind == "use" and site.api == "helper" and site.generic_lambda:
        return kernel_api.helper_refusal(root, site)
    what = "launch through" if site.kind == "launch" else "use in"
    return (f"{what} {site.api} at {site.id}: apply rewrites only `<<<>>>` launches, and "
            "cudaFuncSetAttribute on a kernel variable or a spelled template-id, and cudaLaunchCooperativeKernel "
            "and cudaOccupancyMaxActiveBlocksPerMultiprocessor on a kernel variable; migrate that site by hand, "
            "or exclude the kernel")


def _declared_only(root: Path, kernel: Kernel) -> str | None:
    """The unit defining `kernel` when its recorded file is a header that only declares it."""
    p = root / kernel.file
    if not kernel.file.endswith(HEADER_SUFFIXES) or not p.is_file() or \
            source.kernel_definition(kernel.file, p.read_bytes(), kernel.name) is not None:
        return None
    return _defining_unit(root, kernel)


def _defining_unit(root: Path, kernel: Kernel) -> str | None:
    """The translation unit instantiating `kernel` that holds its definition, when its recorded
    file (a header) only declares it."""
    for unit in sorted(kernel.tus):
        p = root / unit
        if p.is_file() and source.kernel_definition(unit, p.read_bytes(), kernel.name) is not None:
            return unit
    return None


def _incomplete(analysis: Analysis, spec: MigrateSpec, kernel: Kernel, sites: list[Site]) -> str | None:
    """Why the kernel's analysis is incomplete, or None: a parse error in a TU whose kernels the
    rule moves (its launches are unknown), or in the kernel's file, a site's file or a TU that
    instantiates it. Such a kernel stays static (docs/diagnostics.md, CM0101). Only errors in the
    library's own files count: errors inside toolkit headers (absolute paths: libclang's CUDA
    support differs from nvcc's there, e.g. CCCL's barrier with libclang 18) leave the library's
    code parsed, and a parse they cut short is redone TU by TU by the frontend."""
    first: dict[str, str] = {}
    for d in analysis.diagnostics:
        if d.id == "CM0101" and d.severity == "error" and d.file and not d.file.startswith("/"):
            first.setdefault(d.file, f"{d.file}:{d.line}: {d.message}")
    units = {tu.file for tu in analysis.translation_units}
    in_headers = next((first[f] for f in first if f not in units), None)
    for tu in analysis.translation_units:
        if tu.errors and tu.file not in first and in_headers:
            first[tu.file] = f"{tu.file}: {tu.errors} parse error(s), e.g. {in_headers}"
    moved = [tu for tu in spec.translation_units if tu in first]
    if moved:
        return (f"translation unit {moved[0]} (migrate/translation_units) has parse errors, so its launches are "
                f"unknown ({first[moved[0]]}); fix them and rerun")
    for f in [kernel.file, *(s.file for s in sites), *kernel.tus]:
        if f in first:
            return f"the analysis of {f} is incomplete ({first[f]}); fix the parse errors and rerun"
    return None


def build_plan(root: Path, analysis: Analysis, spec: MigrateSpec, only: list[str] | None = None,
               exclude: list[str] | None = None, declined: dict[str, str] | None = None, progress=None) -> Plan:
    """`only`/`exclude`: kernel ids or names from the command line; `declined`: kernel id -> why it
    stays static (the --interactive review's answers); `progress(message)`: a line per kernel."""
    by_id = {k.id: k for k in analysis.kernels}
    missing = [k for k in spec.kernels if k not in by_id]
    if missing:
        migrated = (root / spec.output_dir / "kernels.h").is_file()
        why = (f"{spec.output_dir}/kernels.h exists: the tree may hold this rule's migration already" if migrated
               else f"the tree holds no migration of this rule (no {spec.output_dir}/kernels.h): check the ids "
                    "against `codemod analyze --target` (a kernel in an unnamed namespace is "
                    "`ns::(anonymous namespace)::k`) and that apply parses as analyze did (--compile-db)")
        raise ApplyError("the tree does not match the rule: kernels not found: " + ", ".join(missing),
                         hint=f"found: {', '.join(sorted(by_id)) or 'none'}; {why}")
    check_selection(spec, only, exclude)
    declined = declined or {}
    wanted = [k for k in spec.kernels if (not only or selected(k, only)) and not selected(k, exclude)
              and k not in declined]
    skipped = [Skipped(k, declined.get(k) or ("excluded with --exclude" if selected(k, exclude)
                                              else "not selected with --only"))
               for k in spec.kernels if k not in wanted]
    skipped += [Skipped(k.id, "not listed in the rule's migrate/kernels") for k in analysis.kernels
                if k.id not in spec.kernels]
    sites_by_id = {s.id: s for s in analysis.sites}
    # a kernel a header declares and a unit defines (bitsandbytes' kernels.cuh / kernels.cu): planned
    # from the unit (its device code extracted), its stubs' section in the declaring header
    declared_in = {}
    for k in wanted:
        if k in by_id and (unit := _declared_only(root, by_id[k])):
            declared_in[k] = by_id[k].file
            by_id[k] = replace(by_id[k], file=unit)
    extractions, refused_units = _extractions(root, spec, [by_id[k] for k in wanted if k in by_id], sites_by_id)
    respelled = include_respellings(root, [extractions[by_id[k].file].header if by_id[k].file in extractions
                                           else by_id[k].file for k in wanted], spec, spec.output_dir, extractions)
    plans: list[KernelPlan] = []
    bodies = _KernelBodies(root, analysis)
    for n, kid in enumerate(wanted, 1):
        if progress:
            progress(f"apply: planning [{n}/{len(wanted)}] {kid}")
        kernel = by_id[kid]
        sites = [sites_by_id[s] for s in kernel.sites if s in sites_by_id]
        if not kernel.is_template:
            skipped.append(Skipped(kid, "not a template: the static build compiles it once, so there is "
                                        "nothing to instantiate per variant at run time (leave it out of "
                                        "migrate/kernels)"))
            continue
        incomplete = _incomplete(analysis, spec, kernel, sites)
        if incomplete:
            skipped.append(Skipped(kid, incomplete))
            continue
        for s in sites:
            if s.in_macro_body:
                raise UnsupportedConstruct(f"launch of {kid} is spelled in a macro body",
                                           where=f"{s.file}:{s.line}",
                                           hint="expand the macro by hand or exclude the kernel with --exclude")
        source_file = kernel.file
        if not kernel.file.endswith(HEADER_SUFFIXES):
            if kernel.file in refused_units:
                skipped.append(Skipped(kid, f"defined in {kernel.file}, a translation unit, and its device "
                                            f"code cannot be moved into a header: {refused_units[kernel.file]}"))
                continue
            source_file = extractions[kernel.file].header
        data = (root / kernel.file).read_bytes()
        decl = source.kernel_definition(kernel.file, data, kernel.name)
        if decl is None:
            defined_in = _defining_unit(root, kernel)
            if defined_in:      # bitsandbytes: declared in kernels.cuh, defined in kernels.cu
                skipped.append(Skipped(kid, f"declared in {kernel.file} but defined in {defined_in}, a translation "
                                            "unit that other units launch it from through the declaration: apply "
                                            "migrates kernels defined in a header, or in the unit launching them"))
                continue
            raise ApplyError(f"definition of {kid} not found", where=f"{kernel.file}:{kernel.line}")
        variants: dict[tuple, Variant] = {}
        deduced_at: dict[str, list[str]] = {}
        refused = None
        for s in sites:
            refused = _unrewritable(root, s)
            if refused:
                break
            if s.kind != "launch" and s.api != "explicit_instantiation":     # the latter: its one variant
                continue
            explicit, why = _deduced_arguments(s) if s.kind == "launch" else ([], None)
            if why:
                refused = why
                break
            if explicit:
                deduced_at[s.id] = explicit
            try:
                spelled = site_variants(s, kernel, spec)
            except Unspellable as e:
                refused = f"template argument `{e}` at {s.id} has no canonical spelling for a name expression"
                break
            reaching = [v.get("entry_points", []) for v in s.variants if v.get("kernel", kernel.id) == kernel.id]
            for axes, entry_points in zip(spelled, reaching):
                key = tuple(axes.items())
                variants.setdefault(key, Variant(axes, []))
                if s.id not in variants[key].sites:
                    variants[key].sites.append(s.id)
                variants[key].entry_points.extend([e for e in entry_points if e not in variants[key].entry_points])
        if not refused:
            refused = framework_types.refusal(kid, variants.values(), spec)
        if not refused and not variants:
            refused = (f"the analysis reached no instantiation of {kid} from the rule's entry points "
                       "(nothing to compile or verify); add the translation units that hold its entry "
                       "points to analyze.translation_units")
        headers = _header_closure(root, source_file, spec, spec.output_dir, extractions, respelled)
        copied: list[str] = []
        if not refused:
            copied, refused = shared_variables.resolve(
                kid, _shared_device_variables(root, kernel, data[decl[0]:decl[1]],
                                              [source_file, *headers.values()], bodies, extractions),
                spec.kernels, shared_variables.listed(spec.raw).get(kid, []))
        extra: list[str] = []
        if not refused:
            extra, refused = _type_headers(root, spec, kernel, source_file, headers, sites, variants.values(),
                                           extractions)
        if refused:
            skipped.append(Skipped(kid, refused))
            continue
        first = list(spec.kernel_strings.get("include_first", {}).get(kid, []))
        for h in first + extra:
            headers = {**headers, h: h, **_header_closure(root, h, spec, spec.output_dir, extractions, respelled)}
        for h in framework_types.spelled_headers(variants.values(), spec):
            if h not in headers:
                extra.append(h)
            for n in framework_types.stand_in_closure(h):
                headers[n] = framework_types.stand_in_path(spec.output_dir, n)
                for std in framework_types.stand_in_std(spec, n):
                    headers[std] = shim_path(spec.output_dir, std)
        variants = _one_spelling_per_type(root, spec, kernel, source_file, headers, variants, extractions)
        plans.append(KernelPlan(kernel, source.kernel_signature(data, *decl), sites,
                                sorted(variants.values(), key=lambda v: v.name_expression(kid)),
                                dict(sorted(headers.items())), deduced_at, source_file, extra, copied, first,
                                declared_in.get(kid)))
    plans = _whole_lambdas(plans, skipped)
    _one_factory_per_name(plans)
    removed = sum(kp.kernel.instantiations for kp in plans)
    used = {kp.kernel.file for kp in plans}
    shipped = {p for kp in plans for p in [kp.source_file, *kp.headers.values()]}
    return Plan(spec, sorted(plans, key=lambda p: p.kernel.id), skipped, removed,
                extractions={u: ex for u, ex in extractions.items() if u in used},
                entry_points=list(analysis.entry_points),
                respelled={k: v for k, v in sorted(respelled.items()) if k[0] in shipped},
                build_defines=build_defines.defaults(root, spec) if plans else {})


def _one_factory_per_name(plans: list[KernelPlan]) -> None:
    """A kernel's stub factory is named after the kernel (its last name) in the rule's namespace,
    and the launch sites and kernels.cpp find it by that name: two migrated kernels of one name in
    different namespaces would be two factories of one name (one kept by the linker) and one
    kernel found for both. Refused, naming them, before anything is generated."""
    by_name: dict[str, list[str]] = {}
    for kp in plans:
        by_name.setdefault(kp.name, []).append(kp.kernel.id)
    twins = {name: ids for name, ids in by_name.items() if len(ids) > 1}
    if twins:
        name, ids = sorted(twins.items())[0]
        raise ApplyError(f"migrate.kernels lists {len(ids)} kernels named `{name}` ({', '.join(sorted(ids))}); their "
                         "host stubs would be one factory of that name in the rule's namespace",
                         hint="migrate one of them in this rule (the other in a rule of its own namespace, or "
                              "left static)")


def _whole_lambdas(plans: list[KernelPlan], skipped: list[Skipped]) -> list[KernelPlan]:
    """Plans whose generic lambdas are migrated whole. A lambda taking the kernel as `auto` gets
    the stub object from every passing site (`launch(ns::k<...>())`) and launches it with
    `kernel.launch(...)`, which a raw kernel pointer has not: when one kernel passed to a lambda
    stays static, every kernel passed to it stays static (repeated until nothing changes)."""
    lambdas: dict[tuple, set] = {}     # (file, line, col) of the lambda -> kernels passed to it
    for kp in plans:
        for s in kp.sites:
            gl = s.generic_lambda
            if gl:
                key = (gl.get("file"), gl.get("line"), gl.get("col"), gl.get("name"))
                lambdas.setdefault(key, set()).update(p.get("kernel") for p in gl.get("passing_sites", []))
    kept = {kp.kernel.id: kp for kp in plans}
    changed = True
    while changed:
        changed = False
        for (file, line, _col, name), passed in sorted(lambdas.items(), key=str):
            static = sorted(str(k) for k in passed if k not in kept)
            users = sorted(k for k in passed if k in kept)
            if not static or not users:
                continue
            for kid in users:
                skipped.append(Skipped(kid, (
                    f"passed to the generic lambda '{name}' at {file}:{line} with {static[0]}, which stays "
                    "static: the lambda launches the stub object (`kernel.launch(...)`), so every kernel "
                    "passed to it must be migrated; migrate them together, or exclude them together")))
                del kept[kid]
            changed = True
    return [kp for kp in plans if kp.kernel.id in kept]


_MEMBER = re.compile(r"\b([A-Za-z_]\w*)::([A-Za-z_]\w*)")


def _type_headers(root: Path, spec: MigrateSpec, kernel: Kernel, source_file: str, headers: dict[str, str],
                  sites: list[Site], variants, extractions: dict) -> tuple[list[str], str | None]:
    """(headers the NVRTC program must include besides the kernel's own, a refusal or None): the
    qualified types and functions its name expressions spell (`Kernel_traits_finalize<...>`,
    `&::ns::detail::identity`) must be declared in the program; one its kernel header does not
    reach is looked up in the includes of the launch sites' files, then of the translation units
    instantiating the kernel (where the static build found it: an argument spelled by a caller in
    another header)."""
    named = {p.name for p in kernel.params if p.kind in ("type", "function_pointer")}
    values = [v for var in variants for p, v in var.axes.items() if p in named]
    names = kernel_api.spelled_type_names(values)
    # the members of a declaration the prelude copies (`::E::kName` of a copied enum) come with it
    copied = set(spec.kernel_strings.get("prelude_copy", []))
    names -= {m.group(2) for v in values for m in _MEMBER.finditer(v) if m.group(1) in copied}
    # framework types the programs alias to CUDA's (framework_types.py): declared there
    names -= {n.rpartition("::")[2] for v in values for n in framework_types.names(v)
              if n in framework_types.mapped(spec) or n in framework_types.defined(spec)}
    if not names:
        return [], None
    out = spec.output_dir + "/"
    reached = [source_file] + sorted({p for p in headers.values() if not p.startswith(out)})
    units = sorted({s.file for s in sites})
    units += sorted(set(kernel.tus) - set(units))
    known = set(spec.kernel_strings.get("prelude_copy", []))
    found, nowhere = kernel_api.type_headers(
        root, names, reached, units, lambda path, inc: resolve_include(root, path, inc, spec.include_dirs),
        lambda path: read_overlay(root, path, extractions), known)
    replaced = set(spec.kernel_strings.get("replace_with_prelude", []))
    hidden = [h for h in found if h in replaced]
    if nowhere or hidden:
        what = ", ".join(nowhere) or ", ".join(hidden)
        where = "no header the launch sites' files include declares" if nowhere else \
            "the header replaced by the NVRTC prelude declares"
        return [], (f"its name expressions spell {what}: {where} it; declare it in a header NVRTC can read, "
                    "or exclude the kernel")
    return found, None


def _one_spelling_per_type(root: Path, spec: MigrateSpec, kernel: Kernel, source_file: str,
                           headers: dict[str, str], variants: dict, extractions: dict) -> dict:
    """The variants with literal default template arguments spelled out in their type axes
    (kernel_api.with_literal_defaults): `Traits<a, b>` and `Traits<a, b, 16>` are one type, one
    variant, one TypeName<T> specialization in the stubs."""
    types = {p.name for p in kernel.params if p.kind == "type"}
    if not any("<" in v for var in variants.values() for p, v in var.axes.items() if p in types):
        return variants
    out = spec.output_dir + "/"
    files = [source_file] + sorted({p for p in headers.values() if not p.startswith(out)})
    cache: dict[str, list | None] = {}

    def defaults_of(name: str):
        if name not in cache:
            cache[name] = next((d for d in (kernel_api.template_defaults(read_overlay(root, f, extractions), name)
                                            for f in files) if d is not None), None)
        return cache[name]

    merged: dict[tuple, Variant] = {}
    for var in variants.values():
        axes = {p: kernel_api.with_literal_defaults(v, defaults_of) if p in types else v
                for p, v in var.axes.items()}
        key = tuple(axes.items())
        merged.setdefault(key, Variant(axes, []))
        merged[key].sites.extend([s for s in var.sites if s not in merged[key].sites])
        merged[key].entry_points.extend([e for e in var.entry_points if e not in merged[key].entry_points])
    return merged


def _extractions(root: Path, spec: MigrateSpec, kernels: list[Kernel], sites_by_id: dict) -> tuple[dict, dict]:
    """(unit -> Extraction, unit -> why not) for the wanted kernels defined in translation units:
    one header per unit holding all of them and their device-side dependencies (extract.py)."""
    from .extract import Refused, extract, header_path
    from .target_names import guard_convention

    guards = guard_convention(root, spec.library)
    by_unit: dict[str, list[Kernel]] = {}
    for k in kernels:
        if not k.file.endswith(HEADER_SUFFIXES):
            by_unit.setdefault(k.file, []).append(k)
    done, refused = {}, {}
    for unit, ks in sorted(by_unit.items()):
        arguments = {ident for k in ks for sid in k.sites if sid in sites_by_id
                     for v in sites_by_id[sid].variants for a in v.get("args", [])
                     for ident in re.findall(r"[A-Za-z_]\w*", str(a))}
        try:
            done[unit] = extract(root, unit, {k.name for k in ks}, spec.rule_id,
                                 guards.guard(header_path(unit)), arguments)
        except Refused as exc:
            refused[unit] = str(exc)
    return done, refused
