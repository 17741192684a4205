"""rules/bnb.yaml: schema-valid; on a bitsandbytes checkout (BNB_SOURCE_DIR, the repository root;
BNB_COMPILE_DB, a compile database whose include path declares cuBLAS, e.g. with
tests/apply/fixtures/cublas_standin: declarations for the parse and the host compile, no cuBLAS)
the outcome recorded in docs/results/bnb_apply.md."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codemod.apply.plan.spec import migrate_spec
from codemod.rule import load_rule

RULE = Path(__file__).resolve().parents[2] / "rules" / "bnb.yaml"
SOURCE = os.environ.get("BNB_SOURCE_DIR")
CUBLAS = Path(__file__).resolve().parent / "fixtures" / "cublas_standin"


def test_bnb_rule_loads():
    spec = migrate_spec(load_rule(str(RULE)))
    assert len(spec.kernels) == 9 and spec.layer["create"] == {"framework": "none"}
    assert spec.cmake["target"] == "bitsandbytes"


@pytest.mark.slow
@pytest.mark.skipif(not SOURCE or not os.environ.get("BNB_COMPILE_DB"), reason="needs BNB_SOURCE_DIR and BNB_COMPILE_DB")
def test_bnb_rule_migrates_the_nine_kernels(tmp_path, capsys):
    """kernels.cuh declares them, kernels.cu defines them (instantiation macro lines) and ops.cu
    launches them: all 9 migrate, NVRTC precheck (sm_90) and the parse as migrated included.
    Before this branch: exit 2, "definition of kQuantizeBlockwise not found"."""
    from codemod.cli import main

    code = main(["apply", "--target", str(RULE), SOURCE, "--compile-db", os.environ["BNB_COMPILE_DB"],
                 "--diff", str(tmp_path / "b.diff"), "-q"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "9 kernels migrated, 4 left static" in err
    report = (tmp_path / "b.diff.report.md").read_text()
    assert "## Left static" in report and report.count("not listed in the rule's migrate/kernels") == 4


@pytest.mark.slow
@pytest.mark.skipif(not SOURCE, reason="needs BNB_SOURCE_DIR")
@pytest.mark.parametrize("legacy, entries", [("0", 11), ("1", 152)])
def test_migrated_bnb_units_compile_and_keep_static_kernels_only_in_a_legacy_build(tmp_path, legacy, entries):
    """The migrated kernels.cu, ops.cu (nvcc, separable compilation as bnb's CMake), the stubs' and
    the layer's sources (g++) compile; kernels.cu holds the 10 instantiations of the 4 kernels the
    rule leaves out and CUB's EmptyKernel by default, all 151 + 1 with the legacy define."""
    import json
    import re
    import shutil
    import subprocess

    from codemod.cli import main

    nv = _nvrtc()
    if nv is None or shutil.which("nvcc") is None:
        pytest.skip("needs nvcc and the NVRTC wheel")
    root = tmp_path / "bnb"
    shutil.copytree(Path(SOURCE) / "csrc", root / "csrc")
    shutil.copy(Path(SOURCE) / "CMakeLists.txt", root / "CMakeLists.txt")
    flags = ["-std=c++17", "-O3", f"-I{CUBLAS}", "-Icsrc"]
    (root / "compile_commands.json").write_text(json.dumps([
        {"directory": str(root), "file": str(root / f), "command": "nvcc " + " ".join(flags) + f" -c {f}"}
        for f in ("csrc/kernels.cu", "csrc/ops.cu")]))
    assert main(["apply", "--target", str(RULE), str(root), "--compile-db", str(root / "compile_commands.json"),
                 "--write", "-q", "--no-precheck"]) == 0
    # what the CMake function writes at configure time
    cmake = (root / "CMakeLists.txt").read_text()
    strings = root / "build" / "kernel_strings"
    strings.mkdir(parents=True)
    for f in re.search(r"foreach\(rtc_file IN ITEMS\s+([^)]*)\)", cmake).group(1).split():
        symbol = "string_code_" + re.sub(r"[^A-Za-z0-9]", "_", f)
        (strings / f"{symbol}.h").write_text(f'#pragma once\nstatic constexpr const char {symbol}[] = '
                                             f'R"rtc_source({(root / f).read_text()})rtc_source";\n')
    flags += [f"-I{strings}", f"-I{nv / 'include'}", f"-DBNB_BUILD_LEGACY_STATIC_KERNELS={legacy}"]
    for unit in ("csrc/kernels.cu", "csrc/ops.cu"):
        proc = subprocess.run(["nvcc", *flags, "-rdc=true", "-arch=sm_90", "-c", unit, "-o", str(tmp_path / (Path(unit).name + ".o"))],
                              cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
    for unit in ("csrc/rtc/kernels/kernels.cpp", "csrc/rtc/rtc.cpp"):
        proc = subprocess.run(["g++", *flags, "-c", unit, "-o", str(tmp_path / (Path(unit).name + ".o"))],
                              cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
    import importlib.util

    spec = importlib.util.spec_from_file_location("count_kernel_symbols",
                                                  Path(__file__).resolve().parents[2] / "scripts" / "count_kernel_symbols.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    elf = subprocess.run([mod.cuobjdump(), "-elf", str(tmp_path / "kernels.cu.o")], capture_output=True, text=True)
    assert len({line.split()[-1] for line in elf.stdout.splitlines() if " FUNC " in line and " ENTRY " in line}) == entries


def _nvrtc():
    try:
        import nvidia.cu13 as cu
    except ImportError:
        return None
    base = Path(list(cu.__path__)[0])
    return base if (base / "include" / "nvrtc.h").is_file() else None
