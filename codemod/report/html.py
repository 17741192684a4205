"""Self-contained HTML pages of analyze, apply, verify and `impact --against` (jinja2 templates under
codemod/templates: analysis/report.html.j2, apply/report.html.j2, verify/report.html.j2,
impact/compare.html.j2, sharing report/page.html.j2). Paths are shown relative to the library
root, never as the machine's absolute paths."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path, PurePosixPath

import jinja2

from ..model import Analysis

# an absolute POSIX path inside a message (clang's, NVRTC's, CMake's)
_ABS_PATH = re.compile(r"(?<![\w.~/-])/(?:[\w.+@~-]+/)*[\w.+@~-]+")


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("codemod", "templates"),
                              autoescape=True, trim_blocks=True, lstrip_blocks=True)


def short_path(path: str | None, root: Path | None) -> str:
    """`path` as the page shows it: relative to `root` when under it (or already relative); a
    header outside it from its last `include/` folder on (`<include>/cuda_fp8.h`); else the last
    two parts (`…/x/y.h`). Never the machine's absolute path."""
    if not path:
        return ""
    if not path.startswith("/"):
        return path
    if root is not None:
        top = os.path.realpath(root)
        for base in dict.fromkeys((top, os.path.abspath(root))):
            if path == base:
                return "."
            if path.startswith(base + "/"):
                return path[len(base) + 1:]
    parts = PurePosixPath(path).parts
    if "include" in parts[:-1]:
        last = len(parts) - 1 - parts[::-1].index("include")
        return "<include>/" + "/".join(parts[last + 1:])
    return "…/" + "/".join(parts[-2:])


def scrub(text: str | None, root: Path | None) -> str:
    """`text` with every absolute path in it shortened by short_path."""
    if not text:
        return text or ""
    return _ABS_PATH.sub(lambda m: short_path(m.group(0), root), text)


def _filters(env: jinja2.Environment, root: Path | None) -> jinja2.Environment:
    env.filters["rel"] = lambda p: short_path(p, root)
    env.filters["scrub"] = lambda t: scrub(t, root)
    return env


def _diagnostic_groups(a: Analysis, root: Path | None) -> list[dict]:
    """Diagnostics grouped by id (errors first, then the largest group), each id's by file."""
    groups: dict[str, dict] = {}
    for d in a.diagnostics:
        g = groups.setdefault(d.id, {"id": d.id, "severity": d.severity, "count": 0, "files": {}})
        if d.severity == "error":
            g["severity"] = "error"
        g["count"] += d.count
        f = g["files"].setdefault(short_path(d.file, root) or "(no file)", [])
        f.append({"line": d.line, "message": scrub(d.message, root), "count": d.count, "severity": d.severity})
    rank = {"error": 0, "warning": 1, "note": 2}
    out = sorted(groups.values(), key=lambda g: (rank.get(g["severity"], 3), -g["count"], g["id"]))
    for g in out:
        g["files"] = sorted(g["files"].items(), key=lambda kv: (-sum(x["count"] for x in kv[1]), kv[0]))
        g["first"] = g["files"][0][1][0]["message"]
    return out


def render_html(a: Analysis, rule_kernels=None, root: Path | None = None) -> str:
    """The analysis page. `rule_kernels`: the kernels the --target rules migrate (default: those
    the build-log prediction moved); `root`: the library folder, to show paths relative to it."""
    impact = a.impact or {}
    marked = set(rule_kernels or impact.get("migrated_kernels") or [])
    migrated_tus = set(impact.get("migrated_tus") or [])
    if not migrated_tus and marked:
        migrated_tus = {tu.file for tu in a.translation_units if marked & set(tu.kernels)}
    priced = [tu for tu in a.translation_units if tu.price and tu.price.get("elapsed_s") is not None]
    # the critical unit: with a build log, the TU whose compile step is longest (it bounds the
    # library's wall); without one, the TU with the most instantiations
    if priced:
        critical = max(priced, key=lambda tu: tu.price["elapsed_s"]).file
        tus = sorted(a.translation_units, key=lambda tu: -(tu.price or {}).get("elapsed_s", -1))
    else:
        critical = max(a.translation_units, key=lambda tu: tu.instantiations).file if a.translation_units else None
        tus = list(a.translation_units)
    max_tu = max([tu.instantiations for tu in a.translation_units] + [1])
    max_s = max([tu.price["elapsed_s"] for tu in priced] + [1e-9])
    env = _filters(_env(), root)
    return env.get_template("analysis/report.html.j2").render(
        a=a, t=a.totals, max_tu=max_tu, max_s=max_s, priced=bool(priced), tus=tus, critical=critical,
        marked=marked, migrated_tus=migrated_tus, diag_groups=_diagnostic_groups(a, root),
        n_marked=sum(1 for k in a.kernels if k.id in marked))


