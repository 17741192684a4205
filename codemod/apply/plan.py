"""Analysis + rule -> a migration plan: the kernels to move, their variants, sites and headers."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ApplyError, UnsupportedConstruct
from ..frontend.treesitter import scan_bytes
from ..model import Analysis, Kernel, Site
from . import source
from .names import argument
from .spec import MigrateSpec


def symbol_for(path: str) -> str:
    """The string-header symbol for a file: `string_code_` + path with separators as `_`."""
    return "string_code_" + "".join(c if c.isalnum() else "_" for c in path)


@dataclass
class Variant:
    axes: dict[str, str]
    sites: list[str]

    def name_expression(self, kernel_id: str) -> str:
        return f"&::{kernel_id}<{', '.join(self.axes.values())}>"


@dataclass
class KernelPlan:
    kernel: Kernel
    signature: source.KernelSignature
    sites: list[Site]
    variants: list[Variant]
    headers: dict[str, str] = field(default_factory=dict)   # include name -> repo path

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def namespace(self) -> str:
        return self.kernel.id.rsplit("::", 1)[0] if "::" in self.kernel.id else ""


@dataclass
class Skipped:
    what: str
    reason: str


@dataclass
class Plan:
    spec: MigrateSpec
    kernels: list[KernelPlan]
    skipped: list[Skipped]
    removed_instantiations: int


def _variants(site: Site, kernel: Kernel, spec: MigrateSpec) -> list[dict[str, str]]:
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
        out.append({p.name: argument(p.kind, a, spec) for p, a in zip(params, args)})
    return out


def _header_closure(root: Path, start: str, spec: MigrateSpec, out_dir: str) -> dict[str, str]:
    """Include name -> repo path for every local header the kernel's file reaches (NVRTC matches
    in-memory headers by the name as spelled). Replaced headers map to the generated prelude."""
    ks = spec.kernel_strings
    replaced = set(ks.get("replace_with_prelude", []))
    shims = ks.get("shims", {})
    headers: dict[str, str] = {}
    todo, seen = [start], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for inc in source.includes((root / path).read_bytes()):
            if inc.system:
                if inc.name in shims:
                    headers[inc.name] = f"{out_dir}/shims/{inc.name}"
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), inc.name))
            if not (root / target).is_file():
                continue
            if target in replaced:
                headers[inc.name] = f"{out_dir}/prelude/{target}"
                continue
            headers[inc.name] = target
            todo.append(target)
    for inc in ks.get("prelude_includes", []):
        if inc in shims:
            headers[inc] = f"{out_dir}/shims/{inc}"
    return dict(sorted(headers.items()))


def build_plan(root: Path, analysis: Analysis, spec: MigrateSpec, only: list[str] | None = None,
               exclude: list[str] | None = None) -> Plan:
    by_id = {k.id: k for k in analysis.kernels}
    missing = [k for k in spec.kernels if k not in by_id]
    if missing:
        raise ApplyError("the tree does not match the rule: kernels not found: " + ", ".join(missing),
                         hint=f"found: {', '.join(sorted(by_id)) or 'none'}; is the tree already "
                              "migrated, or does the rule name other kernels?")
    wanted = [k for k in spec.kernels if (not only or k in only or k.split('::')[-1] in only)
              and not (exclude and (k in exclude or k.split('::')[-1] in exclude))]
    skipped = [Skipped(k, "excluded on the command line") for k in spec.kernels if k not in wanted]
    skipped += [Skipped(k.id, "not listed in the rule's migrate/kernels") for k in analysis.kernels
                if k.id not in spec.kernels]
    sites_by_id = {s.id: s for s in analysis.sites}
    plans, removed = [], 0
    for kid in wanted:
        kernel = by_id[kid]
        sites = [sites_by_id[s] for s in kernel.sites if s in sites_by_id]
        for s in sites:
            if s.in_macro_body:
                raise UnsupportedConstruct(f"launch of {kid} is spelled in a macro body",
                                           where=f"{s.file}:{s.line}",
                                           hint="expand the macro by hand or exclude the kernel with --exclude")
        data = (root / kernel.file).read_bytes()
        decl = next((d for d in scan_bytes(kernel.file, data).kernels
                     if d.name == kernel.name and d.is_definition), None)
        if decl is None:
            raise ApplyError(f"definition of {kid} not found", where=f"{kernel.file}:{kernel.line}")
        variants: dict[tuple, Variant] = {}
        for s in sites:
            if s.kind != "launch":
                continue
            for axes in _variants(s, kernel, spec):
                key = tuple(axes.items())
                variants.setdefault(key, Variant(axes, []))
                if s.id not in variants[key].sites:
                    variants[key].sites.append(s.id)
        removed += kernel.instantiations
        plans.append(KernelPlan(kernel, source.kernel_signature(data, decl.start, decl.end), sites,
                                sorted(variants.values(), key=lambda v: v.name_expression(kid)),
                                _header_closure(root, kernel.file, spec, spec.output_dir)))
    return Plan(spec, sorted(plans, key=lambda p: p.kernel.id), skipped, removed)
