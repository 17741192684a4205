"""Driver generation from the golden analysis + rule + profile: the plan, the exact source (golden
file, regenerated only by `python -m codemod.parity.golden --update`), refusals, and an nvcc compile."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.errors import UnsupportedConstruct
from codemod.parity.golden import EXPECTED, golden_driver
from codemod.parity.plan import build_plan, load_profile
from codemod.rule import load_rule

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actlib"


def _plan(profile=None, analysis=None):
    return build_plan(analysis or json.loads((GOLDEN / "expected" / "analysis.json").read_text()),
                      load_rule(str(GOLDEN / "activation.yaml")).raw, profile or load_profile("actlib"),
                      GOLDEN / "input")


def test_plan_takes_migrated_entry_points_from_the_analysis():
    plan = _plan()
    names = [e.name for e in plan.entries]
    # actlib_transpose reaches no migrated kernel; rtc helpers are not C API functions.
    # actlib_dequantize (outside the rule's TUs) reaches unary_kernel: the static fallback is run too.
    assert names == sorted(["actlib_clamped_swiglu", "actlib_dequantize", "actlib_dgelu", "actlib_drelu", "actlib_dswiglu",
                            "actlib_gelu", "actlib_quantize", "actlib_quantize_dbias",
                            "actlib_quantize_dbias_dgelu", "actlib_relu", "actlib_silu", "actlib_swiglu"])
    dbias = next(e for e in plan.entries if e.name == "actlib_quantize_dbias_dgelu")
    assert [(a.name, a.role) for a in dbias.args] == [
        ("grad", "input"), ("input", "input"), ("output", "output"), ("dbias", "dbias"),
        ("workspace", "workspace"), ("stream", "stream")]
    assert dbias.kernels == ["actlib::cast_fp8_kernel", "actlib::reduce_dbias_kernel"]
    dswiglu = next(e for e in plan.entries if e.name == "actlib_dswiglu")
    assert {a.name: a.shape for a in dswiglu.args if a.role != "stream"} == {
        "grad": (1, 1), "input": (1, 2), "output": (1, 2)}
    clamped = next(e for e in plan.entries if e.name == "actlib_clamped_swiglu")
    assert [a.value for a in clamped.args if a.role == "scalar"] == ["7.0f", "1.702f"]
    assert len(plan.formats) == 14 and plan.input_dtypes == ["fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2"]
    dequantize = next(e for e in plan.entries if e.name == "actlib_dequantize")
    assert dequantize.inputs == ["fp8e4m3", "fp8e5m2"] and dswiglu.inputs == ["fp32", "fp16", "bf16"]


def test_not_called_entries_are_listed_with_their_reason(tmp_path):
    """A profile's not_called pattern keeps an entry point out of the driver, but the plan (and
    with it the result and the report) names it, the kernels it reaches and why."""
    profile = load_profile("actlib")
    profile.data["not_called"] = [{"match": "^actlib_dequantize$", "why": "exercised elsewhere"}]
    plan = _plan(profile)
    assert "actlib_dequantize" not in [e.name for e in plan.entries]
    assert plan.not_called == [{"name": "actlib_dequantize", "kernels": ["actlib::unary_kernel"],
                                "why": "exercised elsewhere"}]
    assert json.loads(plan.to_json())["not_called"] == plan.not_called
    assert "not_called" not in json.loads(_plan().to_json())   # plans without it keep their JSON
    profile.data["not_called"] = [{"match": "^actlib_dequantize$"}]
    with pytest.raises(Exception, match="not_called"):
        _plan(profile)


def test_generated_driver_matches_golden():
    text = golden_driver()
    expected = EXPECTED.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "expected",
                                            "generated", n=2))
        pytest.fail("driver drifted (regenerate with `python -m codemod.parity.golden --update`):\n" + diff[:6000])


def test_generated_driver_is_stable():
    assert golden_driver() == golden_driver()


def test_parameter_without_a_role_is_refused(tmp_path):
    profile = load_profile("actlib")
    profile.data = dict(profile.data, roles={k: v for k, v in profile.data["roles"].items() if k != "dbias"})
    with pytest.raises(UnsupportedConstruct, match="tensor parameter `dbias` has no role"):
        _plan(profile)


def test_unknown_scalar_is_refused():
    profile = load_profile("actlib")
    profile.data = dict(profile.data, scalars={"limit": "7.0f"})
    with pytest.raises(UnsupportedConstruct, match="float alpha"):
        _plan(profile)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_generated_driver_compiles(tmp_path):
    src = tmp_path / "driver.cu"
    src.write_text(golden_driver())
    proc = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "d.o"),
                           f"-I{GOLDEN / 'input' / 'include'}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(not os.environ.get("TE_SOURCE_DIR"), reason="needs a TransformerEngine checkout in TE_SOURCE_DIR")
def test_te_profile_plans_the_activation_entry_points(tmp_path):
    from codemod.cli import main

    root = Path(os.environ["TE_SOURCE_DIR"]) / "transformer_engine" / "common"
    assert main(["analyze", str(root), "--target", "activation", "--json", str(tmp_path / "a.json")]) in (0, 1)
    plan = build_plan(json.loads((tmp_path / "a.json").read_text()), load_rule("activation").raw,
                      load_profile("te"), root)
    names = {e.name for e in plan.entries}
    assert {"nvte_gelu", "nvte_dgelu", "nvte_swiglu", "nvte_dswiglu", "nvte_quantize_dbias_dgelu"} <= names
    # Grouped-tensor entry points (NVTEGroupedTensor) are planned apart (tests/parity/test_grouped.py).
    assert not any(n.startswith("nvte_group_") for n in names)
    assert all(e.name.startswith("nvte_group_") for e in plan.grouped_entries)


def test_generate_takes_several_targets_as_one_plan(tmp_path, capsys):
    """`parity generate --target A --target B`: one driver over the union of both rules'
    migrate.kernels (TE: activation, scaled_activation and fused_router in one run)."""
    import yaml

    from codemod.cli import main

    rule = yaml.safe_load((GOLDEN / "activation.yaml").read_text())
    first, second = dict(rule, id="part_a"), dict(rule, id="part_b")
    first["migrate"] = dict(rule["migrate"], kernels=["actlib::unary_kernel"])
    second["migrate"] = dict(rule["migrate"], kernels=["actlib::gated_act_kernel", "actlib::unary_kernel"])
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(first))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(second))
    rc = main(["parity", "generate", str(GOLDEN / "input"), "--target", str(tmp_path / "a.yaml"), "--target",
               str(tmp_path / "b.yaml"), "--analysis", str(GOLDEN / "expected" / "analysis.json"),
               "--profile", "actlib", "-o", str(tmp_path / "gen")])
    assert rc == 0
    plan = json.loads((tmp_path / "gen" / "plan.json").read_text())
    assert plan["rule"] == "part_a+part_b"
    kernels = {k for e in plan["entries"] for k in e["kernels"]}
    assert kernels == {"actlib::unary_kernel", "actlib::gated_act_kernel"}
    assert "cases per build" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_a_case_that_kills_the_driver_is_named(tmp_path):
    """A library that kills the process (TE's transpose kernel choice divides by zero on 0 rows:
    SIGFPE, seen on the H200) left a shard log that said nothing; the driver's handler names the
    case and the process still dies of the signal. The handler's code, as generated, in a program
    that divides by zero inside a case (no GPU needed)."""
    import signal

    text = golden_driver()
    handler = text[text.index("char current_case[512];"):text.index("// Runs setup + invoke")]
    assert "note_case(id);" in text and "std::signal(sig, on_fatal_signal)" in text
    src = tmp_path / "dies.cpp"
    src.write_text("#include <unistd.h>\n#include <algorithm>\n#include <csignal>\n#include <cstdlib>\n"
                   "#include <cstring>\n#include <string>\n" + handler +
                   "int main(int argc, char **) {\n  std::signal(SIGFPE, on_fatal_signal);\n"
                   '  note_case("actlib_gelu|fp32|fp32|0x64|random");\n'
                   "  volatile int zero = argc - 1;\n  return 100 / zero;\n}\n")
    exe = tmp_path / "dies"
    build = subprocess.run(["g++", "-std=c++17", "-O0", str(src), "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == -signal.SIGFPE
    assert run.stderr == "parity: the process died of a signal in case actlib_gelu|fp32|fp32|0x64|random\n"
