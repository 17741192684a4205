"""golden/cscanlib: a kernel over a framework's complex type (PyTorch's c10::complex from its own
header, with device functions, std::conj, cub::BlockReduce and gpuAtomicAdd on it), migrated with
`types.framework: torch`: the NVRTC programs get generated stand-ins of the framework headers
(codemod/apply/framework_types.py, templates/apply/framework/)."""

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
RULE = GOLDEN / "cscanlib" / "rule.yaml"


def _nvrtc():
    try:
        import nvidia.cu13 as cu
    except ImportError:
        return None
    base = Path(list(cu.__path__)[0])
    return base if (base / "include" / "nvrtc.h").is_file() else None


def _written(tmp_path, rule=RULE):
    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "cscanlib" / "input", root)
    files, report, _ = compute(root, str(rule))
    write_all(root, files)
    return root, report


def test_cscanlib_golden_patch_matches_expected():
    patch, _, manifest = golden_patch("cscanlib")
    assert manifest == (GOLDEN / "cscanlib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "cscanlib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True),
                                            "expected/apply.patch", "generated", n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden cscanlib --update` "
                    "and review):\n" + diff[:8000])


def test_complex_weights_migrate_with_the_framework_headers_stood_in(tmp_path):
    """Before, `types.framework: torch` left the kernel static: c10::complex had no CUDA type to map to."""
    root, report = _written(tmp_path)
    assert "1 kernels migrated" in report and "## Left static\n\n- nothing" in report
    out = root / "src" / "rtc" / "cscan"
    complex_h = (out / "framework" / "c10" / "util" / "complex.h").read_text()
    assert "T real_ = T(0);" in complex_h and "struct alignas(sizeof(T) * 2) complex" in complex_h
    assert "c10::complex<T> conj(const c10::complex<T>& z)" in complex_h
    assert "#include <complex>" in complex_h and "#include <cmath>" in complex_h    # the rule's shims
    atomic = (out / "framework" / "ATen" / "cuda" / "Atomic.cuh").read_text()
    assert "gpuAtomicAdd(&address->real_, val.real_);" in atomic
    manifest_headers = (out / "kernels.cpp").read_text()
    assert '"c10/util/complex.h"}' in manifest_headers and '"ATen/cuda/Atomic.cuh"}' in manifest_headers
    # the library's own includes of the framework headers stay as they are: NVRTC finds the stand-ins
    common = (root / "src" / "cscan_common.h").read_text()
    assert common == (GOLDEN / "cscanlib" / "input" / "src" / "cscan_common.h").read_text()


def test_without_framework_torch_the_complex_kernel_stays_static_naming_the_key(tmp_path):
    from codemod.apply.command import compute

    rule = tmp_path / "rule.yaml"
    rule.write_text(RULE.read_text().replace("    framework: torch\n", ""))
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "cscanlib" / "input", root)
    _, report, _ = compute(root, str(rule))
    left = report.split("## Left static")[1].split("##")[0]
    assert "`cscan_bwd_kernel`" in left and "spells the PyTorch type `c10::complex`" in left
    assert "`migrate.types.framework: torch` gives the programs an NVRTC stand-in of `c10/util/complex.h`" in left


def test_a_header_without_a_final_newline_gets_its_endif_on_a_line_of_its_own(tmp_path):
    """cscan_bwd.cuh (as mamba's selective_scan_bwd_kernel.cuh) ends `}` without a newline: the
    guard around its host launchers closed as `}#endif`, which NVRTC read as an unterminated #ifndef."""
    root, _ = _written(tmp_path)
    assert (root / "src" / "cscan_bwd.cuh").read_text().endswith("\n}\n#endif  // __CUDACC_RTC__\n")


def _string_headers(root):
    subprocess.run([sys.executable, "src/rtc/cscan/string_headers.py", "build/strings"], cwd=root, check=True)


