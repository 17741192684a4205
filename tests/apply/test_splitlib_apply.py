"""golden/splitlib: kernels declared in a header, defined and instantiated (macro lines) in one
unit, launched from another, in a CMake library with no NVRTC layer and an optional CUDA part
(bitsandbytes' shape): the definitions move to a header, the stubs' section follows the
declarations, the instantiation lines go behind the legacy option."""

from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.golden import golden_patch

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "golden"
RULE = GOLDEN / "splitlib" / "rule.yaml"


def test_splitlib_golden_patch_matches_expected():
    patch, _, manifest = golden_patch("splitlib")
    assert manifest == (GOLDEN / "splitlib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "splitlib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True),
                                            "expected/apply.patch", "generated", n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden splitlib --update` "
                    "and review):\n" + diff[:8000])


def test_splitlib_migrates_both_kernels_with_the_section_after_the_declarations():
    patch, report, manifest = golden_patch("splitlib")
    assert "2 kernels migrated" in report and "## Left static\n\n- nothing" in report
    assert manifest.count('"name_expression"') == 5
    assert '+#include "rtc/split/kernels_kernels.h"' in patch.split("+++ b/src/kernels.cuh\n")[1].split("diff --git")[0]
    guarded = patch.split("+++ b/src/kernels.cu\n")[1].split("diff --git")[0]
    assert "+#if SPLITLIB_BUILD_LEGACY_STATIC_SPLIT\n MAKE_scale_kernel(float, 128)" in guarded


def _nvrtc():
    try:
        import nvidia.cu13 as cu
    except ImportError:
        return None
    base = Path(list(cu.__path__)[0])
    return base if (base / "include" / "nvrtc.h").is_file() else None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None or _nvrtc() is None,
                    reason="needs cmake, ninja and the NVRTC wheel")
@pytest.mark.parametrize("legacy, kernels", [("OFF", 0), ("ON", 5)])
def test_patched_splitlib_builds_with_its_cmake(tmp_path, legacy, kernels):
    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "splitlib" / "input", root)
    write_all(root, compute(root, str(RULE))[0])
    nv, build = _nvrtc(), tmp_path / "b"
    for cmd in (["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja",
                 f"-DSPLITLIB_BUILD_LEGACY_STATIC_SPLIT={legacy}",
                 f"-DSPLITLIB_NVRTC_LIB={next((nv / 'lib').glob('libnvrtc.so.*'))}",
                 f"-DSPLITLIB_NVRTC_INCLUDE={nv / 'include'}"],
                ["ninja", "-C", str(build)]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # the device-linked library's entry functions (separable compilation: the kernels are WEAK
    # symbols there, which scripts/count_kernel_symbols.py, written for whole-program objects, skips)
    import importlib.util

    spec = importlib.util.spec_from_file_location("count_kernel_symbols", REPO / "scripts" / "count_kernel_symbols.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    elf = subprocess.run([mod.cuobjdump(), "-elf", str(build / "libsplitlib.so")], capture_output=True, text=True)
    entries = {line.split()[-1] for line in elf.stdout.splitlines() if " FUNC " in line and " ENTRY " in line}
    assert len(entries) == kernels, sorted(entries)
