"""Re-pricing a recorded build for another list of nvcc targets (`codemod impact --retarget`): each
CUDA step keeps its host phases (or the share its what-if's `host_scale` keeps) and gets, per
target of its new list, the device time nvcc --time rows give that target (this build's or
another's), times the share a migration leaves static (per target where the what-if's `static_at`
gives it: kernels gated away from a target leave nothing there). The result is one what-if, replayed by `predict.predict` like every other prediction."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import UsageError
from .nvcc_time import Invocation
from .predict import MAX_SCALE, Loaded, _candidates, glob_matches, glob_regex, read_json_arg, read_what_if

_TARGET = re.compile(r"^(?:compute|sm)_(\w+)$")


def target_of(arch: str) -> str | None:
    """nvcc's arch column -> the target it builds: 'compute_90a' and 'sm_90a' -> '90a'."""
    m = _TARGET.match(arch.strip())
    return m.group(1) if m else None


def per_target_ms(inv: Invocation) -> dict[str, float]:
    """Device ms per target: cicc and ptxas of that target, plus the device phases that name no
    target (device preprocessing, fatbinary, nvlink) shared evenly. A compile the log caught
    unfinished prices only the targets whose ptxas row was written (those it finished)."""
    own: dict[str, float] = {}
    done: set[str] = set()
    for row in inv.rows:
        t = target_of(row.arch) if row.kind in ("cicc", "ptxas") else None
        if t is not None:
            own[t] = own.get(t, 0.0) + row.ms
            if row.kind == "ptxas":
                done.add(t)
    if not own:
        return {}
    shared = inv.host_device_ms()[1] - sum(own.values())
    out = {t: ms + shared / len(own) for t, ms in own.items()}
    return out if inv.complete else {t: ms for t, ms in out.items() if t in done}


def static_share(factor: float, host: float, device: float, host_kept: float = 1.0) -> float:
    """The share of a step's device phases a what-if factor leaves (analysis.pricing writes
    factor = (host * host_kept + device * static) / (host + device)); 1 for a step without device
    phases."""
    if device <= 0:
        return 1.0
    return min(1.0, max(0.0, (factor * (host + device) - host * host_kept) / device))


def combine_what_ifs(what_ifs: list[dict]) -> dict:
    """Several rules' what-ifs over one log as one. The rules move disjoint kernels, so the time
    each takes out of a step adds up: factor = 1 - sum(1 - f) (instantiation shares over the same
    instantiations add), never below 0; removed globs are united; `host_scale` (the share of a
    step's host phases kept) adds up the same way; `static_at` (per-target static shares) is taken
    from the one what-if that gives it for a step."""
    if len(what_ifs) == 1:
        return what_ifs[0]
    remove: list[str] = []
    taken: dict[str, float] = {}
    host_taken: dict[str, float] = {}
    static_at: dict[str, dict] = {}
    for w in what_ifs:
        remove += [g for g in w.get("remove") or [] if g not in remove]
        for glob, f in (w.get("scale") or {}).items():
            taken[glob] = taken.get(glob, 0.0) + (1.0 - f)
        for glob, f in (w.get("host_scale") or {}).items():
            host_taken[glob] = host_taken.get(glob, 0.0) + (1.0 - f)
        for glob, shares in (w.get("static_at") or {}).items():
            if glob in static_at:
                # NOTE: a target's share also drops for kernels gated away from it, which is no rule's
                # doing: two rules' shares of one step do not add up
                raise UsageError(f"--what-if: two what-ifs give per-target static shares (static_at) of {glob}",
                                 hint="write one what-if holding every rule's shares for that build")
            static_at[glob] = shares
    scale = {g: round(max(0.0, 1.0 - t), 6) for g, t in taken.items() if g not in remove}
    words = "; ".join(str(w.get("description") or "what-if") for w in what_ifs)
    out = {"remove": remove, "scale": scale, "description": f"{len(what_ifs)} what-ifs combined ({words})"}
    if host_taken:
        out["host_scale"] = {g: round(max(0.0, 1.0 - t), 6) for g, t in host_taken.items() if g not in remove}
    if static_at:
        out["static_at"] = {g: v for g, v in static_at.items() if g not in remove}
    return out


@dataclass(frozen=True)
class TargetList:
    """The targets the steps `glob` matches build; `like`: a target no log measured for a step ->
    (a measured target, factor) that prices it."""

    glob: str
    targets: tuple[str, ...]
    like: dict = field(default_factory=dict)


@dataclass
class Source:
    """A build whose nvcc rows price targets, and the what-if a migration makes of it (its static
    shares go with the targets it prices)."""

    loaded: Loaded
    what_if: dict
    static: dict = field(default_factory=dict)  # source path -> static share, for units the log lacks


