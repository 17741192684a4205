"""Join build-log prices to an analysis and predict the build with the target's kernels migrated.

A TU is "migrated" when it instantiates a kernel in a rule's `migrate.kernels` (without such a
list: every TU that instantiates any kernel of the target). Three what-ifs are replayed
(docs/impact.md has the replay model):

- `instantiation_share`: the TU keeps its host phases and the share of its device phases that
  belongs to the kernels left static, weighted by instantiation count (it also compiles the
  kernels the rule does not move). Instantiations of kernels whose body is one
  `#if __CUDA_ARCH__ >= N` block with N above every arch the TU's nvcc rows compiled for weigh 0
  (they compile to nothing; `Kernel.body_arch_min`); other weights are 1;
- `device_removed`: every device phase of a migrated TU goes (the optimistic bound);
- `tu_removed`: the TU disappears (the bound if host-side fan-out is collapsed as well).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UsageError
from ..model import Analysis


def _glob(tu: str) -> str:
    return f"*/{tu}.o"


def _migrated_share(tu, migrated_kernels: set[str] | None, empty: set[str] = frozenset()) -> float:
    """The migrated kernels' share of the TU's instantiations; those of `empty` kernels (bodies
    that compile to nothing for the TU's archs) weigh 0."""
    if not tu.instantiations:
        return 0.0
    if migrated_kernels is None:
        return 1.0
    total = sum(n for k, n in tu.kernels.items() if k not in empty)
    if not total:
        return 0.0
    return sum(n for k, n in tu.kernels.items() if k in migrated_kernels and k not in empty) / total


_ARCH = re.compile(r"^(?:compute|sm)_(\d+)")


def _archs(inv) -> set[int] | None:
    """__CUDA_ARCH__ values one nvcc invocation compiled device code for (compute_90 -> 900), from
    its cicc rows; None without them."""
    out = set()
    for row in inv.rows if inv is not None else []:
        m = _ARCH.match(row.arch or "") if row.kind == "cicc" else None
        if m:
            out.add(int(m.group(1)) * 10)
    return out or None


def _empty_kernels(result: Analysis, archs: set[int] | None) -> set[str]:
    """Kernels whose body is one `#if __CUDA_ARCH__ >= N` block with N above every arch built."""
    if not archs:
        return set()
    return {k.id for k in result.kernels if k.body_arch_min is not None and k.body_arch_min > max(archs)}


def _step_names(names, tus: list[str]) -> dict[str, str]:
    """TU -> the first step of the log whose name ends in `/<tu>.o` (the TUs the log builds)."""
    wanted = {f"/{tu}.o": tu for tu in tus}
    out: dict[str, str] = {}
    for name in names:
        i = name.find("/")
        while i >= 0:
            tu = wanted.get(name[i:])
            if tu is not None:
                out.setdefault(tu, name)
            i = name.find("/", i + 1)
    return out


def _prediction(doc: dict) -> dict:
    step = doc.get("critical", {}).get("predicted", {}).get("step") or {}
    return {"predicted_wall_s": doc["predicted_wall_s"], "cpu_s_after": doc["cpu_s_after"],
            "critical_after": step.get("name")}


def attach_impact(result: Analysis, build_log: Path, nvcc_times: list[Path],
                  migrated_kernels: set[str] | None = None, jobs: int | None = None,
                  policy: str | None = None, loaded=None) -> dict[str, dict[str, float]]:
    """Price each TU from the build log (and nvcc --time phases) and predict the build with the TUs
    that instantiate `migrated_kernels` migrated. `policy`: ninja's scheduling policy for the replay
    (default: the one the log's version implies; `master` starts the longest work first). `loaded`:
    the log already loaded (impact.predict.load). Returns each model's duration factors of the
    migrated steps (`--scale` globs: `device_removed`, `instantiation_share`; empty without nvcc data)."""
    from ..impact.predict import load
    from ..impact.predict import predict as predict_what_if

    if not Path(build_log).is_file():
        raise UsageError(f"build log not found: {build_log}")
    # A TU is migrated when it instantiates a migrated kernel; a migrated TU the log does not build
    # (added since, or another configuration) is listed as unpriced; a log that builds none of them
    # belongs to another library.
    migrated = [tu for tu in result.translation_units if _migrated_share(tu, migrated_kernels) > 0]
    if loaded is None:
        loaded = load(str(build_log), [str(p) for p in nvcc_times])   # parsed once for every what-if
    step_of = _step_names(loaded.steps.name, [tu.file for tu in result.translation_units])
    # Instantiation shares without the kernels that compile to nothing for the TU's archs.
    empty_by_tu = {tu.file: _empty_kernels(result, _archs(loaded.nvcc.get(step_of.get(tu.file)))) & set(tu.kernels)
                   for tu in result.translation_units}
    share = {tu.file: _migrated_share(tu, migrated_kernels, empty_by_tu[tu.file]) for tu in result.translation_units}

    def predict(remove: list[str], scale: dict[str, float] | None) -> dict:
        return predict_what_if(loaded, {"remove": remove, "scale": scale}, jobs=jobs, policy=policy)

    in_log = [tu for tu in migrated if tu.file in step_of]
    if migrated and not in_log:
        raise UsageError(f"the build log builds none of the {len(migrated)} migrated TUs (e.g. "
                         f"{migrated[0].file}.o): is it a log of this library?", where=str(build_log))
    removed = predict([_glob(tu.file) for tu in in_log], None)
    by_name = {s["name"]: s for s in removed["steps"]}
    kept_scale, share_scale = {}, {}
    for tu in result.translation_units:
        step = by_name.get(step_of.get(tu.file))
        if step is None:
            continue
        tu.price = {k: step.get(k) for k in ("name", "elapsed_s", "weighted_s", "host_s", "device_s") if k in step}
        host, device, elapsed = step.get("host_s"), step.get("device_s"), step.get("elapsed_s")
        if tu in migrated and host is not None and device is not None and elapsed and host + device > 0:
            # Phase sums and the step's elapsed time differ (contention); scale the elapsed time.
            phases = host + device
            kept_scale[_glob(tu.file)] = round(host / phases, 4)
            share_scale[_glob(tu.file)] = round((host + device * (1 - share[tu.file])) / phases, 4)
            tu.price["migrated_share"] = round(share[tu.file], 4)
            if empty_by_tu[tu.file]:
                # instantiations of kernels that compile to nothing for this build's archs
                tu.price["empty_instantiations"] = sum(tu.kernels[k] for k in empty_by_tu[tu.file])
            tu.price["predicted_elapsed_s"] = {
                "instantiation_share": round(elapsed * share_scale[_glob(tu.file)], 1),
                "device_removed": round(elapsed * kept_scale[_glob(tu.file)], 1)}
    impact = {
        "build_log": Path(build_log).name,
        "nvcc_time": [Path(p).name for p in nvcc_times],
        "migrated_kernels": sorted(migrated_kernels) if migrated_kernels is not None else None,
        "migrated_tus": [tu.file for tu in migrated],
        "priced_tus": sum(1 for tu in result.translation_units if tu.price),
        "measured_wall_s": removed["measured_wall_s"],
        "replayed_wall_s": removed["replayed_wall_s"],
        "cpu_s_before": removed["cpu_s_before"],
        "policy": removed["options"]["policy"],
        "policy_source": removed["options"]["policy_source"],
        "tu_removed": _prediction(removed),
    }
    n_kernels = len(migrated_kernels) if migrated_kernels is not None else "every"
    if in_log and len(kept_scale) == len(in_log):
        impact["device_removed"] = _prediction(predict([], kept_scale))
        headline = predict([], share_scale)
        impact["instantiation_share"] = _prediction(headline)
        impact["predicted_wall_s"] = impact["instantiation_share"]["predicted_wall_s"]
        impact["cpu_s_after"] = impact["instantiation_share"]["cpu_s_after"]
        impact["model"] = ("device phases of migrated TUs scaled by the instantiation share left static, host "
                           "phases kept; device_removed is the optimistic bound")
        impact["what_if"] = {"model": "instantiation_share", "remove": [], "scale": share_scale,
                             "description": f"what-if: instantiation_share of {n_kernels} migrated kernel(s) in "
                                            f"{len(share_scale)} TU(s)"}
    else:
        headline = removed
        impact["predicted_wall_s"] = removed["predicted_wall_s"]
        impact["cpu_s_after"] = removed["cpu_s_after"]
        impact["model"] = "migrated TUs removed (no nvcc --time data to split host and device phases)"
        impact["what_if"] = {"model": "tu_removed", "remove": [_glob(tu.file) for tu in in_log], "scale": {},
                             "description": f"what-if: tu_removed, the {len(in_log)} TU(s) instantiating "
                                            f"{n_kernels} migrated kernel(s) removed (no nvcc --time data)"}
    impact["jobs"], impact["jobs_source"] = headline["options"]["jobs"], headline["options"]["jobs_source"]
    unpriced = [tu.file for tu in migrated if tu not in in_log or not tu.price]
    if unpriced:
        impact["unpriced_tus"] = unpriced
    result.impact = impact
    complete = bool(in_log) and len(kept_scale) == len(in_log)
    return {"device_removed": kept_scale if complete else {}, "instantiation_share": share_scale if complete else {}}


def prediction_line(impact: dict) -> str:
    """The predicted wall of an analysis' impact, as every command prints it (impact.predict)."""
    from ..impact.predict import prediction_line as line

    return line(impact["predicted_wall_s"], impact["what_if"]["description"], impact["jobs"], impact["jobs_source"],
                impact["policy"])
