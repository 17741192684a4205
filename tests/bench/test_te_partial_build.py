"""bench/te_partial_build.py (issue 14's paired sm_100a build, original cut short): the measured
lower bound from ninja's progress, which unfinished edges began with ninja, the estimate from an
unfinished TU's own phases, and the replay of the completed log — on a small build worked by hand."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("te_partial_build", ROOT / "bench" / "te_partial_build.py")
pb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pb)

O = "CMakeFiles/t.dir/{}.o"
HEADER = "source file name , phase name , phase input files , phase output file , arch , tool, metric , unit\n"


def _row(tu: str, phase: str, arch: str, ms: float) -> str:
    return f"{tu} , {phase} , {tu} , x , {arch} , nvcc , {ms} , ms\n"


def _log(entries: list[tuple[int, int, str]]) -> str:
    return "# ninja log v7\n" + "".join(f"{s}\t{e}\t0\t{o}\tab\n" for s, e, o in entries)


def _dataset(d: Path, *, late_first_row: bool = False) -> Path:
    """-j 2: a.cu and big.cu start at once; a.cu ends at 10 s, then c.cu runs 10-30 s. big.cu
    compiles two arch pipelines one after the other: 100a (cicc 40 + ptxas 20 s) done, 103a not.
    Polls: 12:00:15 shows 1 finished, 12:00:35 shows 2, 12:01:00 still 2 (the cut)."""
    d.mkdir()
    (d / "migrated.ninja_log").write_text(_log([(0, 4000, O.format("a.cu")), (0, 6000, O.format("big.cu")),
                                                (4000, 7000, O.format("c.cu")), (7000, 8000, "lib.so")]))
    (d / "original.partial.ninja_log").write_text(_log([(3, 10000, O.format("a.cu")),
                                                        (10000, 30000, O.format("c.cu"))]))
    big = [_row("big.cu", "g++ (preprocessing 1)", "compute_100a", 500), _row("big.cu", "g++ (preprocessing 1)",
           "compute_103a", 500), _row("big.cu", "cicc", "compute_100a", 40000),
           _row("big.cu", "ptxas", "sm_100a", 20000)]
    a = [_row("a.cu", "cicc", "compute_90", 9000)]
    c = [_row("c.cu", "cicc", "compute_90", 19000)]
    rows = (a + c + big) if late_first_row else (big[:1] + a + big[1:2] + c + big[2:])
    with gzip.open(d / "original.partial.nvcc_time.csv.gz", "wt") as f:
        f.write(HEADER + "".join(rows))
    with gzip.open(d / "migrated.nvcc_time.csv.gz", "wt") as f:
        f.write(HEADER + _row("big.cu", "g++ (compiling)", "compute_103a", 5000))
    (d / "original.progress.txt").write_text("# polls\n12:00:05 -\n12:00:15 1\n12:00:35 2\n12:01:00 2\n")
    (d / "build-migrated.json").write_text(json.dumps({
        "build": {"wall_s": 8.0, "cpu_s": 14.0}, "configure": {"wall_s": 1.0},
        "environment": {"gpu": "GPU", "nvcc": "nvcc", "cpus": 2, "date": "2026-12-02", "commit": "abc1234"}}))
    return d


def test_lower_bound_is_the_last_poll_minus_ninja_latest_start():
    # a.cu ended at 10 s, no later than 12:00:15 -> ninja began no later than 12:00:05;
    # c.cu ended at 30 s, no later than 12:00:35 -> no later than 12:00:05 again. Last poll 12:01:00.
    b = pb.elapsed_lower_bound([10000, 30000], [(43215, 1), (43235, 2), (43260, 2)])
    assert b["latest_start_s_of_day"] == 43205
    assert b["elapsed_lower_bound_s"] == 55.0


def test_estimate_prices_the_missing_pipeline_as_the_finished_one_and_adds_the_host():
    rows = [{"row": 0, "phase": "cicc", "arch": "compute_100a", "s": 40.0},
            {"row": 1, "phase": "ptxas", "arch": "sm_100a", "s": 20.0},
            {"row": 2, "phase": "cudafe++", "arch": "compute_103a", "s": 1.0}]
    est, how = pb.estimate(rows, 5.0)
    assert est == pytest.approx(61.0 + 60.0 + 5.0)
    assert "103a" in how
    # cicc of the second arch already done: only its ptxas share is missing
    est2, _ = pb.estimate(rows + [{"row": 3, "phase": "cicc", "arch": "compute_103a", "s": 45.0}], None)
    assert est2 == pytest.approx(106.0 + 15.0)
    # nothing finished: the phases done are all we know
    assert pb.estimate(rows[2:], 5.0) == (1.0, "lower bound only: no arch pipeline had finished")


def test_pipeline_ratios_only_over_tus_with_both_pipelines_finished():
    both = [{"phase": "cicc", "arch": "compute_100a", "s": 100.0}, {"phase": "ptxas", "arch": "sm_100a", "s": 100.0},
            {"phase": "cicc", "arch": "compute_103a", "s": 150.0}, {"phase": "ptxas", "arch": "sm_103a", "s": 70.0}]
    half = both[:3]                      # 103a's ptxas not done: not a comparison
    small = [dict(r, s=1.0) for r in both]  # under the 100 s floor
    r = pb.pipeline_ratios({"a.cu": both, "b.cu": half, "c.cu": small})
    assert r == {"tus": 1, "min": 1.1, "median": 1.1, "max": 1.1, "min_first_pipeline_s": 100.0}
    assert pb.pipeline_ratios({"b.cu": half}) is None


def test_whole_run_measured_bound_estimate_and_replay(tmp_path):
    d = _dataset(tmp_path / "in")
    assert pb.main([str(d), "--jobs", "2", "--label", "x", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "x.json").read_text())
    m = doc["original_measured"]
    assert m["elapsed_lower_bound_s"] == 55.0
    assert m["unfinished_began_with_ninja"] == [O.format("big.cu")]
    assert doc["wall_change_measured_at_most_pct"] == round(100 * (8.0 / 55.0 - 1), 1)
    big = next(r for r in doc["per_tu"] if r["edge"] == O.format("big.cu"))
    # done 61 s, 103a priced as 100a (60 s), host as the migrated TU's (5 s); at least 55 s
    assert big["original_at_least_s"] == 55.0 and big["original_estimate_s"] == 126.0
    # replay at -j 2: big.cu 0-126 s beside a.cu and c.cu, then the link priced as the migrated one (1 s)
    assert doc["original_estimated"]["replayed_wall_s"] == pytest.approx(127.0, abs=0.01)
    assert doc["migrated"]["replayed_wall_s"] == pytest.approx(8.0, abs=0.01)
    md = (tmp_path / "x.md").read_text()
    assert "≥ 55.0 s" in md and "(estimate)" in md


def test_refuses_to_guess_which_edge_began_with_ninja(tmp_path):
    # big.cu's first nvcc row after c.cu's, which started only when a.cu ended: no way to tell
    d = _dataset(tmp_path / "in", late_first_row=True)
    with pytest.raises(SystemExit, match="cannot tell whether"):
        pb.main([str(d), "--jobs", "2", "--label", "x", "--out", str(tmp_path)])
