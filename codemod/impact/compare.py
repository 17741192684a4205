"""A/B comparison of two recorded builds (`codemod impact LOG_A --against LOG_B`): per-step ratios,
joined by output path, with nvcc phase ratios when both sides have `--time` data."""

from __future__ import annotations

import math

from .model import r3
from .predict import SCHEMA_VERSION, Loaded


def compare(a: Loaded, b: Loaded) -> dict:
    steps_a = {s.name: s for s in a.steps}
    steps_b = {s.name: s for s in b.steps}
    rows = []
    for name in sorted(set(steps_a) & set(steps_b)):
        sa, sb = steps_a[name], steps_b[name]
        row = {
            "name": name,
            "a_s": r3(sa.elapsed_ms / 1000.0),
            "b_s": r3(sb.elapsed_ms / 1000.0),
            "delta_s": r3((sb.elapsed_ms - sa.elapsed_ms) / 1000.0),
            "ratio": r3(sb.elapsed_ms / sa.elapsed_ms) if sa.elapsed_ms > 0 else None,
            "hash_changed": sa.cmdhash != sb.cmdhash,
        }
        ia, ib = a.nvcc.get(name), b.nvcc.get(name)
        if ia is not None and ib is not None:
            pa, pb = ia.phase_ms(), ib.phase_ms()
            row["phase_ratios"] = {k: r3(pb[k] / pa[k]) for k in pa if pa[k] > 0 and pb[k] > 0 and k != "driver"}
        rows.append(row)
    rows.sort(key=lambda r: (-(r["ratio"] or 0.0), r["name"]))
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    wall_a = max((s.end_ms for s in a.steps), default=0) / 1000.0
    wall_b = max((s.end_ms for s in b.steps), default=0) / 1000.0
    cpu_a = sum(s.elapsed_ms for s in a.steps) / 1000.0
    cpu_b = sum(s.elapsed_ms for s in b.steps) / 1000.0
    common_a = sum(r["a_s"] for r in rows)
    common_b = sum(r["b_s"] for r in rows)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "codemod impact --against",
        "a": {"log": a.inputs["log"], "wall_s": r3(wall_a), "cpu_s": r3(cpu_a), "steps": len(a.steps)},
        "b": {"log": b.inputs["log"], "wall_s": r3(wall_b), "cpu_s": r3(cpu_b), "steps": len(b.steps)},
        "wall_ratio": r3(wall_b / wall_a) if wall_a else None,
        "cpu_ratio": r3(cpu_b / cpu_a) if cpu_a else None,
        "common_cpu_ratio": r3(common_b / common_a) if common_a else None,
        "geomean_ratio": r3(math.exp(sum(math.log(x) for x in ratios) / len(ratios))) if ratios else None,
        "steps": rows,
        "only_in_a": sorted(set(steps_a) - set(steps_b)),
        "only_in_b": sorted(set(steps_b) - set(steps_a)),
        "warnings": list(a.warnings) + list(b.warnings),
    }
