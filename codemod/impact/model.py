"""Measures of one schedule (recorded or replayed): summary, weighted time, concurrency profile and
its tail, the critical chain, and lower bounds. Plain functions over Graph + Schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import Graph, levels
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


def real_nodes(graph: Graph, sched: Schedule) -> np.ndarray:
    """Non-phony nodes that ran for some time."""
    return np.flatnonzero((sched.start < sched.end) & ~graph.phony)


def sum_in_order(values: np.ndarray) -> float:
    """Sum from left to right, as a plain loop adds (np.sum adds pairwise)."""
    return sum(values.tolist())


def summarize(graph: Graph, sched: Schedule, real: np.ndarray | None = None) -> Summary:
    idx = real_nodes(graph, sched) if real is None else real
    cpu = sum_in_order(sched.end[idx] - sched.start[idx])
    return Summary(sched.wall_ms / 1000.0, cpu / 1000.0, len(idx), sched.jobs)


def weighted_times(sched: Schedule, conc: tuple | None = None, only: np.ndarray | None = None) -> np.ndarray:
    """Chromium's weighted time (ms): each instant is shared equally by the jobs running then.
    Sums to the busy wall time. `conc` = concurrency_steps(...) of the schedule, if already known;
    `only`: the nodes to price (default all), in that order."""
    times, counts = conc or concurrency_steps(sched.start, sched.end)
    start, end = (sched.start, sched.end) if only is None else (sched.start[only], sched.end[only])
    if not len(times):
        return np.zeros(len(start))

    def share(dt: np.ndarray, c: np.ndarray) -> np.ndarray:  # of each of c running jobs in dt; 0 if none
        return np.divide(dt, c, out=np.zeros(len(dt)), where=c > 0)

    # one job's share up to each change point: the same left-to-right sums as a plain loop
    acc = np.concatenate([[0.0], np.cumsum(share(np.diff(times), counts[:-1]))])

    def at(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(times, x, side="right") - 1
        return np.where(k < 0, 0.0, acc[k] + share(x - times[k], counts[k]))

    return np.where(end > start, at(end) - at(start), 0.0)


MAX_PROFILE_POINTS = 4000


def profile(sched: Schedule, conc: tuple | None = None) -> list[list[float]]:
    """[[t_s, running], ...] at every change of the number of running jobs. Beyond
    MAX_PROFILE_POINTS changes, the time-averaged concurrency of equal time buckets (1 decimal)."""
    times, counts = conc or concurrency_steps(sched.start, sched.end)
    if len(times) <= MAX_PROFILE_POINTS:
        return [[r3(t / 1000.0), c] for t, c in zip(times.tolist(), counts.tolist())]
    t0, t1 = float(times[0]), float(times[-1])
    width = (t1 - t0) / MAX_PROFILE_POINTS
    # job-ms done up to each change point; a bucket's area is the difference at its two edges
    acc = np.concatenate([[0.0], np.cumsum(np.diff(times) * counts[:-1])])
    x = t0 + np.arange(MAX_PROFILE_POINTS) * width
    k = np.searchsorted(times, x, side="right") - 1
    inside = np.minimum(k, len(times) - 2)  # k >= 0: x >= t0
    edges = np.where(k >= len(times) - 1, acc[-1], acc[inside] + (x - times[inside]) * counts[inside]).tolist()
    edges.append(float(acc[-1]))
    out = [[r3(xj / 1000.0), round((b - a) / width, 1)] for xj, a, b in zip(x.tolist(), edges, edges[1:])]
    out.append([r3(t1 / 1000.0), 0])
    return out


def tail(sched: Schedule, conc: tuple | None = None) -> dict:
    """Where the build stops filling its job slots: the last instant at full concurrency, the time
    from there to the end, the job-seconds done in it, and the time spent below full / half."""
    times, counts = conc or concurrency_steps(sched.start, sched.end)
    if not len(times):
        return {"full_concurrency": 0, "full_until_s": 0.0, "tail_s": 0.0, "tail_job_s": 0.0, "below_full_s": 0.0, "below_half_s": 0.0}
    peak = int(counts.max())
    full = min(sched.jobs, peak) if sched.jobs > 0 else peak
    head = counts[:-1]
    dts = np.diff(times)
    at_full = np.flatnonzero(head >= full)
    full_until = float(times[at_full[-1] + 1]) if len(at_full) else 0.0
    wall = float(times[-1])
    return {
        "full_concurrency": full,
        "full_until_s": r3(full_until / 1000.0),
        "tail_s": r3((wall - full_until) / 1000.0),
        "tail_job_s": r3(sum_in_order((dts * head)[times[:-1] >= full_until]) / 1000.0),
        "below_full_s": r3(sum_in_order(dts[head < full]) / 1000.0),
        "below_half_s": r3(sum_in_order(dts[head * 2 < full]) / 1000.0),
    }


def critical_chain(graph: Graph, sched: Schedule, eps_ms: float = 1.0, real: np.ndarray | None = None) -> list[dict]:
    """Walk back from the step that ends last: to the dependency that finished last if the step
    started when it finished, else to the step whose end freed its job slot. Each entry says why it
    started: 'build start', 'dependency finished' or 'job slot freed' (by the entry before it)."""
    names, deps_of = graph.name, graph.deps
    real = real_nodes(graph, sched) if real is None else real
    if not len(real):
        return []
    by_end = real[np.lexsort((graph.order[real], sched.end[real]))]  # by end, then edge id, then node
    ends = sched.end[by_end]
    start, end, phony = sched.start, sched.end, graph.phony
    latest: dict[int, int | None] = {}

    def last_real(i: int) -> int | None:
        # latest-finishing real node among i's deps, looking through phony nodes (memoised)
        if not deps_of[i] or i in latest:
            return latest.get(i)
        stack, order = [i], []
        while stack:
            x = stack.pop()
            if x in latest:
                continue
            deps = np.array(deps_of[x], dtype=np.int64)
            order.append((x, deps))
            latest[x] = None  # placeholder
            stack.extend([d for d in deps[phony[deps]].tolist() if d not in latest])
        for x, cands in reversed(order):
            via = phony[cands]
            if via.any():  # a phony dependency stands for its own latest real one, if any
                cands[via] = [-1 if latest.get(d) is None else latest[d] for d in cands[via].tolist()]
                cands = cands[cands >= 0]
            # the first of the latest-ending candidates, as max() picks it
            latest[x] = int(cands[np.argmax(end[cands])]) if len(cands) else None
        return latest[i]

    cur = int(by_end[-1])
    chain = [{"index": cur, "via": "build start"}]
    seen = {cur}
    while start[cur] > eps_ms:
        s = float(start[cur])
        dep = last_real(cur)
        if dep is not None and end[dep] >= s - eps_ms and dep not in seen:
            cur, via = dep, "dependency finished"
        else:
            k = int(ends.searchsorted(s + eps_ms, side="right")) - 1
            while k >= 0 and by_end[k] in seen:
                k -= 1
            if k < 0 or ends[k] < s - max(eps_ms, 50.0):
                break
            cur, via = int(by_end[k]), "job slot freed"
        seen.add(cur)
        # `via` is why the previous entry started: the step we just stepped back to ended
        chain[-1]["via"] = via
        chain.append({"index": cur, "via": "build start"})
    chain.reverse()
    idx = [c["index"] for c in chain]
    return [
        {
            "name": names[i],
            "start_s": r3(st / 1000.0),
            "end_s": r3(en / 1000.0),
            "elapsed_s": r3((en - st) / 1000.0),
            "started_when": c["via"],
        }
        for i, st, en, c in zip(idx, start[idx].tolist(), end[idx].tolist(), chain)
    ]


def critical_step(chain: list[dict]) -> dict | None:
    """The longest step on the critical chain: the one that bounds the build."""
    if not chain:
        return None
    best = max(chain, key=lambda c: (c["elapsed_s"], c["name"]))
    return {"name": best["name"], "elapsed_s": best["elapsed_s"], "start_s": best["start_s"], "end_s": best["end_s"]}


def bounds(graph: Graph, work, jobs: int) -> dict:
    """Lower bounds on the wall: the longest dependency path (infinite -j) and work / jobs."""
    work = np.asarray(work, dtype=np.float64)
    finish = np.where(graph.phony, 0.0, work)
    for lv in levels(graph):
        finish[lv.user[lv.first]] += np.maximum.reduceat(finish[lv.dep], lv.first)
    total = sum_in_order(work[~graph.phony])
    return {
        "critical_path_s": r3((float(finish.max()) if len(finish) else 0.0) / 1000.0),
        "work_s": r3(total / 1000.0 / jobs) if jobs > 0 else 0.0,
    }
