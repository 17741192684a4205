"""The floor of a recorded build: its wall once everything amenable to NVRTC has moved. Every CUDA
step keeps its host phases and loses its device phases (cicc, ptxas, fatbinary: what a migration
takes out of the build at best), except the steps stated to stay (`--keep GLOB=REASON`: cuDNN
frontend graphs, CUTLASS/CuTe kernels), which keep their whole time. One what-if, replayed by
`predict.predict` like every other prediction, so a maintainer sees what the rest is worth."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UsageError
from .predict import Loaded, _candidates, glob_regex


@dataclass
class Floor:
    """The floor's what-if and the steps it treated: `trimmed` lose their device phases, `kept`
    stay as recorded (with the reason), `no_nvcc` are CUDA-less or unpriced steps left alone."""

    what_if: dict
    trimmed: list[dict] = field(default_factory=list)
    kept: list[dict] = field(default_factory=list)
    no_nvcc: int = 0


def parse_keep(items: list[str]) -> list[tuple[str, str]]:
    """`GLOB=REASON` pairs; the reason is what the report says the step stays for."""
    out = []
    for item in items:
        glob, sep, reason = item.partition("=")
        if not sep or not glob.strip() or not reason.strip():
            raise UsageError(f"--keep wants GLOB=REASON, got {item!r}",
                             hint="e.g. --keep 'fused_attn/*.cu=cuDNN frontend graphs'")
        out.append((glob.strip(), reason.strip()))
    return out


def floor_what_if(loaded: Loaded, keep: list[tuple[str, str]]) -> Floor:
    """Scale each CUDA step with nvcc phases to its host share (host / (host + device) of its
    recorded time), except the steps a `keep` glob matches. A keep glob matching no step is an
    error (a typo would lower the floor silently)."""
    rules = [(glob_regex(g), g, reason) for g, reason in keep]
    hits = {g: 0 for g, _ in keep}
    floor = Floor({"remove": [], "scale": {}})
    steps = loaded.steps
    for k, name in enumerate(steps.name):
        inv = loaded.nvcc.get(name)
        names = _candidates(steps.outputs(k), inv)
        match = next(((g, reason) for rx, g, reason in rules if any(map(rx.match, names))), None)
        elapsed = (steps.end_ms[k] - steps.start_ms[k]) / 1000.0
        if match is not None:
            hits[match[0]] += 1
            floor.kept.append({"name": name, "elapsed_s": round(elapsed, 3), "reason": match[1]})
            continue
        if inv is None:
            floor.no_nvcc += 1
            continue
        host, device = inv.host_device_ms()
        if device <= 0 or host + device <= 0:
            continue
        factor = host / (host + device)
        floor.what_if["scale"][name] = factor
        floor.trimmed.append({"name": name, "elapsed_s": round(elapsed, 3), "device_s": round(device / 1000.0, 3),
                              "factor": round(factor, 4)})
    missing = [g for g, n in hits.items() if n == 0]
    if missing:
        raise UsageError(f"--keep matches no step: {', '.join(repr(g) for g in missing)}",
                         hint=f"globs match outputs or nvcc sources, e.g. {steps.name[0] if len(steps) else '(none)'!r}")
    reasons = sorted({s["reason"] for s in floor.kept})
    floor.what_if["description"] = (
        f"floor: the device phases of {len(floor.trimmed)} CUDA step(s) removed"
        + (f", {len(floor.kept)} kept as recorded ({'; '.join(reasons)})" if floor.kept else ""))
    return floor


def floor_document(loaded: Loaded, keep: list[tuple[str, str]], jobs: int | None = None,
                   policy: str | None = None) -> dict:
    """The floor (keeps as recorded), the bound (nothing kept) and what the kept steps are worth:
    `floor_wall_s - bound_wall_s` of wall and their CPU seconds, by reason."""
    from .predict import predict

    floor = floor_what_if(loaded, keep)
    doc = predict(loaded, floor.what_if, jobs=jobs, policy=policy, max_steps=0)
    bound = predict(loaded, floor_what_if(loaded, []).what_if, jobs=jobs, policy=policy, max_steps=0) \
        if keep else doc
    by_reason: dict[str, dict] = {}
    for s in floor.kept:
        r = by_reason.setdefault(s["reason"], {"reason": s["reason"], "steps": 0, "cpu_s": 0.0})
        r["steps"] += 1
        r["cpu_s"] = round(r["cpu_s"] + s["elapsed_s"], 3)
    crit = (doc.get("critical", {}).get("predicted", {}) or {}).get("step") or {}
    return {
        "schema_version": 1,
        "inputs": doc["inputs"],
        "options": {**doc["options"], "keep": [{"glob": g, "reason": r} for g, r in keep]},
        "what_if": floor.what_if["description"],
        "replayed_wall_s": doc["replayed_wall_s"],
        "floor_wall_s": doc["predicted_wall_s"],
        "floor_cpu_s": doc["cpu_s_after"],
        "floor_critical_step": crit.get("name"),
        "bound_wall_s": bound["predicted_wall_s"],
        "bound_cpu_s": bound["cpu_s_after"],
        "kept_worth_wall_s": round(doc["predicted_wall_s"] - bound["predicted_wall_s"], 3),
        "kept": sorted(by_reason.values(), key=lambda r: (-r["cpu_s"], r["reason"])),
        "kept_steps": sorted(floor.kept, key=lambda s: (-s["elapsed_s"], s["name"])),
        "trimmed_steps": len(floor.trimmed),
        "unpriced_steps": floor.no_nvcc,
    }


def render(doc: dict) -> str:
    """The floor in a few lines, for the terminal."""
    out = [f"replayed build: {doc['replayed_wall_s']:.1f} s; floor ({doc['what_if']}): "
           f"{doc['floor_wall_s']:.1f} s wall, {doc['floor_cpu_s']:.1f} CPU-s, critical step "
           f"{doc['floor_critical_step']}"]
    if doc["kept"]:
        out.append(f"with nothing kept: {doc['bound_wall_s']:.1f} s wall, {doc['bound_cpu_s']:.1f} CPU-s: "
                   f"what stays costs {doc['kept_worth_wall_s']:.1f} s of wall")
        for r in doc["kept"]:
            out.append(f"  kept: {r['reason']}: {r['steps']} step(s), {r['cpu_s']:.1f} CPU-s")
        for s in doc["kept_steps"][:10]:
            out.append(f"    {s['elapsed_s']:8.1f} s  {s['name']}")
    return "\n".join(out) + "\n"
