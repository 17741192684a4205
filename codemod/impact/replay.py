"""Discrete-event replay of ninja's build loop (docs/impact.md, "Replay").

On each completion: free the job slot (and pool slot), mark dependents ready, then start ready
edges in priority order while slots are free. The priority is the ready-queue order of the ninja
version (options.POLICIES). CPU contention is processor sharing over `cores`: with n jobs running
each progresses at min(1, cores/n) / (1 + alpha * (n-1)/cores) of full speed; a job's work is what it
did at the concurrency it was recorded at. With cores=None durations are replayed as recorded.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from .graph import Graph, levels
from .options import POLICIES


@dataclass
class Contention:
    cores: int | None = None
    alpha: float = 0.0

    def rates(self, n: np.ndarray) -> np.ndarray:
        """Speed of each job with n[k] jobs running (1 when the model is off or nothing runs)."""
        n = np.asarray(n, dtype=np.int64)
        if self.cores is None:
            return np.ones(n.shape)
        share = np.minimum(1.0, self.cores / np.maximum(n, 1))
        return np.where(n > 0, share / (1.0 + self.alpha * np.maximum(0, n - 1) / self.cores), 1.0)


@dataclass
class Schedule:
    """Start and end (ms) of every node (float64 arrays); phony nodes have start == end."""

    start: np.ndarray
    end: np.ndarray
    jobs: int

    @property
    def wall_ms(self) -> float:
        return float(self.end.max()) if len(self.end) else 0.0


def _weights(graph: Graph, policy: str, durations) -> np.ndarray:
    """w(e) = H(e) + max over consumers w(c): heaviest path from e to the targets (ninja's
    ComputeCriticalPath), H = 0 for phony, 1 (1.12) or the previous duration in ms (master)."""
    if policy not in POLICIES:
        raise UsageError(f"unknown scheduling policy {policy!r}", hint=f"use one of {', '.join(POLICIES)}")
    h = np.where(graph.phony, 0.0, 1.0 if policy == "1.12" else np.maximum(1.0, durations))
    w = h.copy()
    for lv in reversed(levels(graph)):  # a level's users have their final weight: theirs are higher
        np.maximum.at(w, lv.dep, w[lv.user] + h[lv.dep])
    return w


def ranks(graph: Graph, policy: str, durations) -> tuple[np.ndarray, np.ndarray]:
    """Position of each node in the ready-queue order (0 pops first; equal keys go to the lower
    node index), and the node at each position. Cached on the graph for the policies that do not
    depend on durations."""
    cacheable = policy in ("1.11", "1.12")
    if cacheable and policy in graph._ranks:
        return graph._ranks[policy]
    if policy == "1.11":
        node_at = np.argsort(graph.order, kind="stable")
    else:  # by weight (heaviest first), then edge id
        node_at = np.lexsort((graph.order, -_weights(graph, policy, durations)))
    rank = np.empty_like(node_at)
    rank[node_at] = np.arange(len(node_at))
    if cacheable:
        graph._ranks[policy] = (rank, node_at)
    return rank, node_at


def replay(graph: Graph, work, jobs: int, policy: str, contention: Contention | None = None) -> Schedule:
    """Simulate `ninja -j jobs` (0 = unlimited) over `graph` with per-node work in ms.
    Heaps of ints (ready ranks) and of (virtual finish, node): O(n log n) for n nodes."""
    contention = contention or Contention()
    n = len(graph)
    rank, node_at = ranks(graph, policy, work)
    users = graph.users()
    waiting = np.fromiter(map(len, graph.deps), np.int64, n)
    work = np.asarray(work, dtype=np.float64)
    instant = graph.phony | (work <= 0)
    # NOTE: the ready queue is the nodes ready from the start (a sorted list, read in order) merged
    # with a heap of those that become ready later: most nodes of a big build never enter the heap
    first = np.sort(rank[waiting == 0])
    seq = node_at[first]  # the initially ready nodes, in queue order
    instant_at = np.flatnonzero(instant[seq]).tolist()  # positions in seq of those that take no slot
    # the loop reads Python lists: indexing one is several times faster than indexing an array
    first, seq, rank, node_at, waiting, work, instant = (
        a.tolist() for a in (first, seq, rank, node_at, waiting, work, instant))
    nfirst, p = len(first), 0
    late: list[int] = []
    pools = graph.pools
    pool_use: dict[str, int] = {}
    delayed: dict[str, list] = {}
    running: list[tuple[float, int]] = []  # (virtual finish, node)
    nrun = 0
    t = 0.0
    v = 0.0  # virtual clock: work done by any one running job since t=0 (= t without contention)
    capacity = jobs if jobs > 0 else n + 1
    done = 0
    # speed with k jobs running, for k up to capacity
    rate = contention.rates(np.arange(capacity + 1)).tolist() if contention.cores is not None else None
    start = [0.0] * n
    end = [0.0] * n
    pool_of = graph.pool
    heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
    # NOTE: a completed job stays on top of `running` until the next start replaces it
    # (heapreplace: one sift instead of a pop and a push)
    pending = False
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
        # NOTE: without contention the clock is the virtual clock itself, with contention it
        # advances by (vf - v) / rate
        t = vf if rate is None else t + (vf - v) / rate[nrun]
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
            # NOTE: the usual event of a big build, without the general bookkeeping: the next
            # initially ready node takes the freed slot, then the next job ends. Valid while that
            # node comes before every late one in the queue and takes a slot, and until a node
            # becomes ready.
            stop = bisect_left(first, late[0], p) if late else nfirst
            k = bisect_left(instant_at, p)
            if k < len(instant_at):
                stop = min(stop, instant_at[k])
            q, ready = p - 1, False
            for q in range(p, stop):
                j = seq[q]
                start[j] = v
                heapreplace(running, (v + work[j], j))
                v, i = running[0]
                end[i] = v
                for u in users[i]:
                    waiting[u] -= 1
                    if not waiting[u]:
                        heappush(late, rank[u])
                        ready = True
                if ready:
                    break
            done += q + 1 - p
            p = q + 1
            t = v
    return Schedule(np.array(start), np.array(end), jobs)


def recorded_work(starts, ends, contention: Contention) -> np.ndarray:
    """Work (ms at full speed) each recorded step did, under the contention model, given the
    recorded concurrency. Identity when the model is off."""
    starts, ends = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    if contention.cores is None:
        return ends - starts
    times, counts = concurrency_steps(starts, ends)
    if not len(times):
        return np.zeros(len(starts))
    rates = contention.rates(counts)
    # R(t) = integral of rate(n(s)) ds at each change point
    integral = np.concatenate([[0.0], np.cumsum(np.diff(times) * rates[:-1])])

    def at(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(times, x, side="right") - 1
        return np.where(k < 0, 0.0, integral[k] + (x - times[k]) * rates[k])

    return at(ends) - at(starts)


def concurrency_steps(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Change points of the number of running jobs: counts[k] holds on [times[k], times[k+1]).
    Zero-length intervals are ignored; an end and a start at one instant do not overlap.
    NOTE: one stable sort of all start and end events, no event loop: after the j-th event
    (0-based) in time order, with s of them starts, 2s - (j + 1) jobs run; an instant's count is
    the one after its last event."""
    starts, ends = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    live = starts < ends
    n = int(np.count_nonzero(live))
    if not n:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    ts = np.concatenate([starts[live], ends[live]])
    perm = np.argsort(ts, kind="stable")
    t_sorted = ts[perm]
    n_starts = np.cumsum(perm < n)  # starts among the first j + 1 events
    last = np.flatnonzero(np.append(t_sorted[1:] != t_sorted[:-1], True))  # each instant's last event
    return t_sorted[last], 2 * n_starts[last] - (last + 1)
