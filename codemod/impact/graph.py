"""The replay graph: one node per logged step (plus phony nodes), with dependencies and the edge
order ninja breaks ties with. From build.ninja when given, else recovered from the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

from .build_ninja import Manifest
from .ninja_log import LINK_SUFFIXES, Step, is_link_output


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


@dataclass
class Graph:
    nodes: list[Node]
    pools: dict[str, int]
    source: str  # "build.ninja" or "log"
    warnings: list[str] = field(default_factory=list)
    _topo: list[int] | None = field(default=None, repr=False)
    _users: list[list[int]] | None = field(default=None, repr=False)
    _ranks: dict = field(default_factory=dict, repr=False)  # policy -> ready-queue ranks (replay.py)

    def steps(self) -> list[Node]:
        return [n for n in self.nodes if n.step is not None]

    def users(self) -> list[list[int]]:
        """Dependents of each node (cached: nodes and dependencies do not change after construction)."""
        if self._users is None:
            users: list = [()] * len(self.nodes)  # most nodes have no dependents: share one tuple
            for node in self.nodes:
                for d in node.deps:
                    if users[d]:
                        users[d].append(node.index)
                    else:
                        users[d] = [node.index]
            self._users = users
        return self._users


def from_log(steps: list[Step], cycle_starts: list[int] | None = None) -> Graph:
    """Order = start order in the log (ninja starts ready edges in priority order, which for a flat
    build is manifest order). Dependencies: a link/archive step depends on every step that ended at
    or before its start (through a chain of phony barriers, O(n)); other steps are independent.
    With several cycles (manifest regenerated), steps of a cycle wait for all of the previous one:
    `cycle_starts` holds the (offset) start of each cycle after the first.
    """
    ordered = sorted(sorted(steps, key=attrgetter("lineno")), key=attrgetter("start_ms"))  # (start, line)
    nodes = [Node(i, s.outputs[0], float(s.end_ms - s.start_ms), False, "", [], i, s) for i, s in enumerate(ordered)]
    for boundary in cycle_starts or []:
        before = [n.index for n in nodes[: len(ordered)] if n.step.end_ms <= boundary]
        b = Node(len(nodes), f"<cycle boundary at {boundary} ms>", 0.0, phony=True, order=len(nodes), deps=before)
        nodes.append(b)
        for n in nodes[: len(ordered)]:
            if n.step.start_ms >= boundary:
                n.deps.append(b.index)
    # step nodes are in (start, index) order already; cycle boundaries have no step
    stepped = nodes[: len(ordered)]
    links = [n for n in stepped if (n.name.endswith(LINK_SUFFIXES) or ".so." in n.name) and is_link_output(n.name)]
    if links:
        by_end = sorted(stepped, key=lambda n: n.step.end_ms)  # stable: ties keep index order
        cut, barrier = 0, None
        for link in links:
            new_deps = []
            while cut < len(by_end) and by_end[cut].step.end_ms <= link.step.start_ms:
                if by_end[cut] is not link:
                    new_deps.append(by_end[cut].index)
                cut += 1
            if new_deps or barrier is None:
                b = Node(len(nodes), f"<barrier before {link.name}>", 0.0, phony=True, order=len(nodes))
                b.deps = new_deps + ([barrier] if barrier is not None else [])
                nodes.append(b)
                barrier = b.index
            link.deps.append(barrier)
    return Graph(nodes, {"console": 1}, "log")


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
    return Graph(nodes, dict(manifest.pools), "build.ninja", warnings)


def _roots(manifest: Manifest) -> list[str]:
    consumed = {i for e in manifest.edges for i in e.inputs}
    return [o for e in manifest.edges for o in e.outputs if o not in consumed]


def topo_order(graph: Graph) -> list[int]:
    """Kahn's algorithm; a cycle would leave nodes out, so callers can check the length.
    Cached on the graph: the node set and dependencies do not change after construction."""
    if graph._topo is None:
        graph._topo = _kahn(graph)
    return graph._topo


def _kahn(graph: Graph) -> list[int]:
    indeg = [len(node.deps) for node in graph.nodes]
    users = graph.users()
    order = [i for i, k in enumerate(indeg) if k == 0]
    head = 0
    while head < len(order):
        i = order[head]
        head += 1
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                order.append(u)
    return order
