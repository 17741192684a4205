"""Discrete-event replay of ninja's build loop (docs/impact.md, "Replay").

On each completion: free the job slot (and pool slot), mark dependents ready, then start ready
edges in priority order while slots are free. The priority is the ready-queue order of the ninja
version (POLICIES). CPU contention is processor sharing over `cores`: with n jobs running each
progresses at min(1, cores/n) / (1 + alpha * (n-1)/cores) of full speed; a job's work is what it
did at the concurrency it was recorded at. With cores=None durations are replayed as recorded.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from itertools import accumulate, compress, repeat
from operator import gt, le, lt, mul, ne, neg, not_, or_, sub
from dataclasses import dataclass

from ..errors import UsageError
from .graph import Graph, topo_order

# policy -> ninja versions it models
POLICIES = {
    "1.11": "ninja <= 1.11: ready edges in manifest order (edge id)",
    "1.12": "ninja 1.12-1.13: critical path with every non-phony edge weighing 1, ties to lower id",
    "master": "ninja master (PR #2686): critical path weighted by previous durations, ties to lower id",
}
POLICY_FOR_LOG_VERSION = {5: "1.11", 6: "1.12", 7: "1.12"}


@dataclass
class Contention:
    cores: int | None = None
    alpha: float = 0.0

    def rate(self, n: int) -> float:
        if self.cores is None or n <= 0:
            return 1.0
        share = min(1.0, self.cores / n)
        return share / (1.0 + self.alpha * max(0, n - 1) / self.cores)


@dataclass
class Schedule:
    """Start and end (ms) of every node; phony nodes have start == end."""

    start: list[float]
    end: list[float]
    jobs: int

    @property
    def wall_ms(self) -> float:
        return max(self.end, default=0.0)


def priorities(graph: Graph, policy: str, durations: list[float]) -> list[tuple]:
    """Ready-queue key per node (smaller pops first)."""
    if policy == "1.11":
        return [(o,) for o in graph.order]
    return list(zip(map(neg, _weights(graph, policy, durations)), graph.order))


def _weights(graph: Graph, policy: str, durations: list[float]) -> list[float]:
    """w(e) = H(e) + max over consumers w(c): heaviest path from e to the targets (ninja's
    ComputeCriticalPath), H = 0 for phony, 1 (1.12) or the previous duration in ms (master)."""
    if policy not in POLICIES:
        raise UsageError(f"unknown scheduling policy {policy!r}", hint=f"use one of {', '.join(POLICIES)}")
    phony, deps = graph.phony, graph.deps
    if policy == "1.12":
        h = [0.0 if p else 1.0 for p in phony]
    else:
        h = [0.0 if p else max(1.0, d) for p, d in zip(phony, durations)]
    w = list(h)
    topo = topo_order(graph)
    # only nodes with dependencies raise anyone's weight
    for i in compress(reversed(topo), map(deps.__getitem__, reversed(topo))):
        wi = w[i]
        for d in deps[i]:
            cand = wi + h[d]
            if cand > w[d]:
                w[d] = cand
    return w


def ranks(graph: Graph, policy: str, durations: list[float]) -> tuple[list[int], list[int]]:
    """Position of each node in the ready-queue order (0 pops first; equal keys go to the lower
    node index), and the node at each position. Cached on the graph for the policies that do not
    depend on durations. NOTE: two stable sorts of int ids (by edge id, then by weight) instead of
    one sort of key tuples."""
    cacheable = policy in ("1.11", "1.12")
    if cacheable and policy in graph._ranks:
        return graph._ranks[policy]
    n = len(graph.order)
    order = graph.order
    node_at = list(range(n))
    if any(map(gt, order[:-1], order[1:])):
        node_at.sort(key=order.__getitem__)
    if policy != "1.11":
        negw = list(map(neg, _weights(graph, policy, durations)))
        node_at.sort(key=negw.__getitem__)
    rank = [0] * n
    for r, i in enumerate(node_at):
        rank[i] = r
    if cacheable:
        graph._ranks[policy] = (rank, node_at)
    return rank, node_at


def replay(graph: Graph, work: list[float], jobs: int, policy: str,
           contention: Contention | None = None) -> Schedule:
    """Simulate `ninja -j jobs` (0 = unlimited) over `graph` with per-node work in ms.
    Heaps of ints (ready ranks) and of (virtual finish, node): O(n log n) for n nodes."""
    contention = contention or Contention()
    n = len(graph.order)
    rank, node_at = ranks(graph, policy, work)
    users = graph.users()
    waiting = list(map(len, graph.deps))
    start = [0.0] * n
    end = [0.0] * n
    # NOTE: the ready queue is the nodes ready from the start (a sorted list, read in order) merged
    # with a heap of those that become ready later: most nodes of a big build never enter the heap
    first = sorted(compress(rank, map(not_, waiting)))
    nfirst, p = len(first), 0
    late: list[int] = []
    pools = graph.pools
    pool_use: dict[str, int] = {}
    delayed: dict[str, list] = {}
    running: list[tuple[float, int]] = []  # (virtual finish, node)
    nrun = 0
    t = 0.0
    v = 0.0  # virtual clock: work done by any one running job since t=0
    capacity = jobs if jobs > 0 else n + 1
    done = 0
    rate = contention.rate if contention.cores is not None else None
    instant = list(map(or_, graph.phony, map(le, work, repeat(0))))
    pool_of = graph.pool
    heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
    # NOTE: a completed job stays on top of `running` until the next start replaces it
    # (heapreplace: one sift instead of a pop and a push)
    pending = False
    seq = list(map(node_at.__getitem__, first))  # initially ready nodes, in queue order
    fast = rate is None and not any(pool_of)

    while done < n:
        while nrun < capacity:
            if late:
                if p < nfirst and first[p] < late[0]:
                    i = node_at[first[p]]
                    p += 1
                else:
                    i = node_at[heappop(late)]
            elif p < nfirst:
                i = seq[p]
                p += 1
            else:
                break
            if instant[i]:
                start[i] = end[i] = t
                done += 1
                for u in users[i]:
                    waiting[u] -= 1
                    if not waiting[u]:
                        heappush(late, rank[u])
                continue
            pool = pool_of[i]
            if pool:
                depth = pools.get(pool)
                if depth is not None and depth > 0 and pool_use.get(pool, 0) >= depth:
                    heappush(delayed.setdefault(pool, []), rank[i])
                    continue
                pool_use[pool] = pool_use.get(pool, 0) + 1
            start[i] = t
            if pending:
                heapreplace(running, (v + work[i], i))
                pending = False
            else:
                heappush(running, (v + work[i], i))
            nrun += 1
        if pending:
            heappop(running)
            pending = False
        if not nrun:
            if done < n and p >= nfirst and not late:
                raise UsageError("the dependency graph has a cycle; cannot replay")
            continue
        vf, i = running[0]
        pending = True
        # NOTE: t advances by (vf - v) / rate, rate 1 without contention, as in the contended model
        t += (vf - v) / rate(nrun) if rate is not None else (vf - v)
        nrun -= 1
        v = vf
        pool = pool_of[i]
        if pool and pool in pool_use:
            pool_use[pool] -= 1
            if delayed.get(pool):
                heappush(late, heappop(delayed[pool]))
        end[i] = t
        done += 1
        for u in users[i]:
            waiting[u] -= 1
            if not waiting[u]:
                heappush(late, rank[u])
        if fast and nrun == capacity - 1:
            # NOTE: the usual event of a big build, without the general bookkeeping: nothing new
            # is ready, so the next initially ready job takes the freed slot, then the next job ends
            while p < nfirst and not late:
                j = seq[p]
                if instant[j]:
                    break
                p += 1
                start[j] = t
                heapreplace(running, (v + work[j], j))
                vf, i = running[0]
                t += vf - v
                v = vf
                end[i] = t
                done += 1
                for u in users[i]:
                    waiting[u] -= 1
                    if not waiting[u]:
                        heappush(late, rank[u])
    return Schedule(start, end, jobs)


def recorded_work(starts: list[float], ends: list[float], contention: Contention) -> list[float]:
    """Work (ms at full speed) each recorded step did, under the contention model, given the
    recorded concurrency. Identity when the model is off."""
    if contention.cores is None:
        return [e - s for s, e in zip(starts, ends)]
    times, counts = concurrency_steps(starts, ends)
    # R(t) = integral of rate(n(s)) ds at each change point
    integral = [0.0]
    for k in range(1, len(times)):
        integral.append(integral[-1] + (times[k] - times[k - 1]) * contention.rate(counts[k - 1]))

    def at(x: float) -> float:
        k = bisect_right(times, x) - 1
        if k < 0:
            return 0.0
        return integral[k] + (x - times[k]) * contention.rate(counts[k])

    return [at(e) - at(s) for s, e in zip(starts, ends)]


def concurrency_steps(starts: list[float], ends: list[float]) -> tuple[list[float], list[int]]:
    """Change points of the number of running jobs: counts[k] holds on [times[k], times[k+1]).
    Zero-length intervals are ignored; an end and a start at one instant do not overlap.
    NOTE: one sort of all start and end events (C-level), no Python event loop: after the j-th
    event (0-based) in time order, with s of them starts, 2s - (j + 1) jobs run; an instant's count
    is the one after its last event."""
    live = list(map(lt, starts, ends))
    if not all(live):
        starts, ends = list(compress(starts, live)), list(compress(ends, live))
    n = len(starts)
    if not n:
        return [], []
    ts = starts + ends
    perm = sorted(range(2 * n), key=ts.__getitem__)
    t_sorted = list(map(ts.__getitem__, perm))
    n_starts = list(accumulate(map(n.__gt__, perm)))  # starts among the first j + 1 events
    last = list(compress(range(2 * n), map(ne, t_sorted, t_sorted[1:] + [None])))
    return (list(map(t_sorted.__getitem__, last)),
            list(map(sub, map(mul, map(n_starts.__getitem__, last), repeat(2)), map((1).__add__, last))))
