"""The impact pipeline: load logs -> price every step -> replay as recorded -> replay with the
what-if applied -> one JSON document (schema in docs/impact.md). `predict_migration` is the entry
point other stages (codemod analyze) call.
"""

from __future__ import annotations

import fnmatch
import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import compress, repeat

import numpy as np

from ..errors import UsageError
from . import build_ninja, ninja_log, nvcc_time
from .graph import Graph, from_log, from_manifest, levels, prepend
from .model import (bounds, critical_chain, critical_step, profile, r3, real_nodes, sum_in_order, summarize,
                    tail, weighted_times)
from .nvcc_time import Invocation
from .options import POLICY_FOR_LOG_VERSION, STEPS_LISTED
from .replay import Contention, Schedule, concurrency_steps, recorded_work, replay

SCHEMA_VERSION = 1
MAX_SCALE = 1000.0  # --scale factors: a what-if, not a way to overflow the replay


@dataclass
class Loaded:
    log: ninja_log.NinjaLog
    build: ninja_log.Build
    steps: ninja_log.StepTable  # cycles laid end to end
    cycle_starts: list[int]
    nvcc: dict[str, Invocation] = field(default_factory=dict)  # step name -> its nvcc invocation
    nvcc_unmatched: list[Invocation] = field(default_factory=list)
    manifest: build_ninja.Manifest | None = None
    inputs: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@contextmanager
def gc_paused():
    """NOTE: the pipeline holds lists of every step and allocates many small containers, none in
    reference cycles; on a 100k-step log the cyclic collector would scan them again and again
    (~0.2 s, a fifth of the run)."""
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
    offsets = [0]  # where each cycle starts once they are laid end to end
    for cyc in build.cycles:
        offsets.append(offsets[-1] + cyc.wall_ms)
    steps = ninja_log.StepTable.concat([cyc.steps() for cyc in build.cycles], offsets[:-1])
    cycle_starts = offsets[1:-1]
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


def match_nvcc(steps: ninja_log.StepTable, invocations: list[Invocation]) -> tuple[dict[str, Invocation], list[Invocation]]:
    """Join nvcc invocations to steps by output path (exact, else one a path-suffix of the other)."""
    if not invocations:
        return {}, []
    by_output: dict[str, str] = {}  # output -> its step's name
    for k, name in enumerate(steps.name):
        for o in steps.more.get(k, (name,)):
            by_output[o] = name
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
        prev = matched.get(step)
        if prev is None or (inv.complete and not prev.complete) or inv.complete == prev.complete:
            matched[step] = inv
    return matched, unmatched


