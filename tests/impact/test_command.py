"""`codemod impact` end to end: exit codes, diagnostics, JSON keys, golden document, --against, trace."""

from __future__ import annotations

import difflib
import json

import pytest

from codemod.cli import main
from codemod.impact.command import dumps
from codemod.impact.predict import predict_migration

from .conftest import GOLDEN, TE_CSV, TE_LOG

KEYS = {"schema_version", "measured_wall_s", "replayed_wall_s", "predicted_wall_s", "cpu_s_before", "cpu_s_after",
        "steps", "critical", "summary", "concurrency", "bounds", "nvcc", "options", "inputs", "warnings"}


def test_golden_document(at_repo):
    expected = (GOLDEN / "te_sm90_j16" / "expected_remove_activation_cast.json").read_text()
    actual = dumps(predict_migration(TE_LOG, [TE_CSV], ["activation/*.cu", "cast/*.cu"]))
    diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "expected", "actual", n=1))
    assert not diff, "document changed; if intended run tests/impact/regen_golden.py and review:\n" + diff[:4000]


def test_cli_json_equals_library(at_repo, tmp_path, capsys):
    out = tmp_path / "doc.json"
    rc = main(["impact", TE_LOG, "--nvcc-time", TE_CSV, "--remove", "activation/*.cu", "--remove", "cast/*.cu",
               "--json", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text())
    assert KEYS <= set(doc)
    assert doc == predict_migration(TE_LOG, [TE_CSV], ["activation/*.cu", "cast/*.cu"])
    assert doc["predicted_wall_s"] == 340.145 and doc["cpu_s_before"] == 5413.77 and doc["cpu_s_after"] == 2330.747
    text = capsys.readouterr().out
    assert "predicted wall 340.1 s vs replayed 556.3 s (-38.9%, replay error -0.00%)" in text
    assert "21 steps removed" in text


def test_deterministic_output(at_repo):
    a = dumps(predict_migration(TE_LOG, [TE_CSV], ["activation/*"], {"cast/*.cu": 0.5}, 8))
    b = dumps(predict_migration(TE_LOG, [TE_CSV], ["activation/*"], {"cast/*.cu": 0.5}, 8))
    assert a == b


def test_scale_and_jobs(at_repo):
    doc = predict_migration(TE_LOG, [], [], {"*activation/gelu_grouped.cu.o": 0.5}, 16)
    # gelu_grouped halved (277 s) stops being critical: fused_topk keeps its recorded slot
    # (229.938 -> 510.941 s, nothing before it changed) and the link follows (1.560 s)
    assert doc["critical"]["predicted"]["step"]["name"].endswith("fused_topk_with_score_function.cu.o")
    assert doc["predicted_wall_s"] == pytest.approx(510.941 + 1.560, abs=0.002)
    assert doc["cpu_s_after"] == pytest.approx(5413.77 - 554.711 / 2, abs=0.002)
    unlimited = predict_migration(TE_LOG, [], [], None, 0)
    assert unlimited["predicted_wall_s"] == unlimited["bounds"]["before"]["critical_path_s"]


def test_malformed_log_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.ninja_log"
    bad.write_text("# ninja log v7\n0\t10\t0\ta.o\tab\n5\tfive\t0\tb.o\tcd\n")
    assert main(["impact", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.ninja_log:3: start/end/mtime must be integers" in err
    assert "Traceback" not in err


def test_unknown_glob_is_usage_error(at_repo, capsys):
    assert main(["impact", TE_LOG, "--remove", "nope/*.cu"]) == 2
    assert "no step matches 'nope/*.cu'" in capsys.readouterr().err


def test_bad_scale_is_usage_error(at_repo, capsys):
    assert main(["impact", TE_LOG, "--scale", "activation/*"]) == 2
    assert "--scale expects GLOB=FACTOR" in capsys.readouterr().err


def test_recompacted_log_is_reported(capsys):
    assert main(["impact", str(GOLDEN / "logs" / "v5_recompacted.ninja_log")]) == 2
    assert "no build can be recovered from this log" in capsys.readouterr().err


def test_against(tmp_path, capsys):
    # B: the same build with every activation TU 2.5x slower (as sm_100a + fast math does to gelu.cu)
    src = (GOLDEN / "te_sm90_j16" / "te_sm90_j16.ninja_log").read_text().splitlines(True)
    lines = [src[0]]
    for ln in src[1:]:
        s, e, m, out, h = ln.rstrip("\n").split("\t")
        if "/activation/" in out:
            e = str(int(s) + round((int(e) - int(s)) * 2.5))
        lines.append("\t".join([s, e, m, out, h]) + "\n")
    # keep end times non-decreasing, as ninja writes them
    body = sorted(lines[1:], key=lambda ln: int(ln.split("\t")[1]))
    b = tmp_path / "b.ninja_log"
    b.write_text(lines[0] + "".join(body))
    out = tmp_path / "cmp.json"
    rc = main(["impact", str(GOLDEN / "te_sm90_j16" / "te_sm90_j16.ninja_log"), "--against", str(b), "--json", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text())
    act = [r for r in doc["steps"] if "/activation/" in r["name"]]
    assert len(act) == 16 and all(r["ratio"] == pytest.approx(2.5, abs=0.001) for r in act)
    assert doc["steps"][0]["ratio"] == pytest.approx(2.5, abs=0.001)
    assert all(r["ratio"] == 1.0 for r in doc["steps"] if "/activation/" not in r["name"])
    assert doc["only_in_a"] == doc["only_in_b"] == []
    assert doc["wall_ratio"] == pytest.approx(round((554711 * 2.5 + 4) / 556275, 3), abs=0.002)
    assert "B/A: wall x" in capsys.readouterr().out


def test_trace_export(at_repo, tmp_path):
    out = tmp_path / "t.json"
    assert main(["impact", TE_LOG, "--nvcc-time", TE_CSV, "--remove", "activation/*.cu", "--trace", str(out)]) == 0
    trace = json.loads(out.read_text())
    steps = [e for e in trace["traceEvents"] if e.get("cat") == "step"]
    assert {e["pid"] for e in steps} == {1, 2, 3}
    measured = [e for e in steps if e["pid"] == 1]
    assert len(measured) == 98
    assert max(e["ts"] + e["dur"] for e in measured) == 556275000
    # lanes never overlap
    by_lane: dict = {}
    for e in measured:
        by_lane.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    assert len(by_lane) == 16
    for iv in by_lane.values():
        iv.sort()
        assert all(a[1] <= b[0] for a, b in zip(iv, iv[1:]))
    phases = [e for e in trace["traceEvents"] if e.get("cat") == "nvcc" and e["pid"] == 1]
    assert {e["name"] for e in phases} >= {"cicc", "ptxas", "host_compile"}


def test_build_ninja_graph(capsys):
    rc = main(["impact", str(GOLDEN / "sched" / "ninja_1.13.2.ninja_log"), "--build-ninja",
               str(GOLDEN / "sched" / "build.ninja"), "--ninja-jobs", "2", "--json", "-"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["inputs"]["graph_source"] == "build.ninja"
    assert (doc["measured_wall_s"], doc["replayed_wall_s"]) == (1.64, 1.64)
