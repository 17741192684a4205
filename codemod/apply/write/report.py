"""The migration report written beside the diff: what moved, axes and fan-out removed, what stayed."""

from __future__ import annotations

from ..base.changeset import ChangeSet
from .migration import Migration


def render_report(migration: Migration, cs: ChangeSet, files: dict) -> str:
    plan = migration.plan
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
    if migration.outside_units:
        lines += ["These include a rewritten file but are not among the rule's `analyze.translation_units`. "
                  "A template argument only they use has no spelling in the stubs: its variants keep the "
                  "static kernel (checked at compile time, `type_in_domain` / `fn_in_domain` in the stub "
                  "header) and still cost build time there. Add them to the analysis to migrate those "
                  "variants too.", ""]
        lines += [f"- `{u}`" for u in migration.outside_units]
    else:
        lines += ["- none: every translation unit that includes a rewritten file was analyzed"]
    if plan.spec.raw.get("launcher_values"):
        lines += ["", "## Runtime flags", "",
                  "Switches of `migrate.launcher_values` whose constant the arms use only as a migrated kernel's "
                  "template argument are removed: the kernel's factory takes the value at run time (one "
                  "instance per remaining template arguments, a variant per value). A switch whose constant "
                  "has another use stays, as does a parameter some launch binds otherwise.", ""]
        lines += [f"- {n}" for n in cs.launcher_values] or ["- none"]
    lines += ["", "## NVRTC-safety changes", ""]
    lines += [f"- {n}" for n in cs.notes] or ["- none"]
    if migration.prediction:
        from ...analysis.pricing import prediction_line

        lines += ["", "## Predicted build", "",
                  prediction_line(migration.prediction) + ". `codemod analyze --build-log` "
                  "prices the same what-if, and `codemod impact LOG --what-if` replays it from the `.what_if.json` "
                  "written beside the diff."]
    if migration.build_order is not None:
        lines += ["", "## Build order", ""] + build_order_lines(migration.build_order, plan.spec.cmake["file"],
                                                                  migration.outside_units)
    lines += ["", "## Notes", "",
              "- Host-side type-switch fan-out is kept: the launchers stay templates and only the kernel "
              "instantiations move to NVRTC.",
              "- Variants are the analysis' exact joint tuples per site: the manifest lists what the "
              "static build instantiated, no more."]
    return "\n".join(lines) + "\n"


def build_order_lines(bo, cmake_file: str, outside=()) -> list[str]:
    """`apply --build-log`: the predicted walls with and without the reorder, the listed TUs, and
    why the edit was or was not made. `outside`: TUs outside the analysis that include rewritten
    code (their measured time is kept: an upper bound)."""
    import posixpath

    folder = posixpath.dirname(cmake_file)
    outside = set(outside)

    def migrated(t) -> str:
        if getattr(t, "unfinished", False):
            return ("yes; " if t.migrated else "") + "unfinished in the log: nvcc --time's phases so far, a lower bound"
        if t.migrated:
            return "yes"
        return "outside the analysis (measured time kept)" if posixpath.join(folder, t.path) in outside else ""

    if bo.without_s is None:
        return [f"No build-order edit: {bo.reason}."]
    inputs = " + ".join([f"`{bo.log}`"] + [f"`{n}`" for n in bo.nvcc_time])
    lines = [f"Predicted from {inputs}: ninja policy `{bo.policy}` ({bo.policy_source}), -j{bo.jobs} "
             f"({bo.jobs_source}); the recorded build took {bo.measured_wall_s} s and replays in "
             f"{bo.replayed_wall_s} s. Each TU's compile time after the migration: migrated TUs keep their "
             "device phases scaled by the instantiation share left static, host phases kept "
             "(`instantiation_share`, the what-if of the predicted build above), the others their measured time.", ""]
    if getattr(bo, "migrated_log", ""):
        lines[0] = lines[0].replace(lines[0][lines[0].index("Each TU's compile time"):],
                                    f"The log compiles `{bo.migrated_log}`, this migration's stub source: it is a build "
                                    "of the migrated tree, so every TU keeps its measured time (the migration is "
                                    "not priced twice).")
    if bo.with_s is not None:
        lines += ["| order | predicted wall s | critical step |", "|---|---:|---|",
                  f"| current source lists | {bo.without_s} | `{bo.critical_without}` |",
                  f"| listed TUs first | {bo.with_s} | `{bo.critical_with}` |", ""]
    else:
        lines += [f"Predicted wall in the current source order: {bo.without_s} s (critical step "
                  f"`{bo.critical_without}`).", ""]
    if bo.emitted:
        lines += [f"**Edit made** in `{cmake_file}` before `add_library` (line {bo.at_line}): the TUs below "
                  f"move to the front of `{bo.variable}`, longest first (predicted {bo.gain_pct}% shorter).", ""]
        if bo.reason:
            lines += [f"Listed although the replay cannot price them: {bo.reason}.", ""]
    else:
        lines += [f"**No build-order edit**: {bo.reason}.", ""]
    if bo.listed:
        lines += ["| # | source | predicted s | measured s | migrated |", "|---:|---|---:|---:|---|"]
        lines += [f"| {i} | `{t.path}` | {t.seconds} | {t.measured_s} | {migrated(t)} |"
                  for i, t in enumerate(bo.listed, 1)]
    if bo.left_out:
        lines += ["", "Left out of the list:", ""] + [f"- {d}" for d in bo.left_out]
    return lines
