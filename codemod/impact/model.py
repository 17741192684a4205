"""Measures of one schedule (recorded or replayed): summary, weighted time, concurrency profile and
its tail, the critical chain, and lower bounds. Plain functions over Graph + Schedule.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import reduce
from itertools import accumulate, compress, repeat
from operator import add, and_, ge, gt, lt, mul, not_, sub
from dataclasses import dataclass

from .graph import Graph, topo_order
from .replay import Schedule, concurrency_steps


@dataclass
class Summary:
    wall_s: float
    cpu_s: float  # sum of step durations (job-seconds)
    steps: int
    jobs: int

    @property
    def parallelism(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def utilisation(self) -> float:
        return self.parallelism / self.jobs if self.jobs > 0 else 0.0

    def to_json(self) -> dict:
        return {
            "wall_s": r3(self.wall_s),
            "cpu_s": r3(self.cpu_s),
            "steps": self.steps,
            "jobs": self.jobs,
            "effective_parallelism": r3(self.parallelism),
            "utilisation": r3(self.utilisation),
        }


def r3(x: float) -> float:
    return round(float(x), 3)


def real_nodes(graph: Graph, sched: Schedule) -> list[int]:
    """Non-phony nodes that ran for some time (C-level maps: this runs on every node)."""
    live = map(lt, sched.start, sched.end)
    if any(graph.phony):
        live = map(and_, live, map(not_, graph.phony))
    return list(compress(range(len(graph.phony)), live))


def summarize(graph: Graph, sched: Schedule, real: list[int] | None = None) -> Summary:
    idx = real_nodes(graph, sched) if real is None else real
    start, end = sched.start, sched.end
    cpu = sum([end[i] - start[i] for i in idx])
    return Summary(sched.wall_ms / 1000.0, cpu / 1000.0, len(idx), sched.jobs)


def weighted_times(sched: Schedule, conc: tuple | None = None, only: list[int] | None = None) -> list[float]:
    """Chromium's weighted time (ms): each instant is shared equally by the jobs running then.
    Sums to the busy wall time. `conc` = concurrency_steps(...) of the schedule, if already known;
    `only`: the nodes to price (default all), in that order."""
    times, counts = conc or concurrency_steps(sched.start, sched.end)
    # NOTE: the same left-to-right sums as a loop appending acc[-1] + share
    acc = list(accumulate([d / c if c else 0.0 for d, c in zip(map(sub, times[1:], times[:-1]), counts)],
                          initial=0.0))

    def at(x: float) -> float:
        k = bisect_right(times, x) - 1
        if k < 0:
            return 0.0
        c = counts[k]
        return acc[k] + ((x - times[k]) / c if c else 0.0)

    start, end = sched.start, sched.end
    if only is not None:
        return [at(end[i]) - at(start[i]) if end[i] > start[i] else 0.0 for i in only]
    return [at(e) - at(s) if e > s else 0.0 for s, e in zip(start, end)]


MAX_PROFILE_POINTS = 4000


def profile(sched: Schedule, conc: tuple | None = None) -> list[list[float]]:
    """[[t_s, running], ...] at every change of the number of running jobs. Beyond
    MAX_PROFILE_POINTS changes, the time-averaged concurrency of equal time buckets (1 decimal)."""
    times, counts = conc or concurrency_steps(sched.start, sched.end)
    if len(times) <= MAX_PROFILE_POINTS:
        return [[r3(t / 1000.0), c] for t, c in zip(times, counts)]
    t0, t1 = times[0], times[-1]
    width = (t1 - t0) / MAX_PROFILE_POINTS
    # job-ms done up to each change point; a bucket's area is the difference at its two edges
    acc = list(accumulate(map(mul, map(sub, times[1:], times[:-1]), counts), initial=0.0))
    last = len(times) - 1

    def area_at(x: float) -> float:
        k = bisect_right(times, x) - 1
        return acc[-1] if k >= last else acc[k] + (x - times[k]) * counts[k]

    edges = [area_at(t0 + j * width) for j in range(MAX_PROFILE_POINTS)] + [acc[-1]]
    out = [[r3((t0 + j * width) / 1000.0), round((edges[j + 1] - edges[j]) / width, 1)]
           for j in range(MAX_PROFILE_POINTS)]
    out.append([r3(t1 / 1000.0), 0])
    return out


def tail(sched: Schedule, conc: tuple | None = None) -> dict:
    """Where the build stops filling its job slots: the last instant at full concurrency, the time
    from there to the end, the job-seconds done in it, and the time spent below full / half."""
    times, counts = conc or concurrency_steps(sched.start, sched.end)
    if not times:
        return {"full_until_s": 0.0, "tail_s": 0.0, "tail_job_s": 0.0, "below_full_s": 0.0, "below_half_s": 0.0}
    peak = max(counts)
    full = min(sched.jobs, peak) if sched.jobs > 0 else peak
    # NOTE: C-level maps over the change points; the sums add in the same order as a plain loop
    head = counts[:-1]
    dts = list(map(sub, times[1:], times[:-1]))
    last_full = next((k for k in range(len(head) - 1, -1, -1) if head[k] >= full), None)
    full_until = times[last_full + 1] if last_full is not None else 0.0
    below_full = reduce(add, compress(dts, map(lt, head, repeat(full))), 0.0)
    below_half = reduce(add, compress(dts, map(lt, map(mul, head, repeat(2)), repeat(full))), 0.0)
    wall = times[-1]
    job_ms = sum(compress(map(mul, dts, head), map(ge, times, repeat(full_until))))
    return {
        "full_concurrency": full,
        "full_until_s": r3(full_until / 1000.0),
        "tail_s": r3((wall - full_until) / 1000.0),
        "tail_job_s": r3(job_ms / 1000.0),
        "below_full_s": r3(below_full / 1000.0),
        "below_half_s": r3(below_half / 1000.0),
    }


def critical_chain(graph: Graph, sched: Schedule, eps_ms: float = 1.0, real: list[int] | None = None) -> list[dict]:
    """Walk back from the step that ends last: to the dependency that finished last if the step
    started when it finished, else to the step whose end freed its job slot. Each entry says why it
    started: 'build start', 'dependency finished' or 'job slot freed' (by the entry before it)."""
    names, deps_of, orders, phony = graph.name, graph.deps, graph.order, graph.phony
    real = real_nodes(graph, sched) if real is None else real
    if not real:
        return []
    # (end, order): a stable sort by end of the nodes in edge-id order
    by_end = list(real)
    if any(map(gt, orders[:-1], orders[1:])):
        by_end.sort(key=orders.__getitem__)
    by_end.sort(key=sched.end.__getitem__)
    end = sched.end
    ends = [sched.end[i] for i in by_end]
    latest: dict[int, int | None] = {}

    def last_real(i: int) -> int | None:
        # latest-finishing real node among i's deps, looking through phony nodes (memoised)
        if i in latest:
            return latest[i]
        stack, order = [i], []
        while stack:
            x = stack.pop()
            if x in latest:
                continue
            order.append(x)
            latest[x] = None  # placeholder
            stack.extend([d for d in deps_of[x] if phony[d] and d not in latest])
        for x in reversed(order):
            # the first of the latest-ending candidates, as max() picks it
            cands = [c for c in [latest.get(d) if phony[d] else d for d in deps_of[x]] if c is not None]
            latest[x] = max(cands, key=end.__getitem__) if cands else None
        return latest[i]

    cur = by_end[-1]
    chain = [{"index": cur, "via": "build start"}]
    seen = {cur}
    while sched.start[cur] > eps_ms:
        s = sched.start[cur]
        dep = last_real(cur)
        if dep is not None and sched.end[dep] >= s - eps_ms and dep not in seen:
            cur, via = dep, "dependency finished"
        else:
            k = bisect_right(ends, s + eps_ms) - 1
            while k >= 0 and by_end[k] in seen:
                k -= 1
            if k < 0 or ends[k] < s - max(eps_ms, 50.0):
                break
            cur, via = by_end[k], "job slot freed"
        seen.add(cur)
        # `via` is why the previous entry started: the step we just stepped back to ended
        chain[-1]["via"] = via
        chain.append({"index": cur, "via": "build start"})
    chain.reverse()
    return [
        {
            "name": names[c["index"]],
            "start_s": r3(sched.start[c["index"]] / 1000.0),
            "end_s": r3(sched.end[c["index"]] / 1000.0),
            "elapsed_s": r3((sched.end[c["index"]] - sched.start[c["index"]]) / 1000.0),
            "started_when": c["via"],
        }
        for c in chain
    ]


def critical_step(chain: list[dict]) -> dict | None:
    """The longest step on the critical chain: the one that bounds the build."""
    if not chain:
        return None
    best = max(chain, key=lambda c: (c["elapsed_s"], c["name"]))
    return {"name": best["name"], "elapsed_s": best["elapsed_s"], "start_s": best["start_s"], "end_s": best["end_s"]}


def bounds(graph: Graph, work: list[float], jobs: int) -> dict:
    """Lower bounds on the wall: the longest dependency path (infinite -j) and work / jobs."""
    phony, deps_of = graph.phony, graph.deps
    finish = [0.0 if p else w for p, w in zip(phony, work)]
    topo = topo_order(graph)
    for i in compress(topo, map(deps_of.__getitem__, topo)):  # only nodes with dependencies
        finish[i] += max(map(finish.__getitem__, deps_of[i]))
    total = sum([w for p, w in zip(phony, work) if not p])
    return {
        "critical_path_s": r3(max(finish, default=0.0) / 1000.0),
        "work_s": r3(total / 1000.0 / jobs) if jobs > 0 else 0.0,
    }
