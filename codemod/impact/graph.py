"""The replay graph: one node per logged step (plus phony nodes), with dependencies and the edge
order ninja breaks ties with. From build.ninja when given, else recovered from the log.

NOTE: stored column-wise (numpy arrays and lists, nodes are integer ids): a 100k-step log makes no
per-node Python object. `Graph.nodes` gives `Node` views for callers that want them (tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from typing import NamedTuple

import numpy as np

from .build_ninja import Manifest
from .ninja_log import LINK_SUFFIXES, Step, StepTable, is_link_output


@dataclass(slots=True)
class Node:
    index: int
    name: str
    duration_ms: float  # as recorded; 0 for phony and not-logged edges
    phony: bool = False  # completes instantly and takes no job slot
    pool: str = ""
    deps: list[int] = field(default_factory=list)
    order: int = 0  # ninja edge id: ties in the ready queue go to the lowest
    step: Step | None = None


@dataclass(eq=False)
class Graph:
    """Columns, one entry per node: `name`, `duration` (ms, float64), `phony` (bool), `pool`
    ('' = none), `deps` (a list of node ids, or the empty tuple), `order` (ninja edge id, int64),
    `step` (the node's row of `steps`, -1 when not logged). Lists given for the array columns are
    converted."""

    name: list[str]
    duration: np.ndarray
    phony: np.ndarray
    pool: list[str]
    deps: list
    order: np.ndarray
    step: np.ndarray
    steps: StepTable
    pools: dict[str, int]
    source: str  # "build.ninja" or "log"
    warnings: list[str] = field(default_factory=list)
    _levels: list | None = field(default=None, repr=False)
    _users: list | None = field(default=None, repr=False)
    _ranks: dict = field(default_factory=dict, repr=False)  # policy -> ready-queue ranks (replay.py)
    _nodes: list[Node] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.duration = np.asarray(self.duration, dtype=np.float64)
        self.phony = np.asarray(self.phony, dtype=bool)
        self.order = np.asarray(self.order, dtype=np.int64)
        self.step = np.asarray(self.step, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.name)

    @property
    def nodes(self) -> list[Node]:
        """One Node per node (built on first use; read-only views of the columns)."""
        if self._nodes is None:
            steps = [self.steps[k] if k >= 0 else None for k in self.step.tolist()]
            self._nodes = [Node(i, *t) for i, t in enumerate(zip(
                self.name, self.duration.tolist(), self.phony.tolist(), self.pool, map(list, self.deps),
                self.order.tolist(), steps))]
        return self._nodes

    def step_ids(self) -> np.ndarray:
        """The nodes that are logged steps."""
        return np.flatnonzero(self.step >= 0)

    def users(self) -> list:
        """Dependents of each node (cached: nodes and dependencies do not change after construction)."""
        if self._users is None:
            deps = self.deps
            users: list = [()] * len(deps)  # most nodes have no dependents: share one tuple
            for i in compress(range(len(deps)), deps):
                for d in deps[i]:
                    if users[d]:
                        users[d].append(i)
                    else:
                        users[d] = [i]
            self._users = users
        return self._users


def from_log(steps: StepTable | list[Step], cycle_starts: list[int] | None = None) -> Graph:
    """Order = start order in the log (ninja starts ready edges in priority order, which for a flat
    build is manifest order). Dependencies: a link/archive step depends on every step that ended at
    or before its start (through a chain of phony barriers, O(n)); other steps are independent.
    With several cycles (manifest regenerated), steps of a cycle wait for all of the previous one:
    `cycle_starts` holds the (offset) start of each cycle after the first.
    """
    if not isinstance(steps, StepTable):
        steps = StepTable.of(steps)
    m = len(steps)
    perm = np.lexsort((steps.lineno, steps.start_ms))  # by start, then line
    start, end = steps.start_ms[perm], steps.end_ms[perm]
    names = list(map(steps.name.__getitem__, perm.tolist()))
    deps: list = [()] * m
    phony_names: list[str] = []  # phony nodes m, m + 1, ...

    def add_phony(name: str, on: list[int]) -> int:
        phony_names.append(name)
        deps.append(on if on else ())
        return len(deps) - 1

    for boundary in cycle_starts or []:
        b = add_phony(f"<cycle boundary at {boundary} ms>", np.flatnonzero(end <= boundary).tolist())
        for k in np.flatnonzero(start >= boundary).tolist():
            deps[k] = [*deps[k], b]
    # step nodes are in (start, index) order already; cycle boundaries have no step
    links = list(compress(range(m), map(str.endswith, names, repeat(LINK_SUFFIXES))))
    if ".so." in "\n".join(names):
        links = [k for k in range(m) if names[k].endswith(LINK_SUFFIXES) or ".so." in names[k]]
    links = [k for k in links if is_link_output(names[k])]
    if links:
        by_end = np.argsort(end, kind="stable")  # ties keep index order
        cuts = np.searchsorted(end[by_end], start[links], side="right").tolist()
        by_end = by_end.tolist()
        cut, barrier = 0, None
        for link, new_cut in zip(links, cuts):
            new_cut = max(cut, new_cut)
            new_deps = by_end[cut:new_cut]
            if link in new_deps:
                new_deps.remove(link)
            cut = new_cut
            if new_deps or barrier is None:
                barrier = add_phony(f"<barrier before {names[link]}>", new_deps + ([barrier] if barrier is not None else []))
            deps[link] = [*deps[link], barrier]
    n, p = len(deps), len(phony_names)
    return Graph(names + phony_names, np.concatenate([(end - start).astype(np.float64), np.zeros(p)]),
                 np.arange(n) >= m, [""] * n, deps, np.arange(n), np.concatenate([perm, np.full(p, -1)]),
                 steps, {"console": 1}, "log")


def from_manifest(manifest: Manifest, steps: StepTable) -> Graph:
    """Edges reachable from the default targets (all roots when none), ids from the manifest.
    Logged steps get their durations; phony and not-logged edges take no time and no slot.
    """
    producer = manifest.producers()
    by_output: dict[str, int] = {}  # output -> step
    for k in range(len(steps)):
        for o in steps.outputs(k):
            by_output[o] = k
    elapsed = (steps.end_ms - steps.start_ms).tolist()
    targets = manifest.defaults or _roots(manifest)
    wanted: set[int] = set()
    stack = [producer[t] for t in targets if t in producer]
    stack += [producer[o] for o in steps.name if o in producer]
    while stack:
        eid = stack.pop()
        if eid in wanted:
            continue
        wanted.add(eid)
        for i in manifest.edges[eid].inputs:
            p = producer.get(i)
            if p is not None and p not in wanted:
                stack.append(p)
    edges = [edge for edge in manifest.edges if edge.id in wanted]
    index_of = {edge.id: k for k, edge in enumerate(edges)}
    step_of = [next((by_output[o] for o in edge.outputs if o in by_output), -1) for edge in edges]
    missing = sum(1 for edge, k in zip(edges, step_of) if k < 0 and not edge.is_phony)
    deps = [sorted({index_of[producer[i]] for i in edge.inputs if i in producer and producer[i] in index_of}) or ()
            for edge in edges]
    seen_steps = set(step_of)
    extra = sorted((k for k in range(len(steps)) if k not in seen_steps),
                   key=lambda k: (steps.start_ms[k], steps.lineno[k]))  # replayed after the edges
    warnings: list[str] = []
    if missing:
        warnings.append(f"{missing} non-phony edges of build.ninja are not in the log "
                        "(up to date or not built): replayed as taking no time")
    if extra:
        warnings.append(f"{len(extra)} logged steps are not in build.ninja: replayed without dependencies")
    n_edges = len(manifest.edges)
    return Graph([edge.outputs[0] if edge.outputs else f"<edge {edge.id}>" for edge in edges]
                 + [steps.name[k] for k in extra],
                 [float(elapsed[k]) if k >= 0 else 0.0 for k in step_of + extra],
                 [edge.is_phony or k < 0 for edge, k in zip(edges, step_of)] + [False] * len(extra),
                 [edge.pool for edge in edges] + [""] * len(extra), deps + [()] * len(extra),
                 [edge.id for edge in edges] + list(range(n_edges + len(edges), n_edges + len(edges) + len(extra))),
                 step_of + extra, steps, dict(manifest.pools), "build.ninja", warnings)


def prepend(graph: Graph, names: list[str]) -> Graph:
    """`graph` with the nodes named in `names` moved to the front of ninja's edge order, in that
    order (what listing their sources first in the CMake source list does); every other node keeps
    its relative order. Dependencies and durations are shared; cached ranks are not."""
    index = {name: i for i, name in enumerate(graph.name)}
    missing = [n for n in names if n not in index]
    if missing:
        raise ValueError(f"not in the graph: {', '.join(missing)}")
    order = graph.order.copy()
    first = [index[n] for n in names]
    order[first] = int(order.min()) - len(first) + np.arange(len(first))
    return Graph(graph.name, graph.duration, graph.phony, graph.pool, graph.deps, order, graph.step,
                 graph.steps, graph.pools, graph.source, list(graph.warnings), _levels=graph._levels,
                 _users=graph._users)


def _roots(manifest: Manifest) -> list[str]:
    consumed = {i for e in manifest.edges for i in e.inputs}
    return [o for e in manifest.edges for o in e.outputs if o not in consumed]


class Level(NamedTuple):
    """The dependency edges of the nodes of one topological level: edge k makes `user[k]` wait for
    `dep[k]`; users ascending, each one's edges contiguous from `first` (offsets of its first edge)."""

    user: np.ndarray
    dep: np.ndarray
    first: np.ndarray


def levels(graph: Graph) -> list[Level]:
    """The dependency edges grouped by their user's level in Kahn's algorithm (level 0: the nodes
    without dependencies, which have no edges; then each level's nodes depend only on lower ones),
    levels ascending. Nodes on a cycle get no level and their edges are left out. Cached on the
    graph: nodes and dependencies do not change.
    NOTE: level by level with array operations; a per-edge Python loop costs ~4x more on a
    100k-step log."""
    if graph._levels is None:
        graph._levels = _levels(graph)
    return graph._levels


def _levels(graph: Graph) -> list[Level]:
    deps, n = graph.deps, len(graph)
    has = list(compress(range(n), deps))  # nodes with dependencies, ascending
    counts = np.fromiter(map(len, map(deps.__getitem__, has)), np.int64, len(has))
    user = np.repeat(np.array(has, dtype=np.int64), counts)
    dep = np.fromiter(chain.from_iterable(map(deps.__getitem__, has)), np.int64, len(user))
    waiting = np.bincount(user, minlength=n)
    by_dep = user[np.argsort(dep, kind="stable")]  # the users of node d: by_dep[ptr[d]:ptr[d + 1]]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(dep, minlength=n))])
    level_of = np.full(n, -1)
    ready, k = np.flatnonzero(waiting == 0), 0
    while ready.size:
        level_of[ready] = k
        lo, nusers = ptr[ready], ptr[ready + 1] - ptr[ready]
        at = np.repeat(lo - np.cumsum(nusers) + nusers, nusers) + np.arange(nusers.sum())
        users, done = np.unique(by_dep[at], return_counts=True)
        waiting[users] -= done
        ready, k = users[waiting[users] == 0], k + 1
    edge_level = level_of[user]
    order = np.argsort(edge_level, kind="stable")  # keeps users ascending within a level
    cuts = np.searchsorted(edge_level[order], np.arange(1, k + 1))  # where levels 1, 2, ... start
    out = []
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        u, d = user[order[a:b]], dep[order[a:b]]
        out.append(Level(u, d, np.flatnonzero(np.concatenate([[True], u[1:] != u[:-1]]))))
    return out