@dataclass
class Retarget:
    lists: list[TargetList]  # first match wins; a CUDA step no glob matches keeps its own targets
    like: dict = field(default_factory=dict)  # target -> (measured target, factor), for every list
    fixed: list[tuple[str, float]] = field(default_factory=list)  # (glob, device ms per target)


def unit_key(name: str) -> str:
    """A step's name without its build folder ('.../x.dir/cast/cast.cu.o' -> 'cast/cast.cu.o'), so
    that two builds' steps of one source meet."""
    return name.rsplit(".dir/", 1)[-1]


def _unit_prices(loaded: Loaded) -> dict[str, tuple[dict[str, float], Invocation]]:
    """unit key -> (device ms per target, its invocation); nvcc rows no step claims (unfinished
    when the log was taken) are keyed by their source as `<source>.o`."""
    out = {unit_key(name): (per_target_ms(inv), inv) for name, inv in loaded.nvcc.items()}
    for inv in loaded.nvcc_unmatched:
        if inv.source and not inv.source.startswith("/"):
            out.setdefault(inv.source + ".o", (per_target_ms(inv), inv))
    return out


@dataclass(frozen=True)
class Static:
    """What a source's what-if leaves of one unit: the share of its device phases, of its host
    phases, and per target of a new list the share of its device phases a compile for that target
    keeps (kernels gated away from the target count 0; absent: `device`)."""

    device: float = 1.0
    host: float = 1.0
    at: dict = field(default_factory=dict)


def _statics(source: Source) -> dict[str, Static]:
    """unit key -> what the source's what-if leaves, for each CUDA step it built."""
    out = {}
    steps = source.loaded.steps
    scale = source.what_if.get("scale") or {}
    removed = source.what_if.get("remove") or []
    rules = [(glob_regex(g), f) for g, f in scale.items()]
    host_rules = [(glob_regex(g), f) for g, f in (source.what_if.get("host_scale") or {}).items()]
    at_rules = [(glob_regex(g), v) for g, v in (source.what_if.get("static_at") or {}).items()]
    for k, name in enumerate(steps.name):
        inv = source.loaded.nvcc.get(name)
        if inv is None:
            continue
        names = _candidates(steps.outputs(k), inv)
        if any(glob_matches(g, names) for g in removed):
            out[unit_key(name)] = Static(0.0, 0.0)
            continue
        host, device = inv.host_device_ms()
        f = next((f for rx, f in rules if any(map(rx.match, names))), None)
        kept = next((f for rx, f in host_rules if any(map(rx.match, names))), 1.0)
        at = next((v for rx, v in at_rules if any(map(rx.match, names))), {})
        out[unit_key(name)] = Static(1.0 if f is None else static_share(f, host, device, kept), kept, dict(at))
    for src, share in source.static.items():
        out.setdefault(src + ".o", Static(share))
    return out


def retarget_what_if(base: Source, spec: Retarget, others: list[Source] | None = None) -> tuple[dict, list[dict]]:
    """The what-if that turns `base`'s CUDA steps into compiles for the spec's target lists, with
    the migration of each source's what-if applied. A target is priced by the first source that
    measured it for the step (base first), else through `like` (list's, then spec's) by the first
    that measured the target named there; a step matching a `fixed` glob gets that device time per
    target instead (a unit whose device pass holds nothing). Returns (what-if keyed by step name,
    one row per CUDA step)."""
    sources = [base] + list(others or [])
    prices = [_unit_prices(s.loaded) for s in sources]
    statics = [_statics(s) for s in sources]
    lists = [(glob_regex(t.glob), t) for t in spec.lists]
    fixed = [(glob_regex(g), ms) for g, ms in spec.fixed]
    steps = base.loaded.steps
    scale, rows = {}, []

    def price(key: str, target: str) -> tuple[float, int] | None:
        for i, p in enumerate(prices):
            ms = p.get(key, ({}, None))[0].get(target)
            if ms is not None:
                return ms, i
        return None

    for k, name in enumerate(steps.name):
        inv = base.loaded.nvcc.get(name)
        if inv is None:
            continue
        names = _candidates(steps.outputs(k), inv)
        key = unit_key(name)
        host, device = inv.host_device_ms()
        if host + device <= 0:
            continue
        chosen = next((t for rx, t in lists if any(map(rx.match, names))), None)
        targets = chosen.targets if chosen else tuple(sorted(per_target_ms(inv)))
        like = {**spec.like, **(chosen.like if chosen else {})}
        ms_fixed = next((ms for rx, ms in fixed if any(map(rx.match, names))), None)
        by_target = {}
        for t in targets:
            if ms_fixed is not None:
                by_target[t] = {"ms": ms_fixed, "from": "fixed"}
                continue
            got, via, mult, seen = price(key, t), t, 1.0, {t}
            # NOTE: `like` chains (120 -> 100 -> 90) for a step a build did not finish; a cycle stops it
            while got is None and via in like and like[via][0] not in seen:
                via, f = like[via]
                seen.add(via)
                mult *= f
                got = price(key, via)
            if got is None:
                raise UsageError(f"--retarget: no build prices target {t} of {key} (and no `like` for it)",
                                 hint="add a log that built it to `price_from`, or a `like` entry for the target")
            ms, i = got
            left = statics[i].get(key, statics[0].get(key, Static()))
            static = left.at.get(t, left.device)
            by_target[t] = {"ms": ms * mult * static, "from": f"{i}:{via}" + (f"*{mult:g}" if mult != 1.0 else ""),
                            "static": round(static, 4)}
        new_device = sum(v["ms"] for v in by_target.values())
        new_host = host * statics[0].get(key, Static()).host   # the base build's host phases, what stays of them
        factor = min(MAX_SCALE, (new_host + new_device) / (host + device))
        scale[name] = factor
        rows.append({"name": name, "host_s": round(host / 1000, 3), "device_s": round(device / 1000, 3),
                     "new_host_s": round(new_host / 1000, 3),
                     "new_device_s": round(new_device / 1000, 3), "factor": round(factor, 4),
                     "targets": {t: {**v, "ms": round(v["ms"], 1)} for t, v in by_target.items()}})
    n_lists = sum(1 for r in rows if len(r["targets"]))
    what_if = {"remove": [], "scale": scale,
               "description": f"retarget: {n_lists} CUDA step(s) re-priced for their target lists"
                              + (f" from {len(sources)} build(s)" if len(sources) > 1 else "")}
    return what_if, rows


