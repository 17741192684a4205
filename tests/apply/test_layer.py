"""nvrtc_layer.extend: the target's NVRTC layer gains the features the stubs call when it lacks them
(golden/layerlib: a kernel-manager layer with compile/is_compiled/launch only), each detected and
added once; a missing anchor is a one-line refusal. The same golden covers a union whose padding
array can be zero-length (zero_length.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.emit import layer
from codemod.apply.command import compute
from codemod.apply.emit.generate import render
from codemod.apply.golden import GOLDEN, golden_patch
from codemod.apply.write.patch import write_all
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
    assert "the NVRTC layer lacked compile_headers, compile_program, function_for, set_function_attribute, occupancy, " \
           "launch_cooperative: added" in report
    assert "value_add_t::_padding can be a zero-length array" in report


def test_features_already_present_are_not_added_again(tmp_path):
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    write_all(root, compute(root, str(CASE / "rule.yaml"))[0])
    edits, added, present = layer.extend(root, _layer_cfg(), {"occupancy": True, "cooperative": True}, render)
    assert edits == [] and added == []
    assert present == ["compile_headers", "compile_program", "function_for", "set_function_attribute", "occupancy",
                       "launch_cooperative"]


def test_only_what_the_stubs_call_is_added():
    edits, added, _ = layer.extend(CASE / "input", _layer_cfg(), {"occupancy": False, "cooperative": False},
                                   render)
    assert added == ["compile_headers", "compile_program", "function_for", "set_function_attribute"]
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


_COMPILE_PROGRAM_DRIVER = r'''
#include <nvrtc.h>

#include <cstdio>
#include <string>
#include <vector>

%(helper)s

// argv[1]: a source; the options follow. Prints "ok <log>" or "failed <log>" (newlines as '|').
int main(int argc, char **argv) {
  nvrtcProgram program = nullptr;
  if (nvrtcCreateProgram(&program, argv[1], "t.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return 2;
  std::string out;
  const nvrtcResult result = compile_program_one_target(program, argc - 2, argv + 2);
  std::size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, &log[0]);
  out = (result == NVRTC_SUCCESS ? "ok " : "failed ") + std::string(log.c_str());
  for (char &c : out) c = c == '\n' ? '|' : c;
  std::printf("%%s\n", out.c_str());
  return 0;
}
'''


@pytest.fixture(scope="module")
def compile_program(tmp_path_factory):
    """The layer's compile_program_one_target (as extend renders it) over the real NVRTC: run(source,
    *options) -> its one output line."""
    from codemod.verify import nvrtc

    from .test_rtc_cache import _cuda_include

    inc = _cuda_include()
    try:
        lib = Path(nvrtc.find_library())
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc (pip install nvidia-cuda-nvrtc)")
    if inc is None or shutil.which("g++") is None:
        pytest.skip("needs nvrtc.h and g++")
    work = tmp_path_factory.mktemp("compile_program")
    helper = render("layer/compile_program.cpp.j2", namespaced=True, manager="KernelManager", check_macro="CHECK",
                    error_macro="ERROR", header_type="Header", driver_call="CALL")
    (work / "driver.cpp").write_text(_COMPILE_PROGRAM_DRIVER % {"helper": helper})
    exe = work / "driver"
    proc = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", str(work / "driver.cpp"), "-I", str(inc),
                           f"-L{lib.parent}", f"-l:{lib.name}", f"-Wl,-rpath,{lib.parent}", "-o", str(exe)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]

    def run(code: str, *options: str) -> str:
        env = {**os.environ, "LD_LIBRARY_PATH": str(lib.parent)}   # libnvrtc-builtins beside it
        return subprocess.run([str(exe), code, *options], capture_output=True, text=True, timeout=300,
                              check=True, env=env).stdout.strip()
    return run


_SPECIFIC = "#if __CUDA_ARCH_SPECIFIC__ != 1000\n#error not sm_100a\n#endif\n__global__ void k() {}\n"


@pytest.mark.slow
def test_one_gpu_architecture_reaches_nvrtc_the_callers(compile_program):
    """The layer's own --gpu-architecture, then the stubs' arch-specific one: NVRTC gets the last
    only (no 'multiple --gpu-architecture' warning in its log) and compiles for it."""
    out = compile_program(_SPECIFIC, "--gpu-architecture=sm_90", "--std=c++17", "--gpu-architecture=sm_100a")
    assert out == "ok", out                  # an empty log: no warning
    assert compile_program(_SPECIFIC, "--gpu-architecture=sm_100a").startswith("ok")
    assert "not sm_100a" in compile_program(_SPECIFIC, "--gpu-architecture=sm_100a", "-arch=sm_90")


@pytest.mark.slow
def test_a_failed_compile_returns_nvrtcs_result_and_log(compile_program):
    """The helper only picks the target: a failed compile is the layer's own failure branch's to
    report (with its log: test_failure_branch_throws_with_the_log)."""
    out = compile_program("__global__ void k() { undefined_name = 1; }\n", "--gpu-architecture=sm_90")
    assert out.startswith("failed ") and "undefined_name" in out and "t.cu" in out


_PRINTING_LAYER = b"""
void Manager::compile(const std::string &label, const std::string &name, const std::string &code) {
  nvrtcProgram program;
  CHECK_NVRTC(nvrtcCreateProgram(&program, code.c_str(), "k.cu", 0, nullptr, nullptr));
  const nvrtcResult compile_result = nvrtcCompileProgram(program, 0, nullptr);
  if (compile_result != NVRTC_SUCCESS) {
    std::string log = "versions\\n";
    log += read_log(program);
    // Show the log, then fail
    std::cerr << log;
    CHECK_NVRTC(compile_result);
  }
  keep(label, program);
}
"""


def test_failure_branch_throws_with_the_log():
    """A layer whose failure branch prints NVRTC's log to std::cerr, then checks the result (TE's
    shape): the two lines, and the comment saying so, become the error macro with the log, so the
    error carries what was printed; the rest of the branch (the versions it adds) stays."""
    from codemod.apply.base import source
    from codemod.apply.emit.layer import _compile_call, _log_in_error

    root = source.parse(_PRINTING_LAYER)
    definition, call = _compile_call("rtc.cpp", _PRINTING_LAYER, root, "Manager")
    (edit,) = _log_in_error("rtc.cpp", _PRINTING_LAYER, definition, call, "LIB_ERROR")
    out = _PRINTING_LAYER[:edit.start] + edit.text.encode() + _PRINTING_LAYER[edit.end:]
    assert b"    // Throw with the log\n    LIB_ERROR(log);\n  }\n" in out
    assert b"std::cerr" not in out and b"CHECK_NVRTC(compile_result)" not in out
    assert b'log += read_log(program);' in out


def test_a_failure_branch_of_another_shape_is_left_alone():
    """Golden layers throw with the log themselves: nothing to edit."""
    from codemod.apply.base import source
    from codemod.apply.emit.layer import _compile_call, _log_in_error

    data = _PRINTING_LAYER.replace(b"    std::cerr << log;\n    CHECK_NVRTC(compile_result);\n",
                                   b"    LIB_ERROR(\"failed: \" + log);\n")
    root = source.parse(data)
    definition, call = _compile_call("rtc.cpp", data, root, "Manager")
    assert _log_in_error("rtc.cpp", data, definition, call, "LIB_ERROR") == []
