"""apply on kernels launched through generic lambdas taking the kernel as `auto` (golden/routerlib):
the passing sites pass the stub object, the lambda launches it, the occupancy helper calls the
stubs' `occupancy` (a stub object or a kernel pointer; no overload of a CUDA runtime name found by
argument-dependent lookup); a lambda is migrated whole or not at all."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from codemod.apply.golden import GOLDEN
from codemod.cli import main

RULE = GOLDEN / "routerlib" / "rule.yaml"
needs_build = pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                                 reason="needs nvcc, cmake and ninja")


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "routerlib" / "input", root)
    return root


def test_routerlib_golden_patch_matches_expected():
    import difflib

    from codemod.apply.golden import golden_patch

    patch, _, manifest = golden_patch("routerlib")
    assert manifest == (GOLDEN / "routerlib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "routerlib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True), n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden routerlib "
                    "--update` and review):\n" + diff[:8000])


def test_lambdas_get_the_stub_object_and_the_helper_calls_the_stubs(tmp_path, capsys):
    root = _copy(tmp_path)
    helper = (root / "src" / "common.h").read_text()
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0, \
        capsys.readouterr().err
    unit = (root / "src" / "topk.cu").read_text()
    assert "launch(rtc_router::topk_forward_kernel<T, 0, M>());" in unit
    assert "launch_simple(rtc_router::topk_simple_kernel<T, true>());" in unit
    assert "launch(rtc_router::topk_backward_kernel<T, 2>());" in unit
    assert "kernel.launch(grid, kThreads, shmem, stream)(logits, probs" in unit
    assert "kernel.set_attribute(cudaFuncAttributeMaxDynamicSharedMemorySize," in unit
    assert "persistent_grid(kernel, kThreads, shmem, total_blocks);" in unit
    assert "<<<" not in unit.split("topk_debug_dump")[0]       # only the unmigrated debug launch keeps <<<
    after = (root / "src" / "common.h").read_text()
    assert after == helper.replace("cudaOccupancyMaxActiveBlocksPerMultiprocessor(",
                                   "::routerlib::rtc::stubs::occupancy(").replace(
        '#include "routerlib/router.h"\n', '#include "routerlib/router.h"\n#include "../util/rtc_kernel_calls.h"\n')
    calls = "".join((root / "util" / "rtc_kernel_calls.h").read_text().split())
    assert "cudaError_toccupancy(int*num_blocks,constKernel&kernel," in calls
    assert "returncudaOccupancyMaxActiveBlocksPerMultiprocessor(num_blocks,kernel," in calls   # a kernel pointer
    stubs = (root / "util" / "rtc_stubs.h").read_text()     # no CUDA runtime name overloaded for the stubs
    assert "cudaOccupancyMaxActiveBlocksPerMultiprocessor(int" not in stubs
    assert "cudaError_t cudaFuncSetAttribute(" not in stubs


def test_a_qualified_call_in_the_helper_keeps_its_kernels_static(tmp_path, capsys):
    """`::cudaOccupancy...(kernel_func, ...)` skips argument-dependent lookup: a stub object would
    not compile there, so the kernels whose lambdas call the helper stay static, with the reason;
    their lambdas keep `kernel<<<...>>>` although another lambda's `kernel` (same name, same file)
    is migrated."""
    root = _copy(tmp_path)
    common = root / "src" / "common.h"
    common.write_text(common.read_text().replace("  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm",
                                                 "  ::cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm"))
    assert main(["apply", "--target", str(RULE), str(root), "--diff", str(tmp_path / "d.diff"), "-q",
                 "--no-precheck"]) == 0
    report = (tmp_path / "d.diff.report.md").read_text()
    for kid in ("topk_forward_kernel", "topk_backward_kernel"):
        assert (f"`routerlib::{kid}`: the helper persistent_grid called at src/topk.cu:") in report
    assert "hands the kernel to `::cudaOccupancyMaxActiveBlocksPerMultiprocessor` at src/common.h:40" in report
    assert "| `routerlib::topk_simple_kernel` |" in report
    diff = (tmp_path / "d.diff").read_text()
    assert "kernel.launch(total_blocks, kThreads, 0, stream" in diff
    assert "+    kernel.launch(grid" not in diff and "launch(rtc_router::topk_forward" not in diff


def _plan(kid: str, lambda_line: int, passed: list[str]):
    gl = {"file": "a.cu", "line": lambda_line, "col": 8, "name": "launch",
          "passing_sites": [{"id": f"a.cu:{lambda_line + 1 + i}:5", "kernel": k} for i, k in enumerate(passed)]}
    return SimpleNamespace(kernel=SimpleNamespace(id=kid, instantiations=1),
                           sites=[SimpleNamespace(generic_lambda=gl)])


def test_a_lambda_is_migrated_whole_or_not_at_all():
    """a and b share a lambda, b and c another; d has its own. `a` stays static (not planned): b,
    then c, follow it; d stays migrated."""
    from codemod.apply.plan.plan import _whole_lambdas

    plans = [_plan("b", 10, ["a", "b"]), _plan("b", 20, ["b", "c"]), _plan("c", 20, ["b", "c"]),
             _plan("d", 30, ["d"])]
    skipped = []
    kept = _whole_lambdas(plans, skipped)
    assert [kp.kernel.id for kp in kept] == ["d"]
    assert {s.what for s in skipped} == {"b", "c"}
    assert any("with a, which stays static" in s.reason for s in skipped)


@pytest.mark.slow
@needs_build
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_routerlib_builds(tmp_path, legacy):
    """The stub object goes through the generic lambdas and the unchanged helper (ADL overloads),
    with the static kernels kept (ON) or not (OFF)."""
    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all
    from tests.golden.test_golden_builds import _nvrtc_root

    root = _copy(tmp_path)
    write_all(root, compute(root, str(RULE))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           f"-DROUTERLIB_BUILD_LEGACY_STATIC_ROUTER={legacy}", "-DCMAKE_BUILD_TYPE=Release"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DROUTERLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_prelude_copy_finds_a_typedef_enum_in_an_extern_c_block():
    """TE's C API header declares `typedef enum {...} NVTERoutingMapFormat;` inside extern "C"."""
    from codemod.apply.base import source
    from codemod.apply.emit.prelude_copies import first_name

    data = (b'#ifndef H_\n#define H_\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
            b"typedef enum {\n  FMT_A = 0,\n  FMT_B = 1,\n} Fmt;\nvoid host_fn(int);\n"
            b'#ifdef __cplusplus\n}\n#endif\n#endif\n')
    found = source.declarations(data, {"Fmt"})
    assert [first_name(t) for _, t in found] == ["Fmt"]
    assert "FMT_B = 1," in found[0][1] and "host_fn" not in found[0][1]
