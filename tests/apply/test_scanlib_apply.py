"""golden/scanlib: a library with no NVRTC layer and no CMake (a torch-extension-shaped setup.py):
the migration adds the layer (nvrtc_layer.create), the setup.py build step (migrate.setuptools)
and moves the explicit instantiations behind the legacy option."""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemod.apply.golden import golden_patch

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "golden"
RULE = GOLDEN / "scanlib" / "rule.yaml"


def test_scanlib_golden_patch_matches_expected():
    patch, _, manifest = golden_patch("scanlib")
    assert manifest == (GOLDEN / "scanlib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "scanlib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True),
                                            "expected/apply.patch", "generated", n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden scanlib --update` "
                    "and review):\n" + diff[:8000])


def test_scanlib_patch_applies_with_git_and_migrates_every_kernel(tmp_path):
    patch, report, manifest = golden_patch("scanlib")
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scanlib" / "input", root)
    (tmp_path / "p.diff").write_text(patch)
    subprocess.run(["git", "init", "-q", "."], cwd=root, check=True)
    subprocess.run(["git", "apply", "--check", str(tmp_path / "p.diff")], cwd=root, check=True)
    assert "2 kernels migrated" in report and "## Left static\n\n- nothing" in report
    # the domain: 48 forward variants (launches) + the 2 explicit instantiations of the fill kernel
    assert manifest.count('"name_expression"') == 50


def _nvrtc():
    try:
        import nvidia.cu13 as cu
    except ImportError:
        return None
    base = Path(list(cu.__path__)[0])
    return base if (base / "include" / "nvrtc.h").is_file() else None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None or _nvrtc() is None, reason="needs nvcc and the NVRTC wheel")
@pytest.mark.parametrize("legacy", ["0", "1"])
def test_patched_scanlib_builds_and_keeps_static_kernels_only_in_a_legacy_build(tmp_path, legacy):
    """What setup.py would do, without torch: the string-header step, then every unit with the
    legacy define, linked with NVRTC. The default build has no static kernel; the legacy build all 50."""
    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scanlib" / "input", root)
    write_all(root, compute(root, str(RULE))[0])
    subprocess.run([sys.executable, "src/rtc/scan/string_headers.py", "build/strings"], cwd=root, check=True)
    nv = _nvrtc()   # the wheel: cuda_runtime.h, nvrtc.h and their libraries
    flags = ["-std=c++17", "-O2", "-Isrc", "-Ibuild/strings", f"-I{nv / 'include'}",
             f"-DSCANLIB_BUILD_LEGACY_STATIC_SCAN={legacy}"]
    objects = []
    for unit in ["src/scan_fwd_f32.cu", "src/scan_fwd_f16.cu", "src/scan_fill.cu"]:
        out = tmp_path / (Path(unit).name + ".o")
        proc = subprocess.run(["nvcc", "-arch=sm_90", "-Xcompiler", "-fPIC", *flags, "-c", unit, "-o", str(out)],
                              cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]
        objects.append(out)
    for unit in ["src/rtc/scan/kernels.cpp", "src/rtc/rtc.cpp", "src/scan_api.cpp"]:
        out = tmp_path / (Path(unit).name + ".o")
        proc = subprocess.run(["g++", "-fPIC", *flags, "-c", unit, "-o", str(out)],
                              cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]
        objects.append(out)
    lib = tmp_path / "libscan.so"
    proc = subprocess.run(["g++", "-shared", *map(str, objects), "-o", str(lib), "-Wl,--no-undefined",
                           str(next((nv / "lib").glob("libnvrtc.so.*"))), str(next((nv / "lib").glob("libcudart.so.*")))],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    count = subprocess.run([sys.executable, str(REPO / "scripts" / "count_kernel_symbols.py"),
                            *[str(o) for o in objects if o.name.endswith(".cu.o")]], capture_output=True, text=True)
    assert f"total {50 if legacy == '1' else 0} " in count.stdout, count.stdout + count.stderr


@pytest.mark.slow
@pytest.mark.skipif(_nvrtc() is None, reason="needs the NVRTC wheel")
def test_patched_scanlib_verifies_for_sm80_sm90_sm100a(tmp_path, capsys):
    from codemod.cli import main

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scanlib" / "input", root)
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q"]) == 0
    assert main(["verify", str(root), "--arch", "sm_80", "--arch", "sm_90", "--arch", "sm_100a",
                 "--all-variants", "--no-host", "-j", "2"]) == 0
    out = capsys.readouterr()
    assert "50 of 50 variants" in out.out + out.err


def test_a_rule_without_disable_env_applies(tmp_path):
    """nvrtc_layer.disable_env is optional: without it apply crashed in the stubs' template (issue 30)."""
    from codemod.apply.command import compute

    rule = tmp_path / "rule.yaml"
    rule.write_text("".join(line for line in RULE.read_text().splitlines(True) if "disable_env" not in line))
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scanlib" / "input", root)
    files, report, _ = compute(root, str(rule))
    assert "2 kernels migrated" in report
    stubs = files["src/rtc/rtc_stubs.h"][1]
    assert "inline bool nvrtc_disabled() { return false; }" in stubs


def test_kernels_not_found_on_an_unmigrated_tree_does_not_suggest_a_migration(tmp_path):
    """The hint said "is the tree already migrated?" on a tree holding no migration (issue 30)."""
    from codemod.apply.command import compute
    from codemod.errors import ApplyError

    rule = tmp_path / "rule.yaml"
    rule.write_text(RULE.read_text().replace("kernels: [scan_fwd_kernel, scan_fill_kernel]",
                                             "kernels: [scan_fwd_kernel, scanlib::scan_fill_kernel]"))
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scanlib" / "input", root)
    with pytest.raises(ApplyError) as err:
        compute(root, str(rule))
    assert "kernels not found: scanlib::scan_fill_kernel" in str(err.value)
    assert "the tree holds no migration of this rule" in err.value.hint
    assert "already migrated" not in err.value.hint


CMAKE = """cmake_minimum_required(VERSION 3.21)
project(scanlib LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90)
option(SCANLIB_BUILD_CUDA "Build the CUDA library" ON)
if(SCANLIB_BUILD_CUDA)
  find_package(CUDAToolkit REQUIRED)
  if(NOT TARGET CUDA::nvrtc)  # the test's NVRTC: the wheel's, when the toolkit has none
    add_library(CUDA::nvrtc SHARED IMPORTED)
    set_target_properties(CUDA::nvrtc PROPERTIES IMPORTED_LOCATION "${SCANLIB_NVRTC_LIB}"
                          INTERFACE_INCLUDE_DIRECTORIES "${SCANLIB_NVRTC_INCLUDE}")
  endif()
  set(scanlib_sources src/scan_api.cpp src/scan_fwd_f32.cu src/scan_fwd_f16.cu src/scan_fill.cu)
  add_library(scanlib SHARED ${scanlib_sources})
  target_compile_features(scanlib PUBLIC cxx_std_17)
  target_include_directories(scanlib PUBLIC src)
  target_link_libraries(scanlib PUBLIC CUDA::cudart)
endif()
"""


def _cmake_scanlib(tmp_path):
    rule = tmp_path / "rule.yaml"
    text = RULE.read_text()
    text = text[:text.index("  setuptools:")] + ("  cmake:\n    file: CMakeLists.txt\n"
                                                 "    string_header_function: scanlib_string_header\n"
                                                 "    legacy_option: SCANLIB_BUILD_LEGACY_STATIC_SCAN\n"
                                                 "    target: scanlib\n")
    rule.write_text(text)
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scanlib" / "input", root)
    (root / "CMakeLists.txt").write_text(CMAKE)
    return root, rule


def test_cmake_library_without_layer_gains_the_string_function_and_the_layer(tmp_path):
    """A CMake library with no NVRTC layer and no string-header function, its add_library indented
    inside an if() (issue 30: the anchor was found only at column 0)."""
    from codemod.apply.command import compute

    root, rule = _cmake_scanlib(tmp_path)
    files, report, _ = compute(root, str(rule))
    assert "2 kernels migrated" in report
    cmake = files["CMakeLists.txt"][1]
    assert cmake.index("function(scanlib_string_header file symbol)") < cmake.index("foreach(rtc_file IN ITEMS") \
        < cmake.index("  add_library(scanlib SHARED")
    assert "target_sources(scanlib PRIVATE src/rtc/rtc.cpp)" in cmake
    assert "target_link_libraries(scanlib PRIVATE CUDA::nvrtc)" in cmake


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None or _nvrtc() is None,
                    reason="needs cmake, ninja and the NVRTC wheel")
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_cmake_library_without_layer_builds(tmp_path, legacy):
    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all

    root, rule = _cmake_scanlib(tmp_path)
    write_all(root, compute(root, str(rule))[0])
    nv = _nvrtc()
    build = tmp_path / "b"
    for cmd in (["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja", f"-DSCANLIB_BUILD_LEGACY_STATIC_SCAN={legacy}",
                 f"-DSCANLIB_NVRTC_LIB={next((nv / 'lib').glob('libnvrtc.so.*'))}",
                 f"-DSCANLIB_NVRTC_INCLUDE={nv / 'include'}"],
                ["ninja", "-C", str(build)]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (build / "kernel_strings" / "string_code_src_scan_fwd_cuh.h").is_file()


@pytest.mark.slow
def test_second_apply_is_a_no_op_and_check_reads_git_history(tmp_path, capsys):
    """The created layer, setup.py's edits and the string-header script are recognised as the
    migration's: a second apply writes nothing, and --check without the manifest exits 0."""
    from codemod.cli import main

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scanlib" / "input", root)
    git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True)  # noqa: E731
    git("init", "-q", ".")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "scanlib")
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "migrated")
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0
    assert "already migrated" in capsys.readouterr().err
    shutil.rmtree(root / ".git" / "codemod")
    assert main(["apply", "--target", str(RULE), str(root), "--check", "-q"]) == 0


def test_cmake_condition_wraps_the_blocks(tmp_path):
    """bitsandbytes' add_library is outside its if(BUILD_CUDA): cmake.condition keeps the
    migration's blocks (CUDA::nvrtc, the CUDA include folder) out of a CPU-only configure."""
    from codemod.apply.command import compute

    root, rule = _cmake_scanlib(tmp_path)
    rule.write_text(rule.read_text() + "    condition: SCANLIB_BUILD_CUDA\n")
    cmake = (root / "CMakeLists.txt").read_text()
    lines = cmake.splitlines(True)
    start = next(i for i, line in enumerate(lines) if "add_library(scanlib" in line)
    # add_library and what follows it at column 0, after the endif()
    moved = [line.strip() + "\n" for line in lines[start:start + 4]]
    rest = lines[:start] + lines[start + 4:]
    (root / "CMakeLists.txt").write_text("".join(rest) + "".join(moved))
    files, report, _ = compute(root, str(rule))
    out = files["CMakeLists.txt"][1]
    assert "if(SCANLIB_BUILD_CUDA)\n  # NVRTC migration of the scan kernels: the string headers." in out
    assert "if(SCANLIB_BUILD_CUDA)\n  # NVRTC migration of the scan kernels: the NVRTC layer" in out
    assert out.count("if(SCANLIB_BUILD_CUDA)") == 3 and out.count("endif()") == 4   # 2 of the input
