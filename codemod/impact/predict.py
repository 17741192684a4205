"""The impact pipeline: load logs -> price every step -> replay as recorded -> replay with the
what-if applied -> one JSON document (schema in docs/impact.md). `predict_migration` is the entry
point other stages (codemod analyze) call.
"""

from __future__ import annotations

import fnmatch
import gc
import heapq
import re
from contextlib import contextmanager
from itertools import compress, repeat
from operator import attrgetter, itemgetter, mul, not_, sub
from dataclasses import dataclass, field

from ..errors import UsageError
from . import build_ninja, ninja_log, nvcc_time
from .graph import Graph, from_log, from_manifest, topo_order
from .model import (bounds, critical_chain, critical_step, profile, r3, real_nodes, summarize, tail,
                    weighted_times)
from .nvcc_time import DEVICE_KINDS, HOST_KINDS, Invocation
from .replay import POLICY_FOR_LOG_VERSION, Contention, Schedule, concurrency_steps, recorded_work, replay

SCHEMA_VERSION = 1
_OUTPUTS, _FIRST, _START, _END = attrgetter("outputs"), itemgetter(0), attrgetter("start_ms"), attrgetter("end_ms")


def _MANY(outputs: list) -> bool:
    return len(outputs) > 1


@dataclass
class Loaded:
    log: ninja_log.NinjaLog
    build: ninja_log.Build
    steps: list[ninja_log.Step]  # cycles laid end to end
    cycle_starts: list[int]
    nvcc: dict[str, Invocation] = field(default_factory=dict)  # step name -> its nvcc invocation
    nvcc_unmatched: list[Invocation] = field(default_factory=list)
    manifest: build_ninja.Manifest | None = None
    inputs: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@contextmanager
