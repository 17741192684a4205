"""The replay graph: one node per logged step (plus phony nodes), with dependencies and the edge
order ninja breaks ties with. From build.ninja when given, else recovered from the log.

NOTE: stored column-wise (one list per field, nodes are integer ids): a 100k-step log makes no
per-node Python object. `Graph.nodes` gives `Node` views for callers that want them (tests).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, ge, gt, itemgetter, le, not_, sub

from .build_ninja import Manifest
from .ninja_log import LINK_SUFFIXES, Step, is_link_output

_START, _END, _LINENO, _OUTPUTS = (attrgetter(a) for a in ("start_ms", "end_ms", "lineno", "outputs"))
_FIRST = itemgetter(0)


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
    """Columns, one entry per node: `name`, `duration` (ms), `phony`, `pool` ('' = none), `deps`
    (a list of node ids, or the empty tuple), `order` (ninja edge id), `step` (None when not logged)."""

    name: list[str]
    duration: list[float]
    phony: list[bool]
    pool: list[str]
    deps: list
    order: list[int]
    step: list
    pools: dict[str, int]
    source: str  # "build.ninja" or "log"
    warnings: list[str] = field(default_factory=list)
    _topo: list[int] | None = field(default=None, repr=False)
    _users: list | None = field(default=None, repr=False)
    _ranks: dict = field(default_factory=dict, repr=False)  # policy -> ready-queue ranks (replay.py)
    _nodes: list[Node] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.name)

    @classmethod
    def from_nodes(cls, nodes: list[Node], pools: dict[str, int], source: str, warnings: list[str] | None = None) -> Graph:
        return cls([n.name for n in nodes], [n.duration_ms for n in nodes], [n.phony for n in nodes],
                   [n.pool for n in nodes], [n.deps if n.deps else () for n in nodes], [n.order for n in nodes],
                   [n.step for n in nodes], pools, source, list(warnings or []))

    @property
    def nodes(self) -> list[Node]:
        """One Node per node (built on first use; read-only views of the columns)."""
        if self._nodes is None:
            self._nodes = [Node(i, *t) for i, t in enumerate(zip(self.name, self.duration, self.phony, self.pool,
                                                                    map(list, self.deps), self.order, self.step))]
        return self._nodes

    def step_ids(self) -> list[int]:
        return list(compress(range(len(self.step)), map(bool, self.step)))

    def steps(self) -> list[Node]:
        nodes = self.nodes
        return [nodes[i] for i in self.step_ids()]

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


def from_log(steps: list[Step], cycle_starts: list[int] | None = None) -> Graph:
    """Order = start order in the log (ninja starts ready edges in priority order, which for a flat
    build is manifest order). Dependencies: a link/archive step depends on every step that ended at
    or before its start (through a chain of phony barriers, O(n)); other steps are independent.
    With several cycles (manifest regenerated), steps of a cycle wait for all of the previous one:
    `cycle_starts` holds the (offset) start of each cycle after the first.
    """
    m = len(steps)
    linenos = list(map(_LINENO, steps))
    perm = list(range(m))
    if any(map(gt, linenos[:-1], linenos[1:])):
        perm.sort(key=linenos.__getitem__)
    st = list(map(_START, steps))
    perm.sort(key=st.__getitem__)  # stable: (start, line)
    ordered = list(map(steps.__getitem__, perm))
    start = list(map(st.__getitem__, perm))
    end = list(map(_END, ordered))
    names = list(map(_FIRST, map(_OUTPUTS, ordered)))
    deps: list = [()] * m
    g = Graph(names, list(map(float, map(sub, end, start))), [False] * m, [""] * m, deps, list(range(m)),
              ordered, {"console": 1}, "log")

    def add_phony(name: str, on: list[int]) -> int:
        k = len(g.name)
        g.name.append(name), g.duration.append(0.0), g.phony.append(True), g.pool.append("")
        g.deps.append(on if on else ()), g.order.append(k), g.step.append(None)
        return k

    for boundary in cycle_starts or []:
        before = list(compress(range(m), map(le, end, repeat(boundary))))
        b = add_phony(f"<cycle boundary at {boundary} ms>", before)
        for k in compress(range(m), map(ge, start, repeat(boundary))):
            deps[k] = [*deps[k], b]
    # step nodes are in (start, index) order already; cycle boundaries have no step
    links = list(compress(range(m), map(str.endswith, names, repeat(LINK_SUFFIXES))))
    if any(map(str.__contains__, names, repeat(".so."))):
        links = [k for k in range(m) if names[k].endswith(LINK_SUFFIXES) or ".so." in names[k]]
    links = [k for k in links if is_link_output(names[k])]
    if links:
        by_end = sorted(range(m), key=end.__getitem__)  # stable: ties keep index order
        ends = list(map(end.__getitem__, by_end))
        cut, barrier = 0, None
        for link in links:
            new_cut = max(cut, bisect_right(ends, start[link]))
            new_deps = by_end[cut:new_cut]
            if link in new_deps:
                new_deps.remove(link)
            cut = new_cut
            if new_deps or barrier is None:
                barrier = add_phony(f"<barrier before {names[link]}>", new_deps + ([barrier] if barrier is not None else []))
            deps[link] = [*deps[link], barrier]
    return g


def from_manifest(manifest: Manifest, steps: list[Step]) -> Graph:
    """Edges reachable from the default targets (all roots when none), ids from the manifest.
    Logged steps get their durations; phony and not-logged edges take no time and no slot.
    """
    producer = manifest.producers()
    by_output: dict[str, Step] = {}
    for s in steps:
        for o in s.outputs:
            by_output[o] = s
    targets = manifest.defaults or _roots(manifest)
    wanted: set[int] = set()
    stack = [producer[t] for t in targets if t in producer]
    stack += [producer[o] for s in steps for o in s.outputs[:1] if o in producer]
    while stack:
        eid = stack.pop()
        if eid in wanted:
            continue
        wanted.add(eid)
        for i in manifest.edges[eid].inputs:
            p = producer.get(i)
            if p is not None and p not in wanted:
                stack.append(p)
    index_of: dict[int, int] = {}
    nodes: list[Node] = []
    seen_steps: set[int] = set()
    warnings: list[str] = []
    missing = 0
    for edge in manifest.edges:
        if edge.id not in wanted:
            continue
        step = next((by_output[o] for o in edge.outputs if o in by_output), None)
        if step is not None:
            seen_steps.add(id(step))
        elif not edge.is_phony:
            missing += 1
        node = Node(len(nodes), edge.outputs[0] if edge.outputs else f"<edge {edge.id}>",
                    float(step.elapsed_ms) if step else 0.0, phony=edge.is_phony or step is None,
                    pool=edge.pool, order=edge.id, step=step)
        index_of[edge.id] = node.index
        nodes.append(node)
    for edge in manifest.edges:
        if edge.id not in wanted:
            continue
        node = nodes[index_of[edge.id]]
        deps = {index_of[producer[i]] for i in edge.inputs if i in producer and producer[i] in index_of}
        node.deps = sorted(deps)
    extra = [s for s in steps if id(s) not in seen_steps]
    for s in sorted(extra, key=lambda s: (s.start_ms, s.lineno)):
        nodes.append(Node(len(nodes), s.name, float(s.elapsed_ms), order=len(manifest.edges) + len(nodes), step=s))
    if missing:
        warnings.append(f"{missing} non-phony edges of build.ninja are not in the log "
                        "(up to date or not built): replayed as taking no time")
    if extra:
        warnings.append(f"{len(extra)} logged steps are not in build.ninja: replayed without dependencies")
    return Graph.from_nodes(nodes, dict(manifest.pools), "build.ninja", warnings)


def _roots(manifest: Manifest) -> list[str]:
    consumed = {i for e in manifest.edges for i in e.inputs}
    return [o for e in manifest.edges for o in e.outputs if o not in consumed]


def topo_order(graph: Graph) -> list[int]:
    """A topological order (Kahn's algorithm, level by level); a cycle would leave nodes out, so
    callers can check the length. Cached on the graph: nodes and dependencies do not change."""
    if graph._topo is None:
        graph._topo = _kahn(graph)
    return graph._topo


def _kahn(graph: Graph) -> list[int]:
    indeg = list(map(len, graph.deps))
    users = graph.users()
    level = list(compress(range(len(indeg)), map(not_, indeg)))
    order = list(level)
    while level:
        nxt = []
        # only nodes with dependents do any work
        for i in compress(level, map(users.__getitem__, level)):
            for u in users[i]:
                indeg[u] -= 1
                if not indeg[u]:
                    nxt.append(u)
        order += nxt
        level = nxt
    return order
