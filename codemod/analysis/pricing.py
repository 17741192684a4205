"""Join build-log prices to an analysis and predict the build with the target's TUs migrated.

Two what-ifs are replayed (docs/impact.md has the model): "device code removed" keeps each
migrated TU's host-compiler time (entry points, dispatch and launch stubs still compile) and drops
its device phases; "TU removed" is the bound if host-side fan-out is collapsed as well.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..model import Analysis


def _glob(tu: str) -> str:
    return f"*/{tu}.o"


def attach_impact(result: Analysis, build_log: Path, nvcc_times: list[Path], jobs: int | None = None) -> None:
    from ..impact.predict import predict_migration

    if not Path(build_log).is_file():
        raise UsageError(f"build log not found: {build_log}")
    migrated = [tu for tu in result.translation_units if tu.instantiations > 0]
    globs = [_glob(tu.file) for tu in migrated]
    removed = predict_migration(str(build_log), [str(p) for p in nvcc_times], globs, None, jobs)
    by_name = {s["name"]: s for s in removed["steps"]}
    scale = {}
    for tu in result.translation_units:
        step = next((s for n, s in by_name.items() if n.endswith(f"/{tu.file}.o")), None)
        if step is None:
            continue
        tu.price = {k: step.get(k) for k in ("name", "elapsed_s", "weighted_s", "host_s", "device_s") if k in step}
        if tu in migrated and step.get("host_s") is not None and step.get("elapsed_s"):
            scale[_glob(tu.file)] = round(step["host_s"] / step["elapsed_s"], 4)
    impact = {
        "build_log": Path(build_log).name,
        "nvcc_time": [Path(p).name for p in nvcc_times],
        "migrated_tus": [tu.file for tu in migrated],
        "priced_tus": sum(1 for tu in result.translation_units if tu.price),
        "measured_wall_s": removed["measured_wall_s"],
        "replayed_wall_s": removed["replayed_wall_s"],
        "cpu_s_before": removed["cpu_s_before"],
        "tu_removed": {"predicted_wall_s": removed["predicted_wall_s"], "cpu_s_after": removed["cpu_s_after"],
                       "critical_after": removed.get("critical", {}).get("after")},
    }
    if scale and len(scale) == len(migrated):
        kept = predict_migration(str(build_log), [str(p) for p in nvcc_times], [], scale, jobs)
        impact["device_removed"] = {"predicted_wall_s": kept["predicted_wall_s"], "cpu_s_after": kept["cpu_s_after"],
                                    "critical_after": kept.get("critical", {}).get("after")}
        impact["predicted_wall_s"] = kept["predicted_wall_s"]
        impact["cpu_s_after"] = kept["cpu_s_after"]
        impact["model"] = "device phases of migrated TUs removed, host phases kept (conservative)"
    else:
        impact["predicted_wall_s"] = removed["predicted_wall_s"]
        impact["cpu_s_after"] = removed["cpu_s_after"]
        impact["model"] = "migrated TUs removed (no nvcc --time data to split host and device phases)"
    unpriced = [tu.file for tu in migrated if not tu.price]
    if unpriced:
        impact["unpriced_tus"] = unpriced
    result.impact = impact