def gc_paused():
    """NOTE: the pipeline allocates ~10 objects per step, none in reference cycles; on a 100k-step
    log the cyclic collector would re-scan them dozens of times (about half the run time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load(log_path: str, nvcc_time_paths: list[str] | None = None, build_ninja_path: str | None = None,
         build_index: int = -1) -> Loaded:
    with gc_paused():
        return _load(log_path, nvcc_time_paths, build_ninja_path, build_index)


def _load(log_path: str, nvcc_time_paths: list[str] | None, build_ninja_path: str | None,
          build_index: int) -> Loaded:
    log = ninja_log.parse_path(log_path)
    build = log.build(build_index)
    steps, cycle_starts, offset = [], [], 0
    for k, cyc in enumerate(build.cycles):
        if k:
            cycle_starts.append(offset)
        if not offset:
            steps += cyc.steps()
        else:
            steps += [ninja_log.Step(s.start_ms + offset, s.end_ms + offset, s.cmdhash, s.outputs, s.lineno)
                      for s in cyc.steps()]
        offset += cyc.wall_ms
    loaded = Loaded(log, build, steps, cycle_starts, warnings=list(log.warnings))
    invocations: list[Invocation] = []
    for path in nvcc_time_paths or []:
        invs, warns = nvcc_time.parse_path(path)
        invocations += invs
        loaded.warnings += warns
    loaded.nvcc, loaded.nvcc_unmatched = match_nvcc(steps, invocations)
    if build_ninja_path:
        loaded.manifest = build_ninja.parse_path(build_ninja_path, build_ninja_path)
    loaded.inputs = {
        "log": log_path,
        "log_version": log.version,
        "builds_in_log": len(log.builds),
        "build_index": build.index,
        "cycles": len(build.cycles),
        "recompacted_lines": len(log.history_lines),
        "nvcc_time": list(nvcc_time_paths or []),
        "build_ninja": build_ninja_path,
    }
    return loaded


def match_nvcc(steps: list[ninja_log.Step], invocations: list[Invocation]) -> tuple[dict[str, Invocation], list[Invocation]]:
    """Join nvcc invocations to steps by output path (exact, else one a path-suffix of the other)."""
    if not invocations:
        return {}, []
    by_output: dict[str, ninja_log.Step] = {}
    for s in steps:
        for o in s.outputs:
            by_output[o] = s
    matched: dict[str, Invocation] = {}
    unmatched: list[Invocation] = []
    for inv in invocations:
        step = by_output.get(inv.output) if inv.output else None
        if step is None and inv.output:
            tail_ = "/" + inv.output.lstrip("./")
            step = next((s for o, s in by_output.items() if o.endswith(tail_) or inv.output.endswith("/" + o)), None)
        if step is None:
            unmatched.append(inv)
            continue
        prev = matched.get(step.name)
        if prev is None or (inv.complete and not prev.complete) or inv.complete == prev.complete:
            matched[step.name] = inv
    return matched, unmatched


def parse_scale(items: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items:
        glob, sep, factor = item.rpartition("=")
        try:
            value = float(factor)
        except ValueError:
            value = -1.0
        if not sep or not glob or value < 0:
            raise UsageError(f"--scale expects GLOB=FACTOR with FACTOR >= 0, got {item!r}",
                             hint="e.g. --scale '*/cast/*=0.5'")
        out[glob] = value
    return out


def _candidates(step: ninja_log.Step, inv: Invocation | None) -> list[str]:
    out = list(step.outputs)
    out += [o[: -len(sfx)] for o in step.outputs for sfx in (".o", ".obj") if o.endswith(sfx)]
    if inv is not None and inv.source:
        out.append(inv.source)
    return out


def glob_regex(glob: str) -> re.Pattern:
    # A relative glob may start at any directory: 'activation/*.cu' matches '.../activation/gelu.cu'.
    return re.compile(f"(?:{fnmatch.translate(glob)})|(?:{fnmatch.translate('*/' + glob)})")


def glob_matches(glob: str, names: list[str]) -> bool:
    rx = glob_regex(glob)
    return any(rx.match(n) for n in names)


def _literal(glob: str) -> str:
    """The longest literal run of `glob`: every name it matches contains it ('' if unsure)."""
    if "[" in glob:
        return ""
    return max(re.split(r"[*?]", glob), key=len)


def factors(loaded: Loaded, remove: list[str], scale: dict[str, float]) -> dict[str, float]:
    """Step name -> duration factor (0 = removed). A glob that matches nothing is an error.
    NOTE: a substring test on each glob's literal part rules most steps out before any regex runs."""
    steps = loaded.steps
    nvcc = loaded.nvcc
    hay = list(map(_FIRST, map(_OUTPUTS, steps)))  # every candidate name of a step, one per line
    if nvcc or any(map(_MANY, map(_OUTPUTS, steps))):  # each candidate is a substring of its hay
        hay = []
        for s in steps:
            inv = nvcc.get(s.outputs[0]) if nvcc else None
            text = s.outputs[0] if len(s.outputs) == 1 else "\n".join(s.outputs)
            hay.append(text + "\n" + inv.source if inv is not None and inv.source else text)
    rules = [(g, factor) for g, factor in scale.items()] + [(g, 0.0) for g in remove]
    hits = {g: 0 for g in list(remove) + list(scale)}
    matched: list[set[int]] = []
    for g, _ in rules:
        rx, lit = glob_regex(g), _literal(g)
        found = set()
        for k in (range(len(steps)) if not lit else compress(range(len(hay)), map(str.__contains__, hay, repeat(lit)))):
            s = steps[k]
            if any(rx.match(n) for n in _candidates(s, nvcc.get(s.name))):
                found.add(k)
        matched.append(found)
        hits[g] += len(found)
    out: dict[str, float] = {}
    for k in sorted(set().union(*matched)) if matched else []:
        f = 1.0
        for (g, factor), found in zip(rules, matched):
            if k in found:
                f = f * factor if factor else 0.0
        if f != 1.0:
            out[steps[k].name] = f
    missing = [g for g, n in hits.items() if n == 0]
    if missing:
        example = steps[0].name if steps else "(none)"
        raise UsageError(f"no step matches {', '.join(repr(g) for g in missing)}",
                         hint=f"globs match outputs or nvcc sources, e.g. {example!r}")
    return out


def build_graph(loaded: Loaded) -> Graph:
    if loaded.manifest is not None:
        return from_manifest(loaded.manifest, loaded.steps)
    return from_log(loaded.steps, loaded.cycle_starts)


def recorded_schedule(graph: Graph, jobs: int) -> Schedule:
    steps = graph.step
    m = len(steps)
    while m and steps[m - 1] is None:  # graphs from the log: the steps come first, then phony nodes
        m -= 1
    head = steps[:m]
    if all(head):
        start = list(map(float, map(_START, head))) + [0.0] * (len(steps) - m)
        end = list(map(float, map(_END, head))) + [0.0] * (len(steps) - m)
    else:
        start = [float(st.start_ms) if st is not None else 0.0 for st in steps]
        end = [float(st.end_ms) if st is not None else 0.0 for st in steps]
    if m < len(steps) or not all(head):
        deps = graph.deps
        topo = topo_order(graph)
        for i in compress(topo, map(not_, map(steps.__getitem__, topo))):  # the unlogged nodes
            end[i] = start[i] = max([end[d] for d in deps[i]], default=0.0)
    return Schedule(start, end, jobs)


STEPS_LISTED = 1000  # rows of steps[] by default (the longest steps); --all-steps lists every one


def analyse(loaded: Loaded, remove: list[str] | None = None, scale: dict[str, float] | None = None,
            jobs: int | None = None, policy: str | None = None, cores: int | None = None,
            alpha: float = 0.0, max_steps: int | None = STEPS_LISTED) -> dict:
    """The JSON document. `max_steps`: rows of steps[] (the longest steps, None = all); a longer
    build adds `steps_limited` with the totals (docs/impact.md)."""
    with gc_paused():
        return _analyse(loaded, remove, scale, jobs, policy, cores, alpha, max_steps)