def _line_counts(old: str | None, new: str) -> tuple[int, int]:
    """(lines added, lines removed) from old to new."""
    if old is None:
        return len(new.splitlines()), 0
    added = removed = 0
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def render_apply_html(root: Path, target: str, files: dict, plan, summary: str) -> str:
    """The apply page: what changes per file, the kernels migrated with the instantiations each
    removes from the build, those left static, and the predicted build (with --build-log).
    `files`: path -> (old text or None, new text), as apply.command.compute returns them."""
    rows = []
    for path in sorted(files):
        old, new = files[path]
        added, removed = _line_counts(old, new)
        rows.append({"path": path, "status": "new" if old is None else "modified", "added": added,
                     "removed": removed, "generated": plan is not None and path.startswith(plan.spec.output_dir + "/")})
    kernels = []
    if plan is not None:
        for kp in plan.kernels:
            k = kp.kernel
            kernels.append({"id": k.id, "file": k.file, "line": k.line, "instantiations": k.instantiations,
                            "variants": len(kp.variants), "sites": len(kp.sites), "tus": sorted(k.tus)})
        kernels.sort(key=lambda k: (-k["instantiations"], k["id"]))
    env = _filters(_env(), root)
    return env.get_template("apply/report.html.j2").render(
        root=Path(root).resolve().name, target=Path(target).name if "/" in target else target, files=rows,
        plan=plan, kernels=kernels, summary=scrub(summary, root), bo=getattr(plan, "build_order", None),
        added=sum(r["added"] for r in rows), removed=sum(r["removed"] for r in rows),
        new_files=sum(1 for r in rows if r["status"] == "new"),
        fanout=sum(k["instantiations"] for k in kernels))


def render_verify_html(doc: dict, root: Path) -> str:
    """The verify page from the codemod-verify/1 document (`doc`, `sass` key included when --sass):
    the programs per kernel and arch with their time, the slowest programs, the host compile, the
    failures with their log and the next step."""
    from ..verify.report import hint_for

    programs = doc["programs"]
    archs = doc["archs"]
    rows: dict[tuple, dict] = {}
    for p in programs:
        row = rows.setdefault((p["kernel"], p["config"]), {"kernel": p["kernel"], "config": p["config"],
                                                            "variants": p["variants"], "total": p["variants_total"],
                                                            "by_arch": {}, "seconds": 0.0, "ok": True})
        row["by_arch"][p["arch"]] = p
        row["seconds"] += p["seconds"]
        row["ok"] = row["ok"] and p["ok"]
    failures: dict[tuple, dict] = {}
    for p in programs:
        for f in p["failures"]:
            g = failures.setdefault((p["kernel"], f["reason"], f["log"]), {
                "kernel": p["kernel"], "reason": f["reason"], "log": scrub(f["log"], root), "where": [],
                "variants": [], "hint": hint_for(f["log"])})
            where = p["arch"] + ("" if p["config"] == "default" else f" {p['config']}")
            if where not in g["where"]:
                g["where"].append(where)
            if f["variant"] not in g["variants"]:
                g["variants"].append(f["variant"])
    host = doc["host"]
    env = _filters(_env(), root)
    return env.get_template("verify/report.html.j2").render(
        doc=doc, ok=doc["ok"] and (doc.get("sass") or {}).get("ok", True), archs=archs, rows=list(rows.values()), failures=list(failures.values()), host=host,
        root=Path(root).resolve().name, slowest=sorted(programs, key=lambda p: -p["seconds"])[:15],
        failed=[p for p in programs if not p["ok"]], nvrtc_s=sum(p["seconds"] for p in programs),
        host_s=host["configure_seconds"] + sum(u["seconds"] for u in host["units"]),
        manifests=[Path(m).name for m in doc["manifests"]], sass=doc.get("sass"),
        host_failed=[u for u in host["units"] if not u["ok"]],
        checked=sum(p["variants"] for p in programs if p["config"] == "default" and p["arch"] == archs[0]))


def render_compare_html(doc: dict) -> str:
    """The page of `codemod impact A --against B` (impact.compare's document): both builds' wall
    and CPU, and every common step's time in A and B, the steps that changed most first."""
    span = max([r["a_s"] for r in doc["steps"]] + [r["b_s"] for r in doc["steps"]] + [1e-9])
    env = _filters(_env(), None)
    steps = sorted(doc["steps"], key=lambda r: (-abs(r["delta_s"]), r["name"]))
    return env.get_template("impact/compare.html.j2").render(doc=doc, span=span, steps=steps)
