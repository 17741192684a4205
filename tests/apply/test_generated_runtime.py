"""The generated runtime (util/rtc_stubs.h, with the rule's rtc/<rule>/kernels.{h,cpp}) on the host,
over a mock NVRTC layer and a mock CUDA runtime (fixtures/rtc_mock.cu): a failed NVRTC compile is
remembered per variant and device and reported again without compiling or taking the layer's lock;
CUDA errors of the compile step are labelled CUDA; the CMake options and CUDA_VERSION are read in
the rule's one kernels.cpp, never in a header (no macro-dependent inline body)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .patched_actlib import nvrtc_flags, patch_actlib

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (host compile of the stubs)")]

VARIANT = "&::actlib::reduce_dbias_kernel<__half>"


@pytest.fixture(scope="module")
def patched(tmp_path_factory):
    work = tmp_path_factory.mktemp("runtime")
    root, strings, _ = patch_actlib(work)
    return work, root, strings


def _nvcc(root: Path, strings: Path, *args: str, lang: tuple[str, ...] = ("-x", "cu")) -> None:
    """nvcc with the patched tree's include folders; a .cpp (kernels.cpp) as the build compiles it:
    `lang=()`, host C++."""
    proc = subprocess.run(["nvcc", "-std=c++17", *lang, "-I", str(root), "-I", str(root / "include"),
                           "-I", str(strings), *nvrtc_flags(root.parent), "-DACTLIB_BUILD_LEGACY_STATIC_ACTIVATION=0", *args],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


@pytest.fixture(scope="module")
def mock(patched):
    """Runs one scenario of fixtures/rtc_mock.cu: (lines 'call N ...', counters)."""
    work, root, strings = patched
    exe = work / "rtc_mock"
    cudart = work / "rtc_mock_cudart.o"
    proc = subprocess.run(["nvcc", "-c", str(HERE / "fixtures/rtc_mock_cudart.cpp"), "-o", str(cudart),
                           *nvrtc_flags(work)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    _nvcc(root, strings, "-DACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH=0", "-c", str(HERE / "fixtures/rtc_mock.cu"),
          "-o", str(work / "rtc_mock.o"))
    for fast in (0, 1):   # kernels.cpp as a build with ACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH off and on
        _nvcc(root, strings, f"-DACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH={fast}", "-c",
              str(root / "rtc/activation/kernels.cpp"), "-o", str(work / f"kernels{fast}.o"), lang=())
        # shared libcudart: the mock's CUDA runtime functions interpose over it
        proc = subprocess.run(["nvcc", "-cudart", "shared", str(work / "rtc_mock.o"), str(work / f"kernels{fast}.o"),
                               str(cudart), "-o", str(exe) + str(fast)],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]

    def run(scenario: str, fast: int = 0) -> tuple[list[str], dict[str, int]]:
        out = subprocess.run([str(exe) + str(fast), scenario], capture_output=True, text=True,
                             check=True).stdout.splitlines()
        calls = [line for line in out if line.startswith("call ")]
        counters = {k: int(v) for k, v in (line.split() for line in out if not line.startswith("call "))}
        return calls, counters

    return run


def _error(line: str) -> str:
    assert " error " in line, line
    return line.split(" error ", 1)[1]


def test_a_failed_compile_names_the_variant_and_carries_the_whole_log(mock):
    """No failure is remembered: each call compiles again and throws the layer's whole message
    (NVRTC's log, all of it) after the variant's name expression; another variant compiles."""
    calls, counters = mock("nvrtc")
    errors = [_error(c) for c in calls[:3]]
    assert counters["compiles"] == 4 and counters["is_compiled"] == 4
    assert errors[0] == errors[1] == errors[2]
    assert f"the NVRTC kernel {VARIANT} failed to compile or load:|" in errors[0]
    assert "log line 1|" in errors[0] and "log line 60" in errors[0]
    assert calls[3] == "call 4 ok"


def test_a_failure_on_one_device_is_tried_again(mock):
    calls, counters = mock("device")
    assert " error " in calls[0] and calls[1] == "call 2 ok" and calls[2] == "call 3 ok"
    assert counters["compiles"] == 3


def test_a_runtime_error_of_the_load_is_named_and_cleared(mock):
    calls, counters = mock("cuda_runtime")
    error = _error(calls[0])
    assert "(cudaErrorInvalidDevice: invalid device ordinal)" in error and VARIANT in error
    assert calls[1] == "call 2 ok" and counters["compiles"] == 2
    assert counters["last_error"] == 0                  # reported here, so cleared as the static path's check would


@pytest.mark.parametrize("scenario", ["cuda_driver", "cuda_driver_nvrtc_path"])
def test_a_driver_api_layers_error_is_carried_and_tried_again(mock, scenario):
    """TE's layer loads with the driver API (no runtime error set): its message is the error; the
    file path in it may name nvrtc, which changes nothing now that no failure is classified."""
    calls, counters = mock(scenario)
    assert all(" error " in c for c in calls[:2])
    assert "CUDA Error: " in _error(calls[0]) and counters["compiles"] == 2


def test_pending_error_of_the_caller_is_kept_and_not_blamed(mock):
    calls, counters = mock("pending")
    error = _error(calls[0])
    assert VARIANT in error and "cudaError" not in error
    assert counters["last_error"] == 100 + 1            # cudaErrorInvalidDevice, still the caller's


def test_racing_threads_share_one_variant_and_the_launch_keeps_the_bytes(mock):
    """The factory's atomic slot: eight threads asking for one variant at once get one Variant (the
    same label object, later calls too); the erased launch hands the layer a typed pointer's bytes."""
    calls, counters = mock("race")
    assert counters["other_variants"] == 0
    assert counters["same_later"] == 1
    assert counters["first_arg_ok"] == 1
    assert counters["loser_gets_first"] == 1
    assert counters["compiles"] == 1