def _analyse(loaded: Loaded, remove: list[str] | None, scale: dict[str, float] | None, jobs: int | None,
             policy: str | None, cores: int | None, alpha: float, max_steps: int | None) -> dict:
    remove, scale = list(remove or []), dict(scale or {})
    graph = build_graph(loaded)
    node_step = graph.step
    step_idx = graph.step_ids()
    measured = recorded_schedule(graph, jobs or 0)
    # NOTE: phony nodes have zero length, so the recorded schedule's concurrency is the steps'
    conc_measured = concurrency_steps(measured.start, measured.end)
    peak = max(conc_measured[1], default=1)
    if jobs is None:
        jobs, jobs_source = max(1, peak), "peak concurrency of the recorded build"
    else:
        if jobs < 0:
            raise UsageError(f"-j must be >= 0, got {jobs}")
        jobs_source = "-j"
    measured.jobs = jobs
    policy_source = "-p/--policy" if policy else f"log v{loaded.log.version}"
    policy = policy or POLICY_FOR_LOG_VERSION.get(loaded.log.version, "1.12")
    contention = Contention(cores, alpha)

    work = [0.0] * len(node_step)
    rec = recorded_work(list(map(measured.start.__getitem__, step_idx)), list(map(measured.end.__getitem__, step_idx)),
                        contention)
    if step_idx and step_idx[-1] == len(step_idx) - 1:  # the steps come first (graph from the log)
        work[: len(rec)] = rec
    else:
        for i, w in zip(step_idx, rec):
            work[i] = w
    factor_by_name = factors(loaded, remove, scale)
    work_after = list(work)
    if factor_by_name:
        step_names = map(_FIRST, map(_OUTPUTS, map(node_step.__getitem__, step_idx)))
        for i, f in zip(step_idx, map(factor_by_name.get, step_names)):
            if f is not None:
                work_after[i] = work[i] * f

    replayed = replay(graph, work, jobs, policy, contention)
    predicted = replay(graph, work_after, jobs, policy, contention)
    schedules = {"measured": measured, "replayed": replayed, "predicted": predicted}
    conc = {"measured": conc_measured, "replayed": concurrency_steps(replayed.start, replayed.end),
            "predicted": concurrency_steps(predicted.start, predicted.end)}

    real = {name: real_nodes(graph, s) for name, s in schedules.items()}
    sums = {name: summarize(graph, s, real[name]) for name, s in schedules.items()}
    st_start = list(map(_START, loaded.steps))
    st_end = list(map(_END, loaded.steps))
    st_factor = list(map(factor_by_name.get, map(_FIRST, map(_OUTPUTS, loaded.steps)), repeat(1.0)))
    sums["measured"].wall_s = max(st_end, default=0) / 1000.0
    cpu_before = sum(map(sub, st_end, st_start)) / 1000.0
    cpu_after = sum(map(mul, map(sub, st_end, st_start), st_factor)) / 1000.0
    measured_wall = sums["measured"].wall_s
    replayed_wall = replayed.wall_ms / 1000.0
    predicted_wall = predicted.wall_ms / 1000.0
    chains = {k: critical_chain(graph, s, real=real[k]) for k, s in schedules.items()}

    # steps[] order: longest first, then by name (elapsed_s is r3(elapsed_ms / 1000): same order)
    def row_key(i: int) -> tuple:
        st = node_step[i]
        return (st.start_ms - st.end_ms, st.outputs[0])

    listed = step_idx
    if max_steps is not None and len(step_idx) > max_steps:
        # NOTE: only steps at least as long as the max_steps-th longest can be listed; sort those
        elapsed = [graph.duration[i] for i in step_idx]
        cut = heapq.nlargest(max_steps, elapsed)[-1] if max_steps > 0 else float("inf")
        listed = [i for i, e in zip(step_idx, elapsed) if e >= cut]
    listed = sorted(listed, key=row_key)
    if max_steps is not None:
        listed = listed[:max_steps]
    weighted = weighted_times(measured, conc_measured, listed)
    rows = []
    for i, w in zip(listed, weighted):
        step = node_step[i]
        f = factor_by_name.get(step.name, 1.0)
        row = {
            "name": step.name,
            "start_s": r3(step.start_ms / 1000.0),
            "end_s": r3(step.end_ms / 1000.0),
            "elapsed_s": r3(step.elapsed_ms / 1000.0),
            "weighted_s": r3(w / 1000.0),
            "action": "remove" if f == 0 else ("scale" if f != 1.0 else "keep"),
            "factor": f,
            "replayed": {"start_s": r3(replayed.start[i] / 1000.0), "end_s": r3(replayed.end[i] / 1000.0)},
            "predicted": {"start_s": r3(predicted.start[i] / 1000.0), "end_s": r3(predicted.end[i] / 1000.0),
                          "elapsed_s": r3((predicted.end[i] - predicted.start[i]) / 1000.0)},
        }
        if len(step.outputs) > 1:
            row["outputs"] = list(step.outputs)
        row.update(nvcc_fields(loaded.nvcc.get(step.name)))
        rows.append(row)

    # nvcc totals over every step, in steps[] order, whether listed or not
    cuda = []
    if loaded.nvcc:
        for i in sorted((i for i in step_idx if node_step[i].name in loaded.nvcc), key=row_key):
            name = node_step[i].name
            cuda.append({"name": name} | nvcc_fields(loaded.nvcc[name]))
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": "codemod impact",
        "inputs": loaded.inputs | {"graph_source": graph.source},
        "options": {
            "jobs": jobs, "jobs_source": jobs_source, "policy": policy, "policy_source": policy_source,
            "remove": remove, "scale": scale, "cores": cores, "contention_alpha": alpha,
        },
        "measured_wall_s": r3(measured_wall),
        "replayed_wall_s": r3(replayed_wall),
        "predicted_wall_s": r3(predicted_wall),
        "replay_error_pct": r3(100.0 * (replayed_wall - measured_wall) / measured_wall) if measured_wall else 0.0,
        "predicted_delta_s": r3(predicted_wall - replayed_wall),
        "predicted_delta_pct": r3(100.0 * (predicted_wall - replayed_wall) / replayed_wall) if replayed_wall else 0.0,
        "cpu_s_before": r3(cpu_before),
        "cpu_s_after": r3(cpu_after),
        "summary": {k: v.to_json() for k, v in sums.items()},
        "critical": {k: {"step": critical_step(c), "chain": c} for k, c in chains.items()},
        "bounds": {"before": bounds(graph, work, jobs), "after": bounds(graph, work_after, jobs)},
        "concurrency": {
            k: {"tail": tail(s, conc[k]), "profile": profile(s, conc[k])} for k, s in schedules.items()
        },
        "nvcc": {
            "cuda_steps": len(cuda),
            "host_s": r3(sum(r["host_s"] for r in cuda)),
            "device_s": r3(sum(r["device_s"] for r in cuda)),
            "partial": sorted(r["name"] for r in cuda if r["nvcc"] == "partial"),
            "unmatched_invocations": sorted(inv.output or inv.source for inv in loaded.nvcc_unmatched),
        },
        "steps": rows,
        "warnings": list(loaded.warnings) + list(graph.warnings),
    }
    if len(rows) < len(step_idx):
        doc["steps_limited"] = _limited(len(rows), len(step_idx), st_factor.count(0.0),
                                        len(st_factor) - st_factor.count(0.0) - st_factor.count(1.0))
    return doc