def _pair(value, where: str) -> tuple[str, float]:
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], (int, float)) and not isinstance(value[1], bool) and value[1] >= 0):
        raise UsageError(f"--retarget {where}: a `like` entry is [TARGET, FACTOR], got {value!r}")
    return value[0], float(value[1])


def read_retarget(path: str) -> tuple[Retarget, list[dict]]:
    """The --retarget file: {"lists": [{"glob", "targets", "like"?}], "like"?: {T: [T2, F]},
    "fixed"?: [{"glob", "device_s_per_target"}], "price_from"?: [{"log", "nvcc_time", "what_if", "static"?}]}
    (`static`: the share the migration leaves of units that build's log lacks, by source path).
    Returns the spec and the `price_from` entries (loaded by the caller)."""
    doc = read_json_arg(path, "--retarget")
    if not isinstance(doc, dict) or not isinstance(doc.get("lists"), list):
        raise UsageError(f"--retarget {path}: expected an object with `lists` (glob and targets per entry)")
    lists = []
    for e in doc["lists"]:
        if not (isinstance(e, dict) and isinstance(e.get("glob"), str) and isinstance(e.get("targets"), list)
                and all(isinstance(t, str) for t in e["targets"])):
            raise UsageError(f"--retarget {path}: each of `lists` is {{\"glob\", \"targets\": [..]}}, got {e!r}")
        lists.append(TargetList(e["glob"], tuple(e["targets"]),
                                {t: _pair(v, path) for t, v in (e.get("like") or {}).items()}))
    fixed = []
    for e in doc.get("fixed") or []:
        s = e.get("device_s_per_target") if isinstance(e, dict) else None
        if not (isinstance(e.get("glob"), str) and isinstance(s, (int, float)) and s >= 0):
            raise UsageError(f"--retarget {path}: each of `fixed` is {{\"glob\", \"device_s_per_target\"}}, got {e!r}")
        fixed.append((e["glob"], float(s) * 1000.0))
    sources = doc.get("price_from") or []
    for e in sources:
        static = e.get("static", {}) if isinstance(e, dict) else None
        if not (isinstance(e, dict) and isinstance(e.get("log"), str) and isinstance(static, dict)
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
                        for v in static.values())):
            raise UsageError(f"--retarget {path}: each of `price_from` is {{\"log\", \"nvcc_time\", \"what_if\", "
                             f"\"static\"?: {{SOURCE: SHARE 0..1}}}}")
    return Retarget(lists, {t: _pair(v, path) for t, v in (doc.get("like") or {}).items()}, fixed), sources


def load_sources(entries: list[dict]) -> list[Source]:
    """`price_from` entries -> sources (log, nvcc rows, their what-ifs combined)."""
    from .predict import load

    out = []
    for e in entries:
        files = list(e.get("what_if") or [])
        what_if = combine_what_ifs([read_what_if(f) for f in files]) if files else {"remove": [], "scale": {}}
        out.append(Source(load(e["log"], list(e.get("nvcc_time") or [])), what_if, dict(e.get("static") or {})))
    return out