@pytest.mark.skipif(shutil.which("g++") is None or _nvrtc() is None, reason="needs g++ and the CUDA headers wheel")
def test_kernels_cpp_refuses_a_framework_complex_of_another_layout(tmp_path):
    """kernels.cpp checks the extension's c10::complex against the layout the NVRTC stand-in gives it."""
    root, _ = _written(tmp_path)
    _string_headers(root)
    flags = ["-std=c++17", "-fsyntax-only", "-Isrc", "-Ithird", "-Ibuild/strings", f"-I{_nvrtc() / 'include'}"]
    ok = subprocess.run(["g++", *flags, "src/rtc/cscan/kernels.cpp"], cwd=root, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr[-3000:]
    framework = root / "third" / "c10" / "util" / "complex.h"
    framework.write_text(framework.read_text().replace("  T real_ = T(0);\n  T imag_ = T(0);\n",
                                                       "  T imag_ = T(0);\n  T real_ = T(0);\n"))
    swapped = subprocess.run(["g++", *flags, "src/rtc/cscan/kernels.cpp"], cwd=root, capture_output=True, text=True)
    assert swapped.returncode != 0 and "does not hold real_ then imag_" in swapped.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None or _nvrtc() is None, reason="needs nvcc and the NVRTC wheel")
@pytest.mark.parametrize("legacy", ["0", "1"])
def test_patched_cscanlib_builds_and_keeps_static_kernels_only_in_a_legacy_build(tmp_path, legacy):
    """What setup.py would do, without torch: the string-header step, every unit with the legacy
    define, linked with NVRTC. The default build has no static kernel; the legacy build all 8."""
    root, _ = _written(tmp_path)
    _string_headers(root)
    nv = _nvrtc()
    flags = ["-std=c++17", "-O2", "-Isrc", "-Ithird", "-Ibuild/strings", f"-I{nv / 'include'}",
             f"-DCSCANLIB_BUILD_LEGACY_STATIC_CSCAN={legacy}"]
    objects = []
    for unit in ["src/cscan_bwd_real.cu", "src/cscan_bwd_complex.cu"]:
        out = tmp_path / (Path(unit).name + ".o")
        proc = subprocess.run(["nvcc", "-arch=sm_90", "--expt-relaxed-constexpr", "--use_fast_math", "-Xcompiler",
                               "-fPIC", *flags, "-c", unit, "-o", str(out)], cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]
        objects.append(out)
    for unit in ["src/rtc/cscan/kernels.cpp", "src/rtc/rtc.cpp", "src/cscan_api.cpp"]:
        out = tmp_path / (Path(unit).name + ".o")
        proc = subprocess.run(["g++", "-fPIC", *flags, "-c", unit, "-o", str(out)], cwd=root, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]
        objects.append(out)
    lib = tmp_path / "libcscan.so"
    proc = subprocess.run(["g++", "-shared", *map(str, objects), "-o", str(lib), "-Wl,--no-undefined",
                           str(next((nv / "lib").glob("libnvrtc.so.*"))), str(next((nv / "lib").glob("libcudart.so.*")))],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    count = subprocess.run([sys.executable, str(REPO / "scripts" / "count_kernel_symbols.py"),
                            *[str(o) for o in objects if o.name.endswith(".cu.o")]], capture_output=True, text=True)
    assert f"total {8 if legacy == '1' else 0} " in count.stdout, count.stdout + count.stderr


@pytest.mark.slow
@pytest.mark.skipif(_nvrtc() is None, reason="needs the NVRTC wheel")
def test_patched_cscanlib_verifies_for_sm80_sm90_sm100a(tmp_path, capsys):
    from codemod.cli import main

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "cscanlib" / "input", root)
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q"]) == 0     # NVRTC precheck included
    assert main(["verify", str(root), "--arch", "sm_80", "--arch", "sm_90", "--arch", "sm_100a",
                 "--all-variants", "--no-host", "-j", "2"]) == 0
    out = capsys.readouterr()
    assert "8 of 8 variants" in out.out + out.err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None or _nvrtc() is None, reason="needs nvcc and the NVRTC wheel")
def test_patched_cscanlib_sass_equals_nvccs_static_build(tmp_path, capsys):
    """The NVRTC programs (the framework stand-ins, the shims, -default-device) compile to the same
    SASS as nvcc's static build of the original tree with its framework headers, variant for variant."""
    from codemod.cli import main

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "cscanlib" / "input", root)
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0
    original = GOLDEN / "cscanlib" / "input"
    assert main(["verify", str(root), "--sass", "--arch", "sm_90", "--no-host", "-j", "1",
                 "--static-root", str(original), f"--sass-flag=-I{original / 'third'}",
                 "--sass-flag=--expt-relaxed-constexpr", "--sass-flag=--use_fast_math"]) == 0
    out = capsys.readouterr()
    assert "8 identical, 0 identical modulo names, 0 different (explained), 0 different (unexplained)" in out.out + out.err
