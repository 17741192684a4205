"""One prediction model (issue 32, acceptance 3): for the same rule and build log, `analyze`,
`apply` and `impact --what-if` print the same predicted wall, the same what-if named, at the same
-j and policy, with the measured error beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from codemod.apply.golden import GOLDEN
from codemod.cli import main
from tests.apply.test_build_order import _ninja_log, _nvcc_csv

TE_LOG = GOLDEN / "impact" / "te_sm90_j16"
# actlib's TUs at -j2 with the wall set by activation/gelu.cu (the longest, mostly device code)
BUILD = [("activation/gelu.cu", 200, 20, 180), ("activation/relu.cu", 40, 10, 30), ("util/rtc.cpp", 30, None, None),
         ("activation/swiglu.cu", 40, 10, 30), ("activation/gelu_dbias.cu", 40, 10, 30), ("cast/cast.cu", 30, 8, 22),
         ("dequantize/dequantize.cu", 30, 10, 20)]
LINE = re.compile(r"predicted build: ([\d.]+) s \((what-if: [^;]+); ninja -j(\d+) \(([^)]*)\), policy (\S+)\); "
                  r"error: replay ±([\d.]+)%, prediction ")


def _rule(tmp_path: Path) -> str:
    """actlib's rule without unary_grad_kernel: the activation TUs keep part of their device code,
    so the instantiation-share what-if differs from removing their device phases."""
    data = yaml.safe_load((GOLDEN / "actlib" / "activation.yaml").read_text())
    data["migrate"]["kernels"].remove("actlib::unary_grad_kernel")
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _line(text: str) -> tuple:
    found = LINE.findall(text)
    assert len(found) == 1, text
    return found[0]


@pytest.mark.parametrize("log_kind", ["synthetic_actlib", "te_sm90_j16"])
def test_analyze_apply_and_impact_print_the_same_prediction(actlib_git, tmp_path, capsys, monkeypatch, log_kind):
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    if log_kind == "te_sm90_j16":       # TE's real log: activation/gelu.cu, relu.cu, swiglu.cu, cast/cast.cu
        log, csv = TE_LOG / "te_sm90_j16.ninja_log", TE_LOG / "te_sm90_j16.nvcc_time.csv"
    else:                               # actlib's own TUs at -j2, the wall set by the activation TUs
        log, csv = tmp_path / "actlib.ninja_log", tmp_path / "actlib.nvcc_time.csv"
        log.write_text(_ninja_log(BUILD))
        csv.write_text(_nvcc_csv(BUILD))
    rule = _rule(tmp_path)
    inputs = ["--build-log", str(log), "--nvcc-time", str(csv)]

    analysis = tmp_path / "analysis.json"
    assert main(["analyze", str(actlib_git), "--target", rule, *inputs, "--json", str(analysis), "-q"]) == 0
    analyzed = _line(capsys.readouterr().out)

    diff = tmp_path / "m.diff"
    assert main(["apply", "--target", rule, str(actlib_git), *inputs, "--diff", str(diff), "--no-precheck",
                 "-q"]) == 0
    applied = _line(capsys.readouterr().err)
    assert Path(f"{diff}.what_if.json").is_file()
    assert "## Predicted build" in Path(f"{diff}.report.md").read_text()

    priced = []
    for source in (Path(f"{diff}.what_if.json"), analysis):
        assert main(["impact", str(log), "--nvcc-time", str(csv), "--what-if", str(source)]) == 0
        priced.append(_line(capsys.readouterr().out))

    assert analyzed == applied == priced[0] == priced[1]
    wall, what_if, jobs, _, policy, replay_error = analyzed
    assert what_if == "what-if: instantiation_share of 6 migrated kernel(s) in 5 TU(s)"
    assert float(replay_error) > 0

    import json

    impact = json.loads(analysis.read_text())["impact"]
    assert float(wall) == round(impact["predicted_wall_s"], 1)
    if log_kind == "synthetic_actlib":
        # the models differ here, so the shared number is the instantiation-share one, not device_removed
        assert impact["instantiation_share"]["predicted_wall_s"] != impact["device_removed"]["predicted_wall_s"]
        assert (jobs, policy) == ("2", "1.12")


def test_globs_name_their_what_if(capsys):
    log = TE_LOG / "te_sm90_j16.ninja_log"
    assert main(["impact", str(log), "--remove", "activation/*.cu"]) == 0
    wall, what_if, jobs, source, _, _ = _line(capsys.readouterr().out)
    assert (wall, what_if, jobs) == ("369.6", "what-if: 1 glob(s) removed: activation/*.cu", "16")
    assert source == "peak concurrency of the recorded build"


def test_what_if_and_globs_together_are_refused(tmp_path, capsys):
    source = tmp_path / "w.json"
    source.write_text('{"what_if": {"remove": [], "scale": {"*/activation/gelu.cu.o": 0.5}}}')
    log = TE_LOG / "te_sm90_j16.ninja_log"
    assert main(["impact", str(log), "--what-if", str(source), "--remove", "activation/*.cu"]) == 2
    assert "--what-if is the whole what-if" in capsys.readouterr().err
    source.write_text('{"what_if": {"scale": {"*/activation/gelu.cu.o": -1}}}')
    assert main(["impact", str(log), "--what-if", str(source)]) == 2
    assert "`scale` an object of glob: factor" in capsys.readouterr().err