def test_no_header_reads_an_option_macro(patched):
    """The CMake options and CUDA_VERSION are read in kernels.cpp, the rule's one unit that holds the
    kernels' options (an inline function reading them would have one body in the whole program,
    whatever each unit's values); the headers read only the legacy option, into a constant of
    internal linkage, and rtc_stubs.h (shared by every rule) reads none."""
    _, root, _ = patched
    macros = re.compile(r"\b(ACTLIB_BUILD_LEGACY_STATIC_ACTIVATION|ACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH"
                        r"|CUDA_VERSION)\b")

    def uses(path: str) -> list[str]:
        code = [re.sub(r'"(?:\\.|[^"\\])*"', '""', ln.split("//")[0]) for ln in (root / path).read_text().splitlines()]
        return [ln for ln in code if macros.search(ln)]

    assert uses("util/rtc_stubs.h") == []
    assert uses("rtc/activation/kernels.h") == ["#if ACTLIB_BUILD_LEGACY_STATIC_ACTIVATION"]
    assert "constexpr bool legacy_build = true;" in (root / "rtc/activation/kernels.h").read_text()
    cpp = uses("rtc/activation/kernels.cpp")
    # the scoped option's value as the target defines it (0 or 1): no #if that reads a missing one as off
    assert "static const std::vector<bool> scoped_on = {ACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH != 0};" in \
        [ln.strip() for ln in cpp]
    assert any("CUDA_VERSION" in ln for ln in cpp)


def _arch_lines(mock, scenario: str) -> dict[str, str]:
    calls, _ = mock(scenario)
    return dict(line.split(" ", 2)[1:] for line in calls if not line.split()[1].isdigit())


