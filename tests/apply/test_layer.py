"""nvrtc_layer.extend: the target's NVRTC layer gains the features the stubs call when it lacks them
(golden/layerlib: a kernel-manager layer with compile/is_compiled/launch only), each detected and
added once; a missing anchor is a one-line refusal. The same golden covers a union whose padding
array can be zero-length (zero_length.py)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from codemod.apply import layer
from codemod.apply.command import compute
from codemod.apply.generate import render
from codemod.apply.golden import GOLDEN, golden_patch
from codemod.apply.patch import write_all
from codemod.errors import ApplyError
from codemod.rule import load_rule_file

CASE = GOLDEN / "layerlib"


def _layer_cfg():
    return load_rule_file(CASE / "rule.yaml").raw["migrate"]["nvrtc_layer"]


def test_layerlib_golden_patch_matches_expected():
    patch, report, manifest = golden_patch("layerlib")
    assert manifest == (CASE / "expected" / "apply.manifest.json").read_text()
    assert patch == (CASE / "expected" / "apply.patch").read_text(), \
        "golden patch drifted (regenerate with `python -m codemod.apply.golden layerlib --update` and read the diff)"
    assert "4 kernels migrated" in report
    assert "the NVRTC layer lacked compile_headers, function_for, set_function_attribute, occupancy, " \
           "launch_cooperative: added" in report
    assert "value_add_t::_padding can be a zero-length array" in report


def test_features_already_present_are_not_added_again(tmp_path):
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    write_all(root, compute(root, str(CASE / "rule.yaml"))[0])
    edits, added, present = layer.extend(root, _layer_cfg(), {"occupancy": True, "cooperative": True}, render)
    assert edits == [] and added == []
    assert present == ["compile_headers", "function_for", "set_function_attribute", "occupancy", "launch_cooperative"]


def test_only_what_the_stubs_call_is_added():
    edits, added, _ = layer.extend(CASE / "input", _layer_cfg(), {"occupancy": False, "cooperative": False},
                                   render)
    assert added == ["compile_headers", "function_for", "set_function_attribute"]
    assert not any("launch_cooperative" in e.text or "cuOccupancy" in e.text for e in edits)


@pytest.mark.parametrize("cut,message", [
    ("nvrtcCompileProgram(program", "calls nvrtcCompileProgram 0 times (the anchor needs exactly one)"),
    ("kernel_cache_;", "class KernelManager has no kernel_cache_"),
])
def test_a_missing_anchor_is_refused_with_its_name(tmp_path, cut, message):
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    for name in ("util/rtc.cpp", "util/rtc.h"):
        p = root / name
        p.write_text(p.read_text().replace(cut, cut.replace("nvrtcCompileProgram", "compileIt")
                                           .replace("kernel_cache_", "kernels_")))
    if "kernel_cache_" in cut:
        for name in ("util/rtc.cpp", "util/rtc.h"):
            p = root / name
            p.write_text(p.read_text().replace("kernel_cache_", "kernels_"))
    with pytest.raises(ApplyError) as e:
        layer.extend(root, _layer_cfg(), {"occupancy": True, "cooperative": True}, render)
    assert message in str(e.value)


@pytest.mark.slow
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_layerlib_builds(tmp_path, legacy):
    """The patched layerlib (layer extended, union specialized) compiles and links with nvcc, sm_90."""
    from tests.golden.test_golden_builds import _missing_tools, _nvrtc_root

    if _missing_tools():
        pytest.skip(f"needs {', '.join(_missing_tools())} on PATH")
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    write_all(root, compute(root, str(CASE / "rule.yaml"))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           f"-DLAYERLIB_BUILD_LEGACY_STATIC_NORM={legacy}"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DLAYERLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
