"""The migration report written beside the diff: what moved, axes and fan-out removed, what stayed."""

from __future__ import annotations

from .generate import ChangeSet
from .plan import Plan


def render_report(plan: Plan, cs: ChangeSet, files: dict) -> str:
    lines = [f"# Migration report: rule `{plan.spec.rule_id}`", "",
             f"{len(plan.kernels)} kernels migrated to NVRTC, {plan.removed_instantiations} static "
             f"instantiations removed from the default build (kept behind `{plan.spec.legacy_option}=ON`); "
             f"{len(files)} files changed.", "", "## Migrated kernels", "",
             "| kernel | sites | variants | static instantiations removed | runtime axes |", "|---|---|---|---|---|"]
    for kp in plan.kernels:
        axes = sorted({f"{a.param}:{a.binding}" for s in kp.sites for a in s.axes})
        lines.append(f"| `{kp.kernel.id}` | {len(kp.sites)} | {len(kp.variants)} | {kp.kernel.instantiations} | "
                     f"{', '.join(axes)} |")
    lines += ["", "## Left static", ""]
    lines += [f"- `{s.what}`: {s.reason}" for s in sorted(plan.skipped, key=lambda s: s.what)] or ["- nothing"]
    lines += ["", "## Translation units outside the analysis", ""]
    if plan.outside_units:
        lines += ["These include a rewritten file but are not among the rule's `analyze.translation_units`. "
                  "A template argument only they use has no spelling in the stubs: its variants keep the "
                  "static kernel (checked at compile time, `type_in_domain` / `fn_in_domain` in the stub "
                  "header) and still cost build time there. Add them to the analysis to migrate those "
                  "variants too.", ""]
        lines += [f"- `{u}`" for u in plan.outside_units]
    else:
        lines += ["- none: every translation unit that includes a rewritten file was analyzed"]
    lines += ["", "## NVRTC-safety changes", ""]
    lines += [f"- {n}" for n in cs.notes] or ["- none"]
    lines += ["", "## Notes", "",
              "- Host-side type-switch fan-out is kept: the launchers stay templates and only the kernel "
              "instantiations move to NVRTC.",
              "- Variants are the analysis' exact joint tuples per site: the manifest lists what the "
              "static build instantiated, no more."]
    return "\n".join(lines) + "\n"
