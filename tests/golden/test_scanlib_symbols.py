"""golden/scanlib: the instantiations the analysis counts per TU are exactly the `__global__`
entry symbols nvcc emits for that TU (scripts/count_kernel_symbols.py, the method used on
mamba's selective scan: docs/results/mamba_analyze.md). Skipped without nvcc or c++filt."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "golden" / "scanlib" / "input" / "src"
pytestmark = pytest.mark.slow


def _script():
    spec = importlib.util.spec_from_file_location("count_kernel_symbols", REPO / "scripts" / "count_kernel_symbols.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_scanlib_counts_equal_nvccs_kernel_symbols(tmp_path):
    mod = _script()
    tool = mod.cuobjdump()
    if shutil.which("nvcc") is None or shutil.which("c++filt") is None or tool is None:
        pytest.skip("needs nvcc, c++filt and cuobjdump")
    cubins = []
    for tu in ("scan_fwd_f32.cu", "scan_fwd_f16.cu", "scan_fill.cu"):
        out = tmp_path / tu.replace(".cu", ".cubin")
        subprocess.run(["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-cubin", str(SRC / tu), "-o", str(out)],
                       check=True, capture_output=True)
        cubins.append(out)
    analysis = json.loads((REPO / "golden" / "scanlib" / "expected" / "analysis.json").read_text())
    got = mod.compare(cubins, tool, analysis, [])
    assert {k: (v["nvcc"], v["analysis"]) for k, v in got.items()} == {
        "scan_fwd_f32.cubin": (16, 16), "scan_fwd_f16.cubin": (32, 32), "scan_fill.cubin": (2, 2)}
    assert all(not v["only_nvcc"] and not v["only_analysis"] for v in got.values()), got