def parse_scale(items: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items:
        glob, sep, factor = item.rpartition("=")
        try:
            value = float(factor)
        except ValueError:
            value = -1.0
        if not sep or not glob or not 0 <= value <= MAX_SCALE:  # NOTE: also refuses NaN
            raise UsageError(f"--scale expects GLOB=FACTOR with FACTOR from 0 to {MAX_SCALE:g}, got {item!r}",
                             hint="e.g. --scale '*/cast/*=0.5'")
        out[glob] = value
    return out


def _candidates(outputs: list[str], inv: Invocation | None) -> list[str]:
    out = list(outputs)
    out += [o[: -len(sfx)] for o in outputs for sfx in (".o", ".obj") if o.endswith(sfx)]
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


def factors(loaded: Loaded, remove: list[str], scale: dict[str, float]) -> np.ndarray:
    """Duration factor of each step of `loaded.steps` (1 = unchanged, 0 = removed). A glob that
    matches nothing is an error. NOTE: a substring test on each glob's literal part rules most steps
    out before any regex runs."""
    steps = loaded.steps
    nvcc = loaded.nvcc
    hay = steps.name  # every candidate name of a step, one per line
    if nvcc or steps.more:  # each candidate is a substring of its hay
        hay = []
        for k, name in enumerate(steps.name):
            inv = nvcc.get(name)
            text = "\n".join(steps.more[k]) if k in steps.more else name
            hay.append(text + "\n" + inv.source if inv is not None and inv.source else text)
    rules = [(g, factor) for g, factor in scale.items()] + [(g, 0.0) for g in remove]
    hits = {g: 0 for g in list(remove) + list(scale)}
    out = np.ones(len(steps))
    for g, factor in rules:
        rx, lit = glob_regex(g), _literal(g)
        maybe = compress(range(len(hay)), map(str.__contains__, hay, repeat(lit))) if lit else range(len(steps))
        found = [k for k in maybe if any(map(rx.match, _candidates(steps.outputs(k), nvcc.get(steps.name[k]))))]
        hits[g] += len(found)
        out[found] = out[found] * factor if factor else 0.0
    missing = [g for g, n in hits.items() if n == 0]
    if missing:
        example = steps.name[0] if len(steps) else "(none)"
        raise UsageError(f"no step matches {', '.join(repr(g) for g in missing)}",
                         hint=f"globs match outputs or nvcc sources, e.g. {example!r}")
    return out


def build_graph(loaded: Loaded) -> Graph:
    if loaded.manifest is not None:
        return from_manifest(loaded.manifest, loaded.steps)
    return from_log(loaded.steps, loaded.cycle_starts)


def recorded_schedule(graph: Graph, jobs: int) -> Schedule:
    """The build as logged; a node that is not a logged step (phony, or a build.ninja edge that
    did not run) takes no time once its last dependency ended."""
    logged = graph.step >= 0
    start, end = np.zeros(len(graph)), np.zeros(len(graph))
    start[logged] = graph.steps.start_ms[graph.step[logged]]
    end[logged] = graph.steps.end_ms[graph.step[logged]]
    if not logged.all():
        for lv in levels(graph):
            users = lv.user[lv.first]
            unlogged = ~logged[users]
            end[users[unlogged]] = np.maximum.reduceat(end[lv.dep], lv.first)[unlogged]
        start[~logged] = end[~logged]
    return Schedule(start, end, jobs)


def analyse(loaded: Loaded, remove: list[str] | None = None, scale: dict[str, float] | None = None,
            jobs: int | None = None, policy: str | None = None, cores: int | None = None,
            alpha: float = 0.0, max_steps: int | None = STEPS_LISTED, first: list[str] | None = None) -> dict:
    """The JSON document. `max_steps`: rows of steps[] (the longest steps, None = all); a longer
    build adds `steps_limited` with the totals (docs/impact.md). `first`: step names that get the
    lowest edge ids, in that order (a source list reordered; both replays use that order)."""
    with gc_paused():
        return _analyse(loaded, remove, scale, jobs, policy, cores, alpha, max_steps, first)


def _analyse(loaded: Loaded, remove: list[str] | None, scale: dict[str, float] | None, jobs: int | None,
             policy: str | None, cores: int | None, alpha: float, max_steps: int | None,
             first: list[str] | None = None) -> dict:
    remove, scale = list(remove or []), dict(scale or {})
    graph = build_graph(loaded)
    if first:
        graph = prepend(graph, first)
    steps = loaded.steps  # the rows graph.step refers to
    step_idx = graph.step_ids()
    measured = recorded_schedule(graph, jobs or 0)
    # NOTE: phony nodes have zero length, so the recorded schedule's concurrency is the steps'
    conc_measured = concurrency_steps(measured.start, measured.end)
    peak = int(conc_measured[1].max()) if len(conc_measured[1]) else 1
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

    factor = factors(loaded, remove, scale)  # per step
    work = np.zeros(len(graph))
    work[step_idx] = recorded_work(measured.start[step_idx], measured.end[step_idx], contention)
    work_after = work.copy()
    work_after[step_idx] *= factor[graph.step[step_idx]]

    replayed = replay(graph, work, jobs, policy, contention)
    predicted = replay(graph, work_after, jobs, policy, contention)
    schedules = {"measured": measured, "replayed": replayed, "predicted": predicted}
    conc = {"measured": conc_measured, "replayed": concurrency_steps(replayed.start, replayed.end),
            "predicted": concurrency_steps(predicted.start, predicted.end)}

    real = {name: real_nodes(graph, s) for name, s in schedules.items()}
    sums = {name: summarize(graph, s, real[name]) for name, s in schedules.items()}
    elapsed = steps.end_ms - steps.start_ms
    sums["measured"].wall_s = (int(steps.end_ms.max()) if len(steps) else 0) / 1000.0
    cpu_before = int(elapsed.sum()) / 1000.0
    cpu_after = sum_in_order(elapsed * factor) / 1000.0
    measured_wall = sums["measured"].wall_s
    replayed_wall = replayed.wall_ms / 1000.0
    predicted_wall = predicted.wall_ms / 1000.0
    chains = {k: critical_chain(graph, s, real=real[k]) for k, s in schedules.items()}

    # steps[] order: longest first, then by name (elapsed_s is r3(elapsed_ms / 1000): same order)
    step_of, neg_elapsed = graph.step.tolist(), (-elapsed).tolist()

    def row_key(i: int) -> tuple:
        k = step_of[i]
        return (neg_elapsed[k], steps.name[k])

    listed = step_idx
    if max_steps is not None and len(step_idx) > max_steps:
        # NOTE: only steps at least as long as the max_steps-th longest can be listed; sort those
        durations = graph.duration[step_idx]
        cut = -np.partition(-durations, max_steps - 1)[max_steps - 1] if max_steps > 0 else np.inf
        listed = step_idx[durations >= cut]
    listed = sorted(listed.tolist(), key=row_key)
    if max_steps is not None:
        listed = listed[:max_steps]
    rows = []
    columns = zip(listed, weighted_times(measured, conc_measured, listed).tolist(), factor[graph.step[listed]].tolist(),
                  replayed.start[listed].tolist(), replayed.end[listed].tolist(),
                  predicted.start[listed].tolist(), predicted.end[listed].tolist())
    for i, w, f, r0, r1, p0, p1 in columns:
        step = steps[step_of[i]]
        row = {
            "name": step.name,
            "start_s": r3(step.start_ms / 1000.0),
            "end_s": r3(step.end_ms / 1000.0),
            "elapsed_s": r3(step.elapsed_ms / 1000.0),
            "weighted_s": r3(w / 1000.0),
            "action": "remove" if f == 0 else ("scale" if f != 1.0 else "keep"),
            "factor": f,
            "replayed": {"start_s": r3(r0 / 1000.0), "end_s": r3(r1 / 1000.0)},
            "predicted": {"start_s": r3(p0 / 1000.0), "end_s": r3(p1 / 1000.0), "elapsed_s": r3((p1 - p0) / 1000.0)},
        }
        if len(step.outputs) > 1:
            row["outputs"] = list(step.outputs)
        row.update(nvcc_fields(loaded.nvcc.get(step.name)))
        rows.append(row)

    # nvcc totals over every step, in steps[] order, whether listed or not
    cuda = []
    if loaded.nvcc:
        for i in sorted((i for i in step_idx.tolist() if steps.name[step_of[i]] in loaded.nvcc), key=row_key):
            name = steps.name[step_of[i]]
            cuda.append({"name": name} | nvcc_fields(loaded.nvcc[name]))
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": "codemod impact",
        "inputs": loaded.inputs | {"graph_source": graph.source},
        "options": {
            "jobs": jobs, "jobs_source": jobs_source, "policy": policy, "policy_source": policy_source,
            "remove": remove, "scale": scale, "cores": cores, "contention_alpha": alpha,
        } | ({"first": list(first)} if first else {}),
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
        removed = int(np.count_nonzero(factor == 0.0))
        doc["steps_limited"] = _limited(len(rows), len(step_idx), removed,
                                        len(factor) - removed - int(np.count_nonzero(factor == 1.0)))
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
    host, device = inv.host_device_ms()
    return {
        "nvcc": "complete" if inv.complete else "partial",
        "host_s": r3(host / 1000.0),
        "device_s": r3(device / 1000.0),
        "phases": {k: r3(v / 1000.0) for k, v in ms.items() if v > 0},
        "archs": {k: r3(v / 1000.0) for k, v in inv.arch_ms().items()},
    }


# The one statement of a predicted wall that analyze, apply and impact print (`prediction_line`),
# with the errors measured so far. Replay: the recorded build replayed from its own durations
# (docs/impact.md "Measured error": -0.001% on TE at -j16, 0 to -0.16% on the ninja experiments).
# Prediction: the wall predicted from an original build's own log against the migrated build measured
# on the same machine (docs/results/te_build.md runs 1-2: -2.3%, -0.7%; te_build_order.md: -4.4%;
# te_build_issue13_paired.md: +18%, mostly the reordered list the replay keeps in the old order).
REPLAY_ERROR_PCT = 0.2
PREDICTION_ERROR_PCT = (-4.4, 18.0)
ERROR_SOURCES = "docs/impact.md, docs/results/te_build.md, te_build_order.md, te_build_issue13_paired.md"


def predict(loaded: Loaded, what_if: dict, jobs: int | None = None, policy: str | None = None, **kwargs) -> dict:
    """The replay of one what-if ({"remove": [GLOB], "scale": {GLOB: FACTOR}}): the function every
    command's predicted wall comes from (analyze and apply through analysis.pricing, impact
    directly), so the same what-if at the same -j and policy gives the same number."""
    return analyse(loaded, remove=list(what_if.get("remove") or []), scale=dict(what_if.get("scale") or {}),
                   jobs=jobs, policy=policy, **kwargs)


def prediction_line(wall_s: float, what_if: str, jobs: int, jobs_source: str, policy: str) -> str:
    """`predicted build: W s (what-if; ninja -jN, policy P); error: ...`, the same words in every command."""
    lo, hi = PREDICTION_ERROR_PCT
    return (f"predicted build: {wall_s:.1f} s ({what_if}; ninja -j{jobs} ({jobs_source}), policy {policy}); "
            f"error: replay ±{REPLAY_ERROR_PCT:g}%, prediction {lo:+.1f}% to {hi:+.1f}% against measured "
            f"rebuilds ({ERROR_SOURCES})")


def describe_what_if(remove: list[str], scale: dict[str, float]) -> str:
    """A what-if given as globs, in words (impact's --remove/--scale)."""
    parts = ([f"{len(remove)} glob(s) removed: " + ", ".join(remove)] if remove else []) + \
            ([f"{len(scale)} glob(s) scaled"] if scale else [])
    return "what-if: " + ("; ".join(parts) if parts else "none (the build as recorded)")


def read_json_arg(path: str, flag: str):
    """The JSON document of the file a command-line flag names; a UsageError naming the flag."""
    import json

    try:
        return json.loads(open(path, encoding="utf-8").read())
    except OSError as exc:
        raise UsageError(f"cannot read {flag} {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"{flag} {path} is not JSON: {exc}") from None


def read_what_if(path: str) -> dict:
    """The what-if a file holds: `apply --build-log --diff F` writes F.what_if.json, `analyze
    --build-log --json F` holds it under impact.what_if. {"description", "remove", "scale"}."""
    doc = read_json_arg(path, "--what-if")
    what_if = doc.get("what_if") if isinstance(doc, dict) else None
    if what_if is None and isinstance(doc, dict) and isinstance(doc.get("impact"), dict):
        what_if = doc["impact"].get("what_if")
    if not isinstance(what_if, dict):
        raise UsageError(f"--what-if {path} holds no what-if (a `what_if` object, or `impact.what_if` of an "
                     "analysis JSON)", hint="write one with `codemod apply --build-log LOG --diff F` "
                                            "(F.what_if.json) or `codemod analyze --build-log LOG --json F`")
    remove, scale = what_if.get("remove", []), what_if.get("scale", {})
    if not (isinstance(remove, list) and all(isinstance(g, str) for g in remove) and isinstance(scale, dict)
            and all(isinstance(g, str) and isinstance(f, (int, float)) and not isinstance(f, bool)
                    and 0 <= f <= MAX_SCALE for g, f in scale.items())):
        raise UsageError(f"--what-if {path}: `remove` must be a list of globs and `scale` an object of glob: factor "
                     f"(0 to {MAX_SCALE:g})")
    host = what_if.get("host_scale", {})
    if not (isinstance(host, dict) and all(isinstance(g, str) and isinstance(f, (int, float)) and not isinstance(f, bool)
                                           and 0 <= f <= 1 for g, f in host.items())):
        raise UsageError(f"--what-if {path}: `host_scale` must be an object of glob: the share of the host phases "
                         "kept (0 to 1)")
    out = {"description": str(what_if.get("description") or describe_what_if(remove, scale)),
           "remove": remove, "scale": {g: float(f) for g, f in scale.items()}}
    if host:
        out["host_scale"] = {g: float(f) for g, f in host.items()}   # read by --retarget (impact.targets)
    at = what_if.get("static_at", {})
    if not (isinstance(at, dict) and all(isinstance(v, dict) and all(
            isinstance(t, str) and isinstance(f, (int, float)) and not isinstance(f, bool) and 0 <= f <= MAX_SCALE
            for t, f in v.items()) for v in at.values())):
        raise UsageError(f"--what-if {path}: `static_at` must be an object of glob: {{target: share kept}}")
    if at:
        out["static_at"] = {g: {t: float(f) for t, f in v.items()} for g, v in at.items()}   # --retarget too
    return out


def predict_migration(log_path: str, nvcc_time_paths: list[str], remove_globs: list[str],
                      scale: dict[str, float] | None = None, jobs: int | None = None,
                      policy: str | None = None) -> dict:
    """The `codemod impact --json` document for LOG with `--nvcc-time`, `--remove`, `--scale`, `-j`,
    `--policy`."""
    loaded = load(log_path, list(nvcc_time_paths or []))
    return analyse(loaded, remove=list(remove_globs or []), scale=scale, jobs=jobs, policy=policy)
