"""Replay of ninja's scheduling: version policies on the recorded experiment, the TE build, what-ifs."""

from __future__ import annotations

import pytest

from codemod.impact import build_ninja, graph, ninja_log, replay
from codemod.impact.model import bounds, weighted_times
from codemod.impact.predict import analyse, load, recorded_schedule

from .conftest import GOLDEN, TE_CSV, TE_LOG

SCHED = GOLDEN / "sched"


def sched_replay(log_name, policy):
    log = ninja_log.parse_path(str(SCHED / log_name), log_name)
    manifest = build_ninja.parse_path(str(SCHED / "build.ninja"))
    g = graph.from_manifest(manifest, log.build().cycles[0].steps())
    work = [n.duration_ms for n in g.nodes]
    s = replay.replay(g, work, 2, policy)
    order = sorted((i for i, n in enumerate(g.nodes) if not n.phony), key=lambda i: (s.start[i], i))
    return s, [g.nodes[i].name for i in order], log


def test_manifest_edges_and_ids():
    m = build_ninja.parse_path(str(SCHED / "build.ninja"))
    assert [(e.id, e.outputs, e.inputs, e.rule) for e in m.edges][4:] == [
        (4, ["a1"], [], "fast"), (5, ["a2"], ["a1"], "fast"), (6, ["a3"], ["a2"], "fast"),
        (7, ["all"], ["b1", "b2", "b3", "b4", "a3"], "phony"),
    ]
    assert m.defaults == ["all"]


def test_ninja_1_13_policy_reproduces_recorded_order_and_wall():
    s, order, log = sched_replay("ninja_1.13.2.ninja_log", "1.12")
    starts = dict(zip(order, sorted(s.start[:7])))
    # recorded starts: a1 0, b1 3, a2 209, b2 420, b3 616, b4 1032, a3 1228
    assert starts == {"b1": 0, "a1": 0, "a2": 209, "b2": 420, "b3": 613, "b4": 1032, "a3": 1225}
    assert s.wall_ms == 1640  # recorded: 1640 ms


def test_ninja_1_11_policy_reproduces_recorded_order_and_wall():
    s, order, _ = sched_replay("ninja_1.11.1.ninja_log", "1.11")
    assert order == ["b1", "b2", "b3", "b4", "a1", "a2", "a3"]
    assert s.wall_ms == pytest.approx(1856, abs=10)  # recorded 1856 ms; replay drops fork gaps


def test_wrong_policy_gives_the_other_schedule():
    s, _, _ = sched_replay("ninja_1.13.2.ninja_log", "1.11")
    assert s.wall_ms == 613 + 608 + 209 + 211 + 212  # b1 then b4 in one slot, then the a-chain


def test_te_replay_within_3_percent(at_repo):
    doc = analyse(load(TE_LOG, [TE_CSV]))
    assert doc["options"]["jobs"] == 16 and doc["options"]["policy"] == "1.12"
    assert doc["measured_wall_s"] == 556.275
    assert abs(doc["replay_error_pct"]) <= 3.0
    assert doc["replayed_wall_s"] == pytest.approx(556.275, abs=0.05)  # in fact 4 ms off


def test_te_weighted_time_sums_to_wall(at_repo):
    loaded = load(TE_LOG, [])
    g = graph.from_log(loaded.steps)
    w = weighted_times(recorded_schedule(g, 16))
    assert sum(w) / 1000 == pytest.approx(556.275 - 0.003, abs=0.5)  # busy from 3 ms to the end


def test_removing_non_critical_tu_keeps_wall_and_critical_tu_gives_next_bound(at_repo):
    loaded = load(TE_LOG, [])
    base = analyse(loaded)["replayed_wall_s"]
    assert analyse(loaded, remove=["multi_tensor/adam.cu.o"])["predicted_wall_s"] == base
    doc = analyse(loaded, remove=["activation/gelu_grouped.cu.o"])
    # gelu_grouped's slot is free from t=0, so every later step starts earlier; the build is then
    # bound by fused_topk_with_score_function (281.0 s) followed by the link (1.56 s)
    step = doc["critical"]["predicted"]["step"]
    assert step["name"].endswith("fused_router/fused_topk_with_score_function.cu.o")
    assert doc["predicted_wall_s"] == pytest.approx(step["end_s"] + 1.560, abs=0.002)
    assert step["end_s"] - step["start_s"] == pytest.approx(281.003, abs=0.002)
    assert doc["predicted_wall_s"] > (444185 - 5 + 1560) / 1000  # relu_grouped + link is shorter


def test_replay_within_bounds_and_remove_activations(at_repo):
    doc = analyse(load(TE_LOG, [TE_CSV]), remove=["activation/*.cu"], scale={"cast/*.cu": 0.5})
    for k in ("before", "after"):
        b = doc["bounds"][k]
        wall = doc["replayed_wall_s"] if k == "before" else doc["predicted_wall_s"]
        assert wall >= max(b["critical_path_s"], b["work_s"]) - 1e-6
    removed = [r for r in doc["steps"] if r["action"] == "remove"]
    assert len(removed) == 16 and all("/activation/" in r["name"] for r in removed)
    assert doc["cpu_s_after"] < doc["cpu_s_before"]


def test_processor_sharing_contention():
    steps = [ninja_log.Step(0, 1000, "a", ["a.o"], 2), ninja_log.Step(0, 1000, "b", ["b.o"], 3)]
    g = graph.from_log(steps)
    work = [1000.0, 1000.0]
    # two 1 s jobs on one core share it: both end at 2 s; on two cores at 1 s
    assert replay.replay(g, work, 2, "1.11", replay.Contention(cores=1)).wall_ms == pytest.approx(2000)
    assert replay.replay(g, work, 2, "1.11", replay.Contention(cores=2)).wall_ms == pytest.approx(1000)
    # recorded at -j2 on one core: each did 500 ms of work; replayed at -j1 they run back to back
    rec = replay.recorded_work([0.0, 0.0], [1000.0, 1000.0], replay.Contention(cores=1))
    assert rec == pytest.approx([500.0, 500.0])
    assert replay.replay(g, rec, 1, "1.11", replay.Contention(cores=1)).wall_ms == pytest.approx(1000)


def test_bounds_on_a_known_dag():
    m = build_ninja.parse_path(str(SCHED / "build.ninja"))
    steps = ninja_log.parse_path(str(SCHED / "ninja_1.13.2.ninja_log")).build().cycles[0].steps()
    g = graph.from_manifest(m, steps)
    work = [n.duration_ms for n in g.nodes]
    assert bounds(g, work, 2) == {"critical_path_s": 0.632, "work_s": 1.538}


def test_steps_table_limited_to_longest(at_repo):
    loaded = load(TE_LOG, [TE_CSV])
    full = analyse(loaded, remove=["activation/*.cu"])
    short = analyse(loaded, remove=["activation/*.cu"], max_steps=10)
    # the same document, with steps[] cut to its first rows and the totals said in steps_limited
    assert "steps_limited" not in full
    assert short["steps"] == full["steps"][:10]
    assert short["steps_limited"] == {"listed": 10, "total": 98, "removed": 16, "scaled": 0,
                                      "hint": "--all-steps lists every step"}
    assert {k: v for k, v in short.items() if k not in ("steps", "steps_limited")} == \
        {k: v for k, v in full.items() if k != "steps"}
