"""scripts/te_ops_results.py on the hand-written res/ folder of test_te_norm_results."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import te_ops_results as O  # noqa: E402

from tests.scripts.test_te_norm_results import _res  # noqa: E402


def test_the_result_names_the_filter_the_failures_and_the_differing_outcomes(tmp_path):
    res = _res(tmp_path)
    out = tmp_path / "ops"
    assert O.main([str(res), "--filter", "*Cast*", "--te-commit", "d0067d0", "--rules", "activation,cast",
                   "--out", str(out)]) == 0
    doc = json.loads(out.with_suffix(".json").read_text())
    assert doc["tests"]["filter"] == "*Cast*" and doc["rules"] == ["activation", "cast"]
    assert doc["tests"]["failed_migrated"] == ["OperatorTest/NormTestSuite.c"]
    assert doc["tests"]["outcome_differences"] == ["OperatorTest/NormTestSuite.c: passed -> failed"]
    assert doc["suites"] == {"NormTestSuite": {"passed": 2, "failed": 0, "skipped": 1}}
    assert "normalization_cpu_s" not in doc["builds"]["original"]
    md = out.with_suffix(".md").read_text()
    assert "**Outcomes that differ between the libraries: 1.**" in md and "/w/build" not in md


def test_a_folder_without_test_results_is_refused(tmp_path, capsys):
    (tmp_path / "stages").write_text("x\n")
    assert O.main([str(tmp_path), "--filter", "*", "--te-commit", "x", "--rules", "a"]) == 2
    assert "not a device_norm.sh res/ folder" in capsys.readouterr().err
