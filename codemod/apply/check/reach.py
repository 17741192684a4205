"""What the emitted migration reaches outside the rule's analysis: the translation units that include
a rewritten file, and the variants those including a rewritten launch site launch that reach NVRTC
at run time (docs/apply.md, "Arguments outside the migrated domain"). It runs after emit because the
rewritten files are emit's; it reads the plan and never changes it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..base.tree import units_reaching
from ..emit import device_pass, shared_header
from ..emit.emission import Emission
from ..plan.names import Unspellable, site_variants
from ..plan.plan import Plan, Variant


@dataclass(frozen=True)
class Reach:
    # TUs the analysis did not cover that include a rewritten file: arguments only they use are
    # outside the migrated domain and keep the static kernel (the stubs' domain check)
    units: list[str] = field(default_factory=list)
    # kernel id -> variants only those units launch that reach NVRTC (outside_variants)
    variants: dict = field(default_factory=dict)


def reach(root: Path, rule, analysis, emission: Emission, compile_db: Path | None = None, progress=None) -> Reach:
    """The units outside `analysis` that include a file the migration rewrites and, for those that
    include a rewritten launch site, their variants that reach NVRTC (analysed here)."""
    from ...analysis.analyze import analyze

    plan, cs, files = emission.plan, emission.changes, emission.files
    spec = plan.spec
    # a header whose only edits move definitions out of it or trim nvcc's device passes holds no
    # code its includers compile for NVRTC
    not_code = (shared_header.WHY, device_pass.WHY)
    only_those = {e.path for e in cs.edits} - {e.path for e in cs.edits if e.why not in not_code}
    rewritten = {path for path, (old, _) in files.items() if old is not None and path not in only_those}
    if not rewritten:
        return Reach()
    analyzed = {tu.file for tu in analysis.translation_units}
    if progress:
        progress(f"apply: finding the translation units that include {len(rewritten)} rewritten file(s)")
    units = [u for u in units_reaching(root, rewritten, spec.include_dirs, skip=spec.output_dir) if u not in analyzed]
    site_files = {s.file for kp in plan.kernels for s in kp.sites}
    reaching = [u for u in units_reaching(root, site_files, spec.include_dirs, skip=spec.output_dir)
                if u in units] if units else []
    if not reaching:
        return Reach(units)
    # those that include a rewritten launch site: their variants whose arguments the stubs can
    # name reach NVRTC too, so verify must compile them
    if progress:
        progress(f"apply: analysing {len(reaching)} translation unit(s) outside the rule that include a "
                 "rewritten launch site, for variants that reach NVRTC")
    outside = analyze(root, [replace(rule, translation_units=reaching)], compile_db=compile_db, progress=progress)
    return Reach(units, outside_variants(outside, plan, cs.domain))


def outside_variants(analysis, plan: Plan, domain: tuple[set[str], set[str]]) -> dict[str, list[Variant]]:
    """kernel id -> the variants that translation units outside the rule's analysis (`analysis`: of
    the units of Reach.units that include a launch site) launch through the rewritten sites and that
    reach NVRTC at run time: every type and function argument in the stubs' domain (`domain`: the type and function spellings the
    stubs name; nullptr is always in it, value arguments are rendered whatever they are), and not
    already a variant of the plan. Variants with an argument outside the domain keep the static
    kernel (type_in_domain / fn_in_domain) and are not listed; neither are unspellable ones."""
    types, functions = domain
    out: dict[str, list[Variant]] = {}
    by_id = {s.id: s for s in analysis.sites}
    for kp in plan.kernels:
        kinds = {p.name: p.kind for p in kp.kernel.params}
        known = {tuple(v.axes.items()) for v in kp.variants}
        found: dict[tuple, Variant] = {}
        for site in kp.sites:
            outside = by_id.get(site.id)
            if site.kind != "launch" or outside is None:
                continue
            try:
                spelled = site_variants(outside, kp.kernel, plan.spec)
            except Unspellable:
                continue
            for axes in spelled:
                if any(kinds[p] == "type" and v not in types or kinds[p] == "function_pointer" and v != "nullptr"
                       and v not in functions for p, v in axes.items()):
                    continue
                key = tuple(axes.items())
                if key in known:
                    continue
                found.setdefault(key, Variant(dict(axes), []))
                if site.id not in found[key].sites:
                    found[key].sites.append(site.id)
        if found:
            out[kp.kernel.id] = [found[k] for k in sorted(found)]
    return out
