"""The NVRTC layer a migration adds (nvrtc_layer.create), the setup.py build step
(migrate.setuptools) and explicit instantiations behind the legacy option: units and refusals."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codemod.apply.emit import explicit_sites, own_layer, setuptools_build
from codemod.apply.base.changeset import relative_include
from codemod.apply.emit.generate import render
from codemod.errors import ApplyError

LAYER = dict(header="src/rtc/rtc.h", source="src/rtc/rtc.cpp", manager="::lib::rtc::KernelManager::instance()",
             header_type="::lib::rtc::Header", error_macro="LIB_RTC_ERROR", create={"framework": "none"})
LEGACY = "LIB_BUILD_LEGACY_STATIC_X"


def _nvrtc_include() -> Path | None:
    try:
        import nvidia.cu13 as cu
    except ImportError:
        return None
    inc = Path(list(cu.__path__)[0]) / "include"
    return inc if (inc / "nvrtc.h").is_file() and (inc / "cuda_runtime.h").is_file() else None


def _files(tmp_path, framework, features=None):
    layer = dict(LAYER, create={"framework": framework})
    files, note = own_layer.add(tmp_path, layer, LEGACY, "lib", features or {}, render, lambda t, p: t,
                                lambda p: "LIB_RTC_H_", relative_include)
    return files, note


@pytest.mark.parametrize("framework", ["none", "torch"])
@pytest.mark.skipif(shutil.which("g++") is None or _nvrtc_include() is None, reason="needs g++ and the CUDA wheel")
def test_created_layer_compiles_as_cxx17_with_every_feature(tmp_path, framework):
    files, note = _files(tmp_path, framework, dict(occupancy=True, cooperative=True, shared=True))
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    # a stand-in for PyTorch's header: TORCH_CHECK(cond, message) throwing
    (tmp_path / "c10" / "util").mkdir(parents=True)
    (tmp_path / "c10" / "util" / "Exception.h").write_text(
        "#pragma once\n#include <stdexcept>\n#define TORCH_CHECK(c, m) if (!(c)) throw std::runtime_error(m)\n")
    proc = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                           f"-I{_nvrtc_include()}", f"-I{tmp_path}", str(tmp_path / LAYER["source"])],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    header = files[LAYER["header"]]
    if framework == "torch":
        assert "#define LIB_RTC_ERROR(message) TORCH_CHECK(false, message)" in header
        assert "through TORCH_CHECK" in note
    else:
        assert "throw std::runtime_error(message)" in header


def _with_stubs(tmp_path, features: dict) -> dict:
    """The created layer's files with `features`, and rtc_stubs.h with them and runtime values."""
    from codemod.apply.emit.generate import COPY_HASH_BASE
    files, _ = _files(tmp_path, "none", features)
    files["src/rtc/rtc_stubs.h"] = render(
        "rtc_stubs.h.j2", guard="LIB_RTC_STUBS_H_", layer=dict(LAYER, disable_env=None),
        features=dict(features, runtime_values=True, copies=False, adl=False), copy_hash_base=COPY_HASH_BASE,
        spell_macro="LIB_RTC_SPELLING", build_value="LIB_RTC_BUILD_VALUE", layer_header="rtc.h",
        namespace="lib::rtc::stubs", error_headers=["rtc.h"])
    return files


@pytest.mark.skipif(shutil.which("g++") is None or _nvrtc_include() is None, reason="needs g++ and the CUDA wheel")
def test_stubs_with_every_feature_compile_on_the_created_layer(tmp_path):
    """rtc_stubs.h with every optional feature over a layer that has them all, both handles'
    members instantiated: the shared variables' handle with a cooperative launch, which no golden
    library has together."""
    files = _with_stubs(tmp_path, dict(occupancy=True, cooperative=True, shared=True))
    files["probe.cpp"] = ('#include "src/rtc/rtc_stubs.h"\n'
                          "template class lib::rtc::stubs::RtcKernel<const float *, int>;\n"
                          "template class lib::rtc::stubs::RtcKernelShared<const float *, int>;\n")
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    proc = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                           f"-I{_nvrtc_include()}", f"-I{tmp_path}", str(tmp_path / "probe.cpp")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "if (!this->variant_->prepare()) copy_shared(" in files["src/rtc/rtc_stubs.h"]


