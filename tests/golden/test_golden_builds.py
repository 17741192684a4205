"""Configure and build each golden mini-library with CMake + Ninja + nvcc (sm_90).

Skipped when nvcc, cmake or ninja is missing. Build trees live in pytest's tmp dir.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
CASES = ["actlib", "castlib", "routerlib"]
# normlib's hand count has overlapping sites (a kernel launched by <<<>>> and cooperatively): it is
# checked against the analysis only (tests/analysis/test_golden_analysis.py).
BUILD_CASES = [*CASES, "normlib"]
TOOLS = ("nvcc", "cmake", "ninja")

# every golden library built with CMake and nvcc: the slow set (pytest -m slow)
pytestmark = pytest.mark.slow


def _missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _nvrtc_root() -> Path | None:
    """Directory of the nvidia-cuda-nvrtc wheel (include/nvrtc.h, lib/libnvrtc.so*), if installed.

    NOTE: a pip-assembled CUDA toolkit may lack NVRTC; actlib's CMake then needs ACTLIB_NVRTC_ROOT.
    """
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        for candidate in sorted(Path(base).glob("*")):
            if (candidate / "include" / "nvrtc.h").is_file() and any(
                (candidate / "lib").glob("libnvrtc.so*")
            ):
                return candidate
    return None


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")


@pytest.mark.parametrize("case", BUILD_CASES)
def test_golden_builds(case: str, tmp_path: Path) -> None:
    missing = _missing_tools()
    if missing:
        pytest.skip(f"golden build needs {', '.join(missing)} on PATH")
    source = GOLDEN / case / "input"
    build = tmp_path / "build"
    configure = [
        "cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
        "-DCMAKE_CUDA_ARCHITECTURES=90", "-DCMAKE_BUILD_TYPE=Release",
    ]
    nvrtc = _nvrtc_root()
    if case in ("actlib", "normlib", "routerlib") and nvrtc is not None:   # their rtc layers (apply golden cases)
        configure.append(f"-D{case.upper()}_NVRTC_ROOT={nvrtc}")
    _run(configure, tmp_path)
    _run(["ninja", "-C", str(build)], tmp_path)
    assert (build / f"lib{case}.so").is_file()


@pytest.mark.parametrize("case", CASES)
def test_hand_count_is_consistent(case: str) -> None:
    """The hand count's totals agree with its own per-site and per-TU numbers."""
    hc = json.loads((GOLDEN / case / "hand_count.json").read_text())
    per_kernel: dict[str, int] = {}
    for site in hc["launch_sites"]:
        if site["kernel"]:
            per_kernel[site["kernel"]] = per_kernel.get(site["kernel"], 0) + site["instantiations"]
    fanout = hc["fanout"]
    assert per_kernel == fanout["per_kernel"]
    assert sum(fanout["per_kernel"].values()) == fanout["unique"]
    assert sum(tu["total"] for tu in fanout["per_tu"].values()) == fanout["sum_over_tus"]
    for entry in hc["entry_points"]:
        assert sum(entry["kernels"].values()) == entry["instantiations"]
        assert fanout["per_entry_point"][entry["name"]] == entry["instantiations"]
    root = GOLDEN / case / hc["root"]
    for site in hc["launch_sites"]:
        line = (root / site["file"]).read_text().split("\n")[site["line"] - 1]
        token = site.get("callee_token", site["callee"].split("<")[0])
        assert token in line, f"{site['id']}: {token!r} not on line: {line!r}"