def test_arch_target_replaces_the_layers_and_unknown_archs_are_refused(mock):
    """Issue 29: the static build's arch-specific target is the one --gpu-architecture the stubs
    add (the layer's compile keeps the last one only); a device below the kernel's minimum arch, or
    one NVRTC cannot compile for, is refused naming the kernel and the arch; a device newer than
    NVRTC without an arch-specific target is left to the layer (TE's compiles PTX for it)."""
    got = _arch_lines(mock, "arch")
    assert got["sm_100"] == "ok --gpu-architecture=sm_100a 1"
    assert got["sm_121"] == "ok --gpu-architecture=sm_120f 1"    # a family target serves the later minors
    assert got["sm_103"] == "ok - 0"                     # an arch-specific one does not: the layer's sm_103
    assert got["sm_90"] == "ok - 0"
    assert got["sm_100_min_100"] == "ok --gpu-architecture=sm_100a 1"
    assert got["sm_90_min_100"].startswith("error ")
    assert "actlib::reduce_dbias_kernel needs sm_100 or newer" in got["sm_90_min_100"]
    assert "device 0 (sm_90)" in got["sm_90_min_100"]
    assert "NVRTC 13.0 cannot compile actlib::reduce_dbias_kernel for sm_70" in got["sm_70"]
    assert "sm_75 to sm_121" in got["sm_70"]
    assert got["sm_130"] == "ok - 0"


def test_arch_specific_target_an_old_nvrtc_lacks_is_refused_by_name(mock):
    got = _arch_lines(mock, "old_nvrtc")
    assert got["sm_100"].startswith("error ")
    assert "NVRTC 13.0 cannot compile actlib::reduce_dbias_kernel for sm_100a, the target of device 0 (sm_100)" \
        in got["sm_100"]
    assert got["sm_90"] == "ok - 0"


def test_a_target_suffix_an_older_nvrtc_lacks_is_refused_by_name(mock):
    """NVRTC 12.8 lists sm_120 but rejects sm_120f (family targets came with 12.9): sm_120 itself gets
    sm_120a, as TE's CMake chooses with a toolkit before 12.9; a later minor of the family has no
    target that NVRTC takes, and the stubs say so naming kernel, target and device, instead of
    leaving NVRTC an option it fails on."""
    got = _arch_lines(mock, "nvrtc_12_8")
    assert got["sm_120"] == "ok --gpu-architecture=sm_120a 1"
    assert got["sm_121"].startswith("error ")
    assert ("NVRTC 12.8 cannot compile actlib::reduce_dbias_kernel for sm_120f, the target of device 0 (sm_121): "
            "family targets need NVRTC 12.9 or newer") in got["sm_121"]
    assert got["sm_100"] == "ok --gpu-architecture=sm_100a 1"
    assert got["sm_90"] == "ok - 0"


@pytest.mark.parametrize("fast", [0, 1])
def test_fast_math_follows_the_sources_the_static_build_gives_it(mock, fast):
    """Issue 29: with ACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH=ON the static build compiles
    activation/*.cu with --use_fast_math, cast/*.cu without: the activation functors' variants of
    unary_kernel get it under NVRTC, the cast entry points' (identity) do not; OFF: none does."""
    calls, _ = mock("scoped", fast)
    got = dict(line.split(" ", 2)[1:] for line in calls)
    assert got["gelu"] == f"ok {fast}"
    assert got["identity"] == "ok 0"


def test_the_handle_a_factory_returns_is_a_pointer(patched, tmp_path):
    """A launch site's handle is the variant's pointer, trivially copyable: returned in a register, so
    a type switch's thousands of sites keep no handle in memory (docs/results/te_host_compile_handle.md)."""
    _, root, strings = patched
    probe = tmp_path / "handle.cu"
    probe.write_text('#include "util/rtc_stubs.h"\n'
                     "using Handle = actlib::rtc::stubs::RtcKernel<const float *, float *, int>;\n"
                     "static_assert(sizeof(Handle) == sizeof(void *), \"the handle holds the variant only\");\n"
                     "static_assert(std::is_trivially_copyable_v<Handle>, \"returned in a register\");\n")
    _nvcc(root, strings, "-c", str(probe), "-o", str(tmp_path / "handle.o"))