def _limited(listed: int, total: int, removed: int, scaled: int) -> dict:
    return {"listed": listed, "total": total, "removed": removed, "scaled": scaled,
            "hint": "--all-steps lists every step"}


def limit_steps(doc: dict, max_steps: int) -> dict:
    """`doc` with steps[] cut to its first `max_steps` rows, as analyse(max_steps=...) makes it."""
    rows = doc["steps"]
    if len(rows) <= max_steps:
        return doc
    return doc | {"steps": rows[:max_steps],
                  "steps_limited": _limited(max_steps, len(rows), sum(1 for r in rows if r["action"] == "remove"),
                                            sum(1 for r in rows if r["action"] == "scale"))}


_NO_NVCC = {"nvcc": None, "host_s": 0.0, "device_s": 0.0, "phases": {}, "archs": {}}


def nvcc_fields(inv: Invocation | None) -> dict:
    if inv is None:
        return _NO_NVCC
    ms = inv.phase_ms()
    return {
        "nvcc": "complete" if inv.complete else "partial",
        "host_s": r3(sum(ms[k] for k in HOST_KINDS) / 1000.0),
        "device_s": r3(sum(ms[k] for k in DEVICE_KINDS) / 1000.0),
        "phases": {k: r3(v / 1000.0) for k, v in ms.items() if v > 0},
        "archs": {k: r3(v / 1000.0) for k, v in inv.arch_ms().items()},
    }


def predict_migration(log_path: str, nvcc_time_paths: list[str], remove_globs: list[str],
                      scale: dict[str, float] | None = None, jobs: int | None = None) -> dict:
    """The `codemod impact --json` document for LOG with `--nvcc-time`, `--remove`, `--scale`, `-j`."""
    loaded = load(log_path, list(nvcc_time_paths or []))
    return analyse(loaded, remove=list(remove_globs or []), scale=scale, jobs=jobs)
