"""`codemod verify` on the patched golden actlib tree (input + golden/actlib/expected/apply.patch):
every kernel string compiles under NVRTC for sm_90, sm_100a and sm_120, with and without fast math."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.cli import main
from codemod.tool_state import manifest_path

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actlib"
PATCH = GOLDEN / "expected" / "apply.patch"


@pytest.fixture
def patched_actlib(tmp_path: Path, lib) -> Path:
    if not PATCH.is_file():
        pytest.skip("golden/actlib/expected/apply.patch is not there yet (written by `codemod apply` tests)")
    if shutil.which("git") is None:
        pytest.skip("git is needed to apply the golden patch")
    root = tmp_path / "actlib"
    shutil.copytree(GOLDEN / "input", root)
    proc = subprocess.run(["git", "apply", str(PATCH)], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, f"golden patch does not apply: {proc.stderr}"
    # where `codemod apply --write` keeps the manifest (outside the tree; the patch holds none)
    manifest = manifest_path(root, "activation")
    manifest.parent.mkdir(parents=True)
    shutil.copy(GOLDEN / "expected" / "apply.manifest.json", manifest)
    return root


@pytest.mark.slow
def test_every_golden_kernel_compiles_for_every_arch(patched_actlib, tmp_path, capsys):
    out = tmp_path / "verify.json"
    rc = main(["verify", str(patched_actlib), "--no-host", "-q", "--json", str(out)])
    report = capsys.readouterr().out
    assert rc == 0, report
    doc = json.loads(out.read_text())
    kernels = {p["kernel"] for p in doc["programs"]}
    assert kernels == {"actlib::cast_fp8_kernel", "actlib::dgated_act_kernel", "actlib::gated_act_kernel",
                       "actlib::quantize_block_kernel", "actlib::reduce_dbias_kernel", "actlib::unary_grad_kernel",
                       "actlib::unary_kernel"}
    # 7 kernels x 3 archs x (default, ACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH=ON)
    assert len(doc["programs"]) == 42
    assert {p["arch"] for p in doc["programs"]} == {"sm_90", "sm_100a", "sm_120"}
    assert all(p["ok"] and p["cubin_size"] > 0 for p in doc["programs"])
    # the cover uses every value of every axis: e.g. both fp8 output types and all three block layouts
    manifest = json.loads(manifest_path(patched_actlib, "activation").read_text())
    for kernel in manifest["kernels"]:
        checked = next(p["variants"] for p in doc["programs"] if p["kernel"] == kernel["id"])
        widest = max(len({v["axes"][a] for v in kernel["variants"]}) for a in kernel["variants"][0]["axes"])
        assert widest <= checked <= len(kernel["variants"])


@pytest.mark.slow  # minutes on 2 cores: the slow set (pytest -m slow), which CI runs
def test_golden_host_code_compiles(patched_actlib, capsys):
    from codemod.verify.host import find_nvcc
    from tests.golden.test_golden_builds import _nvrtc_root

    if find_nvcc() is None or shutil.which("cmake") is None:
        pytest.skip("host compile needs nvcc and cmake")
    argv = ["verify", str(patched_actlib), "--arch", "sm_90", "--kernel", "actlib::reduce_dbias_kernel", "-q"]
    if _nvrtc_root() is not None:
        argv.append(f"--cmake-arg=-DACTLIB_NVRTC_ROOT={_nvrtc_root()}")
    rc = main(argv)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "activation/gelu.cu" in out and "cast/cast.cu" in out