def test_created_layer_has_only_the_features_the_stubs_call(tmp_path):
    files, _ = _files(tmp_path, "none")
    text = "".join(files.values())
    assert "set_function_attribute" in text
    for absent in ("occupancy_max_active_blocks_per_sm", "launch_cooperative", "global_address"):
        assert absent not in text


def test_created_layer_keys_cover_nvrtc_version_and_compute_capability(tmp_path):
    files, _ = _files(tmp_path, "none")
    source = files[LAYER["source"]]
    assert 'label + "@nvrtc" + nvrtc_version() + "@cc" + std::to_string(arch)' in source
    # every access to the map under the lock
    assert source.count("std::lock_guard<std::mutex> lock(mutex_);") == 3
    assert source.count("compiled_.") == 5       # count (x2), emplace, find, end: all inside those scopes
    assert "program_log(*program)" in source     # NVRTC's log in the error


@pytest.mark.parametrize("change, message", [
    (dict(manager="lib::KernelManager"), "::<namespace>::<Class>::instance()"),
    (dict(header_type="::other::Header"), "not in the layer's namespace lib::rtc"),
    (dict(source=None), "needs nvrtc_layer.source"),
    (dict(extend={"driver_call": "X", "check_macro": "Y"}), "exclude each other"),
])
def test_created_layer_refuses_a_rule_it_cannot_follow(tmp_path, change, message):
    layer = {**LAYER, **change}
    layer = {k: v for k, v in layer.items() if v is not None}
    with pytest.raises(ApplyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        own_layer.settings(layer, LEGACY)


def test_created_layer_never_overwrites_a_library_file(tmp_path):
    (tmp_path / "src" / "rtc").mkdir(parents=True)
    (tmp_path / "src" / "rtc" / "rtc.h").write_text("// the library's own rtc.h\n")
    with pytest.raises(ApplyError, match="is not the NVRTC layer the rule describes"):
        _files(tmp_path, "none")


SETUP = '''\
import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

ext_modules = [
    CUDAExtension(
        name="lib_cuda",
        sources=["src/a.cu"],
        include_dirs=["src"],
        libraries=["nvrtc"],
    )
]
setup(name="lib", ext_modules=ext_modules, cmdclass={"build_ext": BuildExtension})
'''


def _setup_edits(tmp_path, text, extension="lib_cuda"):
    (tmp_path / "setup.py").write_text(text)
    setup = {"file": "setup.py", "extension": extension, "legacy_option": LEGACY}
    files, edits = setuptools_build.edits(tmp_path, setup, lambda p: p, "x", "src/rtc/x", ["src/rtc/x/kernels.cpp"],
                                          ["src/k.cuh"], "lib", render)
    data = text.encode()
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        data = data[:e.start] + e.text.encode() + data[e.end:]
    return files, data.decode()


def test_setup_script_gains_the_step_sources_and_define(tmp_path):
    files, out = _setup_edits(tmp_path, SETUP)
    compile(out, "setup.py", "exec")          # still Python
    assert "import subprocess\nimport sys\nfrom setuptools" in out
    assert 'x_kernel_strings = os.path.join(x_setup_dir, "build", "x_kernel_strings")' in out
    assert '"src/rtc/x/string_headers.py"),\n                x_kernel_strings], check=True)' in out
    assert out.index("subprocess.run(") < out.index("ext_modules = [")     # before the statement holding the call
    assert 'sources=["src/a.cu", "src/rtc/x/kernels.cpp"]' in out
    assert 'include_dirs=["src", x_kernel_strings]' in out
    assert f'define_macros=[("{LEGACY}", x_legacy_static)]' in out
    assert out.count('"nvrtc"') == 1                                       # already listed: not twice
    assert list(files) == ["src/rtc/x/string_headers.py"]


def test_setup_script_refuses_what_it_cannot_edit(tmp_path):
    with pytest.raises(ApplyError, match="1 extension calls|0 extension calls"):
        _setup_edits(tmp_path, SETUP, extension="other")
    with pytest.raises(ApplyError, match="sources= is not a list literal"):
        _setup_edits(tmp_path, SETUP.replace('sources=["src/a.cu"]', "sources=SOURCES"))
    with pytest.raises(ApplyError, match="does not parse as Python"):
        _setup_edits(tmp_path, SETUP + "def (:\n")


def test_string_headers_are_rewritten_only_when_their_source_changes(tmp_path):
    files, _ = _setup_edits(tmp_path, SETUP)
    script = tmp_path / "src" / "rtc" / "x" / "string_headers.py"
    script.parent.mkdir(parents=True)
    script.write_text(files["src/rtc/x/string_headers.py"])
    (tmp_path / "src" / "k.cuh").write_text('// a ")source" inside\n__global__ void k() {}\n')
    run = lambda: subprocess.run([sys.executable, str(script), str(tmp_path / "out")], check=True)  # noqa: E731
    run()
    header = tmp_path / "out" / "string_code_src_k_cuh.h"
    first = header.read_text()
    assert 'R"source_(' in first       # the delimiter avoids the file's `)source"`
    stamp = header.stat().st_mtime_ns
    run()
    assert header.stat().st_mtime_ns == stamp
    (tmp_path / "src" / "k.cuh").write_text("__global__ void k2() {}\n")
    run()
    assert "k2" in header.read_text()


def test_explicit_instantiation_statement_ends():
    data = b"template __global__ void k<float, 4>(float *, int);\nMAKE_K(half, 4096, 4, 0, General8bit)\nMAKE_K(a, b);\n"
    assert data[:explicit_sites._statement_end(data, 0)].endswith(b"int);")
    second = data.index(b"MAKE_K")
    assert data[second:explicit_sites._statement_end(data, second)] == b"MAKE_K(half, 4096, 4, 0, General8bit)"
    third = data.index(b"MAKE_K(a")
    assert data[third:explicit_sites._statement_end(data, third)] == b"MAKE_K(a, b);"


HALF_STANDIN = """// A stand-in for PyTorch's c10::Half in this test: a 2-byte float converting through float.
#pragma once
#include <cuda_fp16.h>
namespace c10 {
struct alignas(2) Half {
  unsigned short x;
  Half() = default;
  __host__ __device__ Half(float f) : x(__half_as_ushort(__float2half(f))) {}
  __host__ __device__ operator float() const { return __half2float(__ushort_as_half(x)); }
};
}  // namespace c10
namespace at {
using c10::Half;
}  // namespace at
"""


def _torch_shaped_scanlib(tmp_path, framework):
    """golden scanlib whose half unit instantiates the launcher with at::Half (a stand-in header)."""
    import yaml

    root = tmp_path / "input"
    shutil.copytree(Path(__file__).resolve().parents[2] / "golden" / "scanlib" / "input", root)
    (root / "third" / "c10" / "util").mkdir(parents=True)
    (root / "third" / "c10" / "util" / "Half.h").write_text(HALF_STANDIN)
    header = root / "src" / "scan_fwd.cuh"      # as mamba's kernel headers include c10/util/Half.h
    header.write_text(header.read_text().replace("#include <cuda_fp16.h>\n", "#include <c10/util/Half.h>\n"
                                                                          "#include <cuda_fp16.h>\n"))
    unit = root / "src" / "scan_fwd_f16.cu"
    unit.write_text(unit.read_text().replace("<__half,", "<at::Half,").replace(", __half>", ", at::Half>"))
    rule = yaml.safe_load((Path(__file__).resolve().parents[2] / "golden" / "scanlib" / "rule.yaml").read_text())
    rule["analyze"]["include_dirs"] = ["src", "third"]
    rule["migrate"]["kernel_strings"] = {"host_includes": ["c10/util/Half.h"]}
    if framework:
        rule["migrate"]["types"]["framework"] = framework
    (tmp_path / "rule.yaml").write_text(yaml.safe_dump(rule))
    return root, tmp_path / "rule.yaml"


def test_a_pytorch_half_argument_leaves_the_kernel_static_naming_the_rule_key(tmp_path):
    from codemod.apply.command import compute

    root, rule = _torch_shaped_scanlib(tmp_path, None)
    _, report, _ = compute(root, str(rule))
    assert "spells the PyTorch type `at::Half`" in report and "migrate.types.framework: torch" in report
    assert "`scan_fwd_kernel`" in report.split("## Left static")[1].split("##")[0]


@pytest.mark.skipif(_nvrtc_include() is None, reason="needs the NVRTC wheel (apply's precheck)")
def test_framework_torch_maps_half_to_cuda_half_in_the_nvrtc_programs(tmp_path):
    from codemod.cli import main

    root, rule = _torch_shaped_scanlib(tmp_path, "torch")
    assert main(["apply", "--target", str(rule), str(root), "--write", "-q"]) == 0   # NVRTC precheck included
    program = (root / "src" / "rtc" / "scan" / "scan_fwd.cu").read_text()
    assert "using Half = __half;" in program and program.index("using Half") < program.index('#include "src/')
    assert "at::Half" in (root / "src" / "rtc" / "scan" / "kernels_scan_fwd.h").read_text()   # the host spelling


def test_bare_macro_invocation_lines_are_blanked_for_tree_sitter():
    """bitsandbytes' kernels.cu: `MAKE_k(...)` lines without `;` made tree-sitter read the file,
    the `#define`s of those macros included, as ERROR nodes."""
    from codemod.apply.base import source

    data = (b"#define MAKE_k(T) \\\n  template __global__ void k<T>(T *);\n\nMAKE_k(float)\nMAKE_k(half)\n"
            b"void f() { g(1); }\n")
    masked = source.without_bare_invocations(data)
    assert len(masked) == len(data) and b"MAKE_k(float)" not in masked and b"g(1);" in masked
    assert b"#define MAKE_k(T)" in masked
    assert source.template_ids(data, {"k"}) == []          # the macro body's `k<T>` is no handle


@pytest.mark.skipif(shutil.which("g++") is None or _nvrtc_include() is None, reason="needs g++ and the CUDA wheel")
def test_run_time_arguments_fill_their_places_among_the_template_arguments(tmp_path):
    """A factory's template arguments are one list, the run-time ones `at_run_time(position)` in
    it (an enumeration's with its cast); RuntimeValues::filled puts each value of a call (taken())
    in its place and slot() numbers the combination: what the variant's name expression is spelled from."""
    files = _with_stubs(tmp_path, dict(occupancy=False, cooperative=False, shared=False))
    files["probe.cpp"] = (
        '#include <cstdio>\n#include "src/rtc/rtc_stubs.h"\n'
        "enum class Mode { A, B, C };\nnamespace s = lib::rtc::stubs;\n"
        "int main() {\n"
        "  using runtime = s::RuntimeValues<s::Domain<bool, false, true>, s::Domain<Mode, Mode::A, Mode::B, Mode::C>>;\n"
        '  static constexpr auto axes = s::axis_values(s::value(4), s::at_run_time(1, "static_cast<::Mode>("),\n'
        "                                              s::value(true), s::at_run_time(0));\n"
        "  for (const s::AxisValue &a : runtime::filled(axes, runtime::taken(false, Mode::C)))\n"
        '    std::printf("%s %lld %s;", a.text ? a.text : "-", a.number, a.cast ? a.cast : "-");\n'
        '  std::printf(" slot %ld %ld\\n", runtime::slot(false, Mode::C), runtime::slot(true, static_cast<Mode>(7)));\n'
        "}\n")
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    exe = tmp_path / "probe"
    proc = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{_nvrtc_include()}", f"-I{tmp_path}",
                           str(tmp_path / "probe.cpp"), "-o", str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out == "- 4 -;- 2 static_cast<::Mode>(;true 0 -;false 0 -; slot 2 -1\n"
