"""Terminal report of an analysis: largest fan-out first; per TU, per kernel, per axis."""

from __future__ import annotations

from ..model import Analysis


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return [fmt(header), "  ".join("-" * w for w in widths), *map(fmt, rows)]


def render(a: Analysis, top: int = 25, verbose: bool = False) -> str:
    out = []
    t = a.totals
    out.append(f"codemod analyze {a.root}" + (f" --target {a.target}" if a.target else ""))
    out.append(f"{t['translation_units']} TUs, {t['entry_points']} entry points, {t['kernels']} kernels "
               f"({t['kernel_templates']} templates), {t['launch_sites']} launch sites + {t['use_sites']} other host uses, "
               f"{t['instantiations']} instantiations")
    out.append("")
    out.append("Translation units (largest fan-out first)")
    rows = [[tu.file, len(tu.entry_points), len(tu.kernels), tu.instantiations, tu.errors] for tu in a.translation_units[:top]]
    out += _table(rows, ["TU", "entry points", "kernels", "instantiations", "parse errors"])
    if a.impact:
        out.append("")
        imp = a.impact
        if imp.get("policy_source") == "-p/--policy":
            out.append(f"Replayed with ninja policy {imp['policy']} (not the recorded build's): the unchanged "
                       f"build would take {imp.get('replayed_wall_s')} s (measured {imp.get('measured_wall_s')} s)")
        out.append(f"Build impact: measured {imp.get('measured_wall_s')} s, predicted after migration "
                   f"{imp.get('predicted_wall_s')} s (CPU {imp.get('cpu_s_before')} -> {imp.get('cpu_s_after')} s), "
                   f"{len(imp.get('migrated_tus', []))} TUs migrated")
        if imp.get("unpriced_tus"):
            out.append(f"  not priced (no step of the build log builds them): {', '.join(imp['unpriced_tus'])}")
        for what in ("instantiation_share", "device_removed", "tu_removed"):
            p = imp.get(what)
            if p:
                out.append(f"  {what:20s} wall {p['predicted_wall_s']} s, CPU {p['cpu_s_after']} s, critical step "
                           f"{p.get('critical_after') or '?'}")
    out.append("")
    out.append("Kernels (largest fan-out first)")
    rows = []
    for k in a.kernels[:top]:
        axes = {}
        for s in a.sites:
            if s.kernel == k.id:
                for ax in s.axes:
                    axes.setdefault(ax.param, set()).add(ax.binding)
        ax_text = ", ".join(f"{p}:{'/'.join(sorted(b))}" for p, b in axes.items())
        rows.append([k.id, k.instantiations, len(k.sites), "yes" if k.discoverable else "no", ax_text])
    out += _table(rows, ["kernel", "inst.", "sites", "runtime", "axes (binding)"])
    if a.unreached:
        out.append("")
        out.append(f"Declared kernels not reached ({len(a.unreached)})")
        for u in a.unreached:
            out.append(f"  {u.kernel} ({u.file}:{u.line}{'' if u.is_template else ', not a template'}): "
                       f"{u.reason}: {u.detail}")
    if verbose:
        out.append("")
        out.append("Launch sites")
        for s in a.sites:
            where = f"{s.file}:{s.line}"
            out.append(f"  {where}  {s.api}  {s.kernel or '?'}" + (f" via {s.via}" if s.via else "")
                       + f"  [{s.instantiations} inst., {s.expansions} expansions]" + (f"  ({s.note})" if s.note else ""))
            if s.generic_lambda:
                g = s.generic_lambda
                out.append(f"      through generic lambda {g['name']} ({g['file']}:{g['line']}), parameter {g['param']}; "
                           "passed at " + ", ".join(f"{p['id']} <{', '.join(p['targs'])}>" for p in g["passing_sites"]))
            for ax in s.axes:
                dom = ", ".join(ax.domain[:6]) + (" …" if len(ax.domain) > 6 else "")
                out.append(f"      {ax.param:<28} {ax.binding:<15} {ax.reason}  {{{dom}}}")
    errs = [d for d in a.diagnostics if d.severity == "error"]
    warns = [d for d in a.diagnostics if d.severity == "warning"]
    if a.diagnostics:
        out.append("")
        out.append("Diagnostics")
        for d in (errs + warns)[:40]:
            loc = f"{d.file}:{d.line}:{d.col}" if d.file else "-"
            cnt = f" (x{d.count})" if d.count > 1 else ""
            out.append(f"  {d.severity} {d.id} {loc}: {d.message}{cnt}")
        if len(errs) + len(warns) > 40:
            out.append(f"  ... {len(errs) + len(warns) - 40} more in the JSON report")
    out.append("")
    st = a.stats
    out.append(f"{t['kernels']} kernels, {t['runtime_discoverable_kernels']} with every axis runtime-discoverable; "
               f"{t['errors']} errors, {t['warnings']} warnings; {st.get('parsed', 0)} TUs parsed, "
               f"{st.get('cached', 0)} from cache, {st.get('seconds', 0)} s")
    return "\n".join(out)
