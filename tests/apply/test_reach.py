"""apply never exits 0 with code that cannot compile: launches it meant to rewrite and did not,
kernels in an unnamed namespace, programs that `#if CUDA_VERSION` empties under NVRTC."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from codemod.apply.golden import GOLDEN
from codemod.cli import main

RULE = GOLDEN / "actlib" / "activation.yaml"
VP = "util/vectorized_pointwise.h"


def _nvrtc_available() -> bool:
    from codemod.verify import nvrtc

    try:
        nvrtc.load()
    except nvrtc.NvrtcNotFound:
        return False
    return True


needs_nvrtc = pytest.mark.skipif(not _nvrtc_available(), reason="needs NVRTC (the nvidia-cuda-nvrtc wheel)")


def _actlib(tmp_path: Path) -> Path:
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def _rule(tmp_path: Path, *edits: tuple[str, str]) -> str:
    text = RULE.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    out = tmp_path / "rule.yaml"
    out.write_text(text)
    return str(out)


def _unary_kernel_range(text: str) -> tuple[int, int]:
    """Byte range of unary_kernel's definition in actlib's vectorized_pointwise.h."""
    start = text.index("template <int nvec, bool aligned")
    assert "__global__ void unary_kernel(" in text[start:start + 300]
    end = text.index("\n}\n", start) + 3
    return start, end


def _wrap_unary_kernel(root: Path, before: str, after: str) -> None:
    path = root / VP
    text = path.read_text()
    start, end = _unary_kernel_range(text)
    path.write_text(text[:start] + before + text[start:end] + after + text[end:])


@pytest.mark.slow
@needs_nvrtc
def test_kernel_in_an_unnamed_namespace_is_spelled_through_its_enclosing_namespace(tmp_path, capsys):
    """The analysis names it `actlib::(anonymous namespace)::unary_kernel`; C++ and NVRTC's name
    expressions spell `actlib::unary_kernel` (also for an internal-linkage kernel)."""
    root = _actlib(tmp_path)
    _wrap_unary_kernel(root, "namespace {\n", "}  // namespace\n")
    rule = _rule(tmp_path, ("- actlib::unary_kernel\n", "- actlib::(anonymous namespace)::unary_kernel\n"))
    assert main(["apply", "--target", rule, str(root), "--write", "-q"]) == 0, capsys.readouterr().err
    out = root / "rtc" / "activation"
    stubs = (out / "kernels.h").read_text() + (out / "kernels_vectorized_pointwise.h").read_text()
    code = [line for line in stubs.splitlines() if "(anonymous" in line and not line.lstrip().startswith("//")]
    assert code == []
    # the launcher type, from the kernel, reached through its enclosing namespace
    assert "decltype(&::actlib::unary_kernel<nvec, aligned" in stubs
    assert "&::actlib::unary_kernel<nvec, aligned" in stubs
    from codemod.tool_state import manifest_path

    manifest_file = manifest_path(root, "activation")
    manifest = json.loads(manifest_file.read_text())
    unary = next(k for k in manifest["kernels"] if k["id"] == "actlib::(anonymous namespace)::unary_kernel")
    names = [v["name_expression"] for v in unary["variants"]]
    assert names and all(n.startswith("&::actlib::unary_kernel<") for n in names)
    # every name expression lowers under NVRTC (internal linkage included)
    from codemod.verify import nvrtc
    from codemod.verify.manifest import parse_manifest

    parsed = parse_manifest(manifest_file.read_text(), manifest_file, root, {})
    entry = next(k for k in parsed.kernels if k.id == unary["id"])
    result = nvrtc.compile(parsed.read(entry.program_path), entry.program_path,
                           {i: parsed.read(p) for i, p in entry.headers.items()}, entry.nvrtc_options,
                           names, arch="sm_90", include_cuda=True, include_cccl=entry.include_cuda_cccl)
    assert result.ok, result.log_head()
    assert len(result.lowered) == len(names)


def test_a_launch_tree_sitter_cannot_parse_refuses_the_tree(tmp_path, capsys):
    """clang (the analysis) sees the launch through the kernel variable; tree-sitter does not (an
    `#if` inside `<<<...>>>`). Rewriting the variable into a stub object and leaving
    `kernel<<<...>>>` would not compile: apply refuses and names the site."""
    root = _actlib(tmp_path)
    fp8 = root / "cast" / "fp8_quantize.cuh"
    _edit(fp8, "  kernel<<<grid, block, smem, stream>>>(",
          "  kernel<<<grid, block,\n#if 1\n           smem,\n#endif\n           stream>>>(")
    before = fp8.read_text()
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 2
    err = capsys.readouterr().err
    assert "launch of actlib::cast_fp8_kernel at cast/fp8_quantize.cuh:97:3 could not be rewritten" in err
    assert "--exclude" in err
    assert fp8.read_text() == before
    # leaving the kernel static is the way out
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck",
                 "--exclude", "cast_fp8_kernel"]) == 0, capsys.readouterr().err
    assert "kernel<<<grid, block,\n#if 1" in fp8.read_text()


@needs_nvrtc
def test_a_program_an_nvrtc_guard_empties_fails_the_precheck(tmp_path, capsys):
    """The kernel string compiles without name expressions even when a guard NVRTC does not take
    removed the kernel; the precheck compiles real variants, so the emptied program is refused and
    nothing written."""
    root = _actlib(tmp_path)
    _wrap_unary_kernel(root, "#ifndef __CUDACC_RTC__\n", "#endif\n")
    before = (root / VP).read_text()
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q"]) == 2
    err = capsys.readouterr().err
    assert "generated kernel string(s) do not compile under NVRTC; nothing written" in err
    assert "actlib::unary_kernel" in err
    assert (root / VP).read_text() == before and not (root / "rtc" / "activation").exists()


@pytest.mark.slow   # an apply with the precheck, then verify, against the real NVRTC
@needs_nvrtc
def test_cuda_version_is_defined_for_nvrtc_as_the_static_build_saw_it(tmp_path, capsys):
    """`#if CUDA_VERSION >= 12000` (cuda.h's macro, undefined under NVRTC): the stubs pass
    `-DCUDA_VERSION=` with the version the host code was built with, verify and the precheck the
    cuda.h beside NVRTC's headers, so the guarded kernel exists under NVRTC as it did statically."""
    root = _actlib(tmp_path)
    _edit(root / VP, "namespace actlib {\n", "#include <cuda.h>\n\nnamespace actlib {\n")
    _wrap_unary_kernel(root, "#if CUDA_VERSION >= 12000\n", "#endif\n")
    rule = _rule(tmp_path, ("  kernel_strings:\n", "  kernel_strings:\n    host_includes: [cuda.h]\n"))
    assert main(["apply", "--target", rule, str(root), "--write", "-q"]) == 0, capsys.readouterr().err
    strings = (root / "rtc" / "activation" / "kernels.cpp").read_text()   # the kernels' options
    assert '"-DCUDA_VERSION=" ACTLIB_RTC_BUILD_VALUE(CUDA_VERSION)' in strings
    assert "#include <cuda.h>" in strings
    from codemod.verify.programs import cuda_version_options

    assert cuda_version_options()[0].startswith("-DCUDA_VERSION=1")


# Kernels defined in a translation unit (golden/tulib): the device code moves into a header.

TULIB_RULE = GOLDEN / "tulib" / "rule.yaml"


def test_tulib_golden_patch_matches_expected():
    import difflib

    from codemod.apply.golden import golden_patch

    patch, _, manifest = golden_patch("tulib")
    assert manifest == (GOLDEN / "tulib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "tulib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True), n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden tulib "
                    "--update` and review):\n" + diff[:8000])


def test_tulib_device_code_lives_in_one_place(tmp_path, capsys):
    """The kernels, the device helpers passed as OP and the constexpr they use move to
    tu/scaled_kernels.cuh; the .cu keeps its host code (the host-only check, the launchers, the
    alias only the host uses) and includes the header; the NVRTC program includes it too."""
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "tulib" / "input", root)
    original = (root / "tu" / "scaled.cu").read_text()
    assert main(["apply", "--target", str(TULIB_RULE), str(root), "--write", "-q"]) == 0, capsys.readouterr().err
    unit = (root / "tu" / "scaled.cu").read_text()
    header = (root / "tu" / "scaled_kernels.cuh").read_text()
    for moved in ("constexpr int kThreads = 128;", "__device__ __forceinline__ float gelu(float x)",
                  "__device__ __forceinline__ float relu(float x)", "scaled_act_kernel(const IType *in",
                  "row_amax_kernel(const IType *in"):
        assert moved in original and moved in header and moved not in unit, moved
    for kept in ("void check_same_shape(", "using ActFn = float (*)(float);", "void launch_row_amax("):
        assert kept in unit and kept not in header, kept
    # the stubs come after the moved header, a comment line between (no include sorting can swap them)
    assert ('#include "tulib/scaled.h"\n#include "scaled_kernels.cuh"\n'
            '// The host stubs of the kernels the header above defines.\n#include "../rtc/scaled/kernels.h"\n') in unit
    assert "namespace tulib {\nnamespace {\n" in header          # laid out as the unit has them
    # the unit's host-only include stays in the unit, which includes it before the header
    assert '#include "tulib/scaled.h"' not in header and "#ifndef __CUDACC_RTC__\n#include" not in header
    # the NVRTC program is the header itself: no file that only includes it
    assert not (root / "rtc" / "scaled" / "scaled_kernels.cu").exists()
    assert re.search(r'string_code_tu_scaled_kernels_cuh,\s*"tu/scaled_kernels.cuh"',
                     (root / "rtc" / "scaled" / "kernels.cpp").read_text())


def test_device_code_using_host_code_of_the_unit_is_refused(tmp_path, capsys):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "tulib" / "input", root)
    # row_amax_kernel now calls a host-only function of the .cu
    _edit(root / "tu" / "scaled.cu", "  v = warp_reduce_max(v);\n", "  v = warp_reduce_max(v);\n  host_scale();\n")
    _edit(root / "tu" / "scaled.cu", "constexpr int kThreads = 128;\n",
          "constexpr int kThreads = 128;\n\nvoid host_scale() {}\n")
    assert main(["apply", "--target", str(TULIB_RULE), str(root), "--diff", str(tmp_path / "d.diff"), "-q",
                 "--no-precheck"]) == 2
    err = capsys.readouterr().err
    # clang reports the device-to-host call as a parse error of the unit, and a unit the rule migrates
    # with parse errors stops apply, naming it and the call (apply never rewrites code whose analysis
    # is incomplete); without the error, extract.py would refuse the move naming `host_scale`.
    assert "tu/scaled.cu" in err and "parse error(s) in this translation unit the rule migrates" in err, err
    assert "host_scale" in err, err
    assert not (tmp_path / "d.diff").exists()


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                    reason="needs nvcc, cmake and ninja")
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_tulib_builds(tmp_path, legacy):
    import subprocess

    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all
    from tests.golden.test_golden_builds import _nvrtc_root

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "tulib" / "input", root)
    write_all(root, compute(root, str(TULIB_RULE))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           f"-DTULIB_BUILD_LEGACY_STATIC_SCALED={legacy}", "-DCMAKE_BUILD_TYPE=Release"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DTULIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_a_kernel_with_no_instantiation_reached_stays_static(tmp_path, capsys):
    """Entry points outside the analysed units: the kernels have sites but no variants, so nothing
    would be prechecked or verified. They stay static with the reason."""
    rule = tmp_path / "rule.yaml"
    rule.write_text(TULIB_RULE.read_text().replace('entry_points: "^tulib_"', 'entry_points: "^nothing_"'))
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "tulib" / "input", root)
    (tmp_path / "d.diff.report.md").write_text("a previous run's report\n")
    # exit 1: the rule's kernels exist and none was migrated (issue 30: this exited 0)
    assert main(["apply", "--target", str(rule), str(root), "--diff", str(tmp_path / "d.diff"), "-q"]) == 1
    assert "no kernel migrated: the rule's 2 kernel(s) all stay static" in capsys.readouterr().err
    report = (tmp_path / "d.diff.report.md").read_text()        # this run's, not the previous one
    assert report.count("the analysis reached no instantiation of") == 2
    assert "0 kernels migrated" in report or not (tmp_path / "d.diff").read_text().strip()


NESTED_LAUNCH = '''  TULIB_TYPE_SWITCH(in->dtype, IType,
    TULIB_TYPE_SWITCH(in->dtype, JType,
      size_t smem_bytes = 0;
      auto kernel = row_amax_kernel<IType>;
      if (smem_bytes >= 48 * 1024) {
        cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
        TULIB_CHECK(err == cudaSuccess, "smem");
      } kernel<<<static_cast<unsigned>(in->rows), kThreads, smem_bytes, stream>>>(
          static_cast<const IType *>(in->data), amax, in->cols);)  // JType
  )  // IType'''


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                    reason="needs nvcc, cmake and ninja")
def test_a_kernel_variable_launch_tree_sitter_misreads_is_rewritten_at_the_analysis_position(tmp_path, capsys):
    """TE's fp4 transpose form: statements as nested switch-macro arguments, `} kernel<<<...>>>(`.
    tree-sitter takes `in->dtype` for the launch's callee; the launch and the attribute call are
    rewritten from clang's positions (`kernel.launch(...)`, `kernel.set_attribute(...)`), and the
    patched library builds."""
    import subprocess

    from tests.golden.test_golden_builds import _nvrtc_root

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "tulib" / "input", root)
    _edit(root / "tu" / "scaled.cu", '''  TULIB_TYPE_SWITCH(in->dtype, IType, {
    row_amax_kernel<IType><<<static_cast<unsigned>(in->rows), kThreads, 0, stream>>>(
        static_cast<const IType *>(in->data), amax, in->cols);
  });''', NESTED_LAUNCH)
    assert main(["apply", "--target", str(TULIB_RULE), str(root), "--write", "-q"]) == 0, capsys.readouterr().err
    unit = (root / "tu" / "scaled.cu").read_text()
    assert "auto kernel = rtc_scaled::row_amax_kernel<IType>();" in unit
    assert ("cudaError_t err = kernel.set_attribute(cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);"
            in unit)
    assert "} kernel.launch(static_cast<unsigned>(in->rows), kThreads, smem_bytes, stream)(\n" in unit
    assert "<<<" not in unit.split("launch_row_amax", 1)[1]
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DTULIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_prelude_copy_takes_macros_and_keeps_the_conditions_of_specializations():
    """TE's fp4 kernels need common.h's FP4_TYPE_SUPPORTED and the TypeExtrema<fp4e2m1>
    specialization inside `#if FP4_TYPE_SUPPORTED`: both are copied, the latter with its `#if`."""
    from codemod.apply.base import source
    from codemod.apply.emit.prelude_copies import first_name

    data = (b"#ifndef G_H_\n#define G_H_\n#define FP4_OK (CUDA_VERSION >= 12080)\nnamespace lib {\n"
            b"template <typename T>\nstruct Extrema;\n#if FP4_OK\ntemplate <>\nstruct Extrema<char> {\n"
            b"  static constexpr float max = 6.0f;\n};\n#endif\ninline int host_only() { return 1; }\n}\n#endif\n")
    found = source.declarations(data, {"FP4_OK", "Extrema"})
    assert found == [("", "#define FP4_OK (CUDA_VERSION >= 12080)"),
                     ("lib", "template <typename T>\nstruct Extrema;"),
                     ("lib", "#if FP4_OK\ntemplate <>\nstruct Extrema<char> {\n  static constexpr float max = 6.0f;\n};\n#endif")]
    assert [first_name(t) for _, t in found] == ["FP4_OK", "Extrema", "Extrema"]


def test_constexpr_functions_stay_visible_to_nvrtc():
    """A constexpr function without __device__ is callable from device code (nvcc
    --expt-relaxed-constexpr, NVRTC -default-device; TE's ptx::is_supported_arch): not guarded."""
    from codemod.apply.base import source

    data = b"template <int N>\nconstexpr bool supported() { return N > 0; }\n\nint host() { return 2; }\n"
    (start, end), = source.host_only_functions(data)
    assert data[start:end] == b"int host() { return 2; }"


def test_host_functions_with_only_a_comment_between_are_guarded_as_one():
    """TE's vectorized_pointwise.h: CalcAlignment, then CheckAlignment after its doc comment: one
    `#ifndef __CUDACC_RTC__` block, not two back to back; a device declaration between keeps two."""
    from codemod.apply.base import source

    data = (b"inline int a() { return 1; }\n\n/* \\brief b.\n */\n// more\ninline int b() { return 2; }\n"
            b"__device__ int c();\ninline int d() { return 4; }\n")
    found = [data[s:e] for s, e in source.host_only_functions(data)]
    assert found == [data[:data.index(b"__device__") - 1], b"inline int d() { return 4; }"]


def test_a_kernel_head_split_by_an_if_is_not_guarded_as_host_code():
    """`__global__ void` then `#if ... __launch_bounds__(N) #endif` then the declarator (TE's
    compute_rowwise_amax_kernel, CM0202): tree-sitter sees `k(...) {...}` as a definition with no
    qualifier. Guarding it from `k(` on left NVRTC `template <...> __global__ void` dangling
    ("template" is not allowed at the next kernel)."""
    from codemod.apply.base import source

    data = (b"namespace n {\ntemplate <int N>\n__global__ void\n#if defined(__CUDA_ARCH__)\n"
            b"__launch_bounds__(N)\n#endif\n    k(float *out) {\n  out[0] = N;\n}\n\n"
            b"template <int N>\n__global__ void __launch_bounds__(N) c(float *out) { out[0] = N; }\n\n"
            b"void launch(float *out) { c<4><<<1, 1>>>(out); }\n}\n")
    found = [data[s:e] for s, e in source.host_only_functions(data)]
    assert found == [b"void launch(float *out) { c<4><<<1, 1>>>(out); }"]


def test_numeric_limits_shim_is_defined_without_libcu():
    from codemod.apply.base import stdshim

    defined, rest = stdshim.definitions(["numeric_limits"])
    assert rest == [] and "struct numeric_limits<float>" in defined[0]
    assert "3.40282347e+38F" in defined[0]


def test_host_code_already_hidden_from_nvrtc_is_not_guarded_twice():
    """A second rule applied to a tree the first patched (TE: activation, then scaled_activation,
    both shipping util/vectorized_pointwise.h) found the same host functions and nested a second
    `#ifndef __CUDACC_RTC__` around each."""
    from codemod.apply.base import source

    data = (b"namespace n {\n#ifndef __CUDACC_RTC__\ninline int a() { return 1; }\n#endif  // __CUDACC_RTC__\n"
            b"#ifdef __CUDACC_RTC__\n__device__ int b();\n#else\ninline int c() { return 3; }\n#endif\n"
            b"inline int d() { return 4; }\n}\n")
    found = [data[s:e] for s, e in source.host_only_functions(data)]
    assert found == [b"inline int d() { return 4; }"]


@needs_nvrtc
def test_an_include_name_meaning_two_headers_is_respelled_through_an_ancestor_folder(tmp_path, capsys):
    """TE's cast/mxfp8/quantize_mxfp8.cuh reaches two headers named `swizzle.cuh` (its own folder's
    and specialized/'s), each spelled "swizzle.cuh". NVRTC matches in-memory headers by name alone
    (no includer-relative lookup), so one program cannot hold both under that name: apply spells
    every include of the name through an ancestor folder, which the compiler resolves to the same
    file, and the kernel string compiles with both (the precheck). Before: refused."""
    root = _actlib(tmp_path)
    cast = root / "cast"
    (cast / "sub").mkdir()
    (cast / "tile.cuh").write_text("#ifndef ACTLIB_CAST_TILE_CUH_\n#define ACTLIB_CAST_TILE_CUH_\n"
                                   "__device__ inline float tile_scale() { return 1.0f; }\n#endif\n")
    (cast / "sub" / "tile.cuh").write_text("#ifndef ACTLIB_CAST_SUB_TILE_CUH_\n#define ACTLIB_CAST_SUB_TILE_CUH_\n"
                                           "__device__ inline float tile_bias() { return 0.0f; }\n#endif\n")
    (cast / "sub" / "helpers.cuh").write_text('#include "../tile.cuh"\n#include "tile.cuh"\n')
    fp8 = cast / "fp8_quantize.cuh"
    _edit(fp8, '#include "../util/vectorized_pointwise.h"\n',
          '#include "../util/vectorized_pointwise.h"\n#include "sub/helpers.cuh"\n#include "tile.cuh"\n')
    _edit(fp8, "  const float s = *scale;\n", "  const float s = *scale * tile_scale() + tile_bias();\n")
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q"]) == 0, capsys.readouterr().err
    text = fp8.read_text()
    assert '#include "../cast/tile.cuh"' in text and '#include "tile.cuh"' not in text
    helpers = (cast / "sub" / "helpers.cuh").read_text()
    assert '#include "../sub/tile.cuh"' in helpers and '#include "../tile.cuh"' in helpers
    # the compiler finds the same files through the new spellings
    assert (cast / "../cast/tile.cuh").resolve() == (cast / "tile.cuh").resolve()
    assert (cast / "sub" / "../sub/tile.cuh").resolve() == (cast / "sub" / "tile.cuh").resolve()
    from codemod.tool_state import manifest_path

    manifest = json.loads(manifest_path(root, "activation").read_text())
    kernel = next(k for k in manifest["kernels"] if k["id"] == "actlib::cast_fp8_kernel")
    assert kernel["headers"]["../cast/tile.cuh"] == "cast/tile.cuh"
    assert kernel["headers"]["../sub/tile.cuh"] == "cast/sub/tile.cuh"
    assert "tile.cuh" not in kernel["headers"]


def test_a_kernel_sharing_a_device_variable_with_another_kernel_stays_static(tmp_path, capsys):
    """TE's group_quantize_mxfp8_kernel reads `g_tensor_maps`, a namespace-scope `__device__`
    variable update_tma_descriptors writes. An NVRTC module holds its own copy of each such
    variable: migrated, the kernel would read zeros, silently. Apply leaves both kernels static
    and names the variable; a `__device__` variable only one kernel uses, or a `__constant__`,
    does not stop the migration."""
    root = _actlib(tmp_path)
    fp8 = root / "cast" / "fp8_quantize.cuh"
    _edit(fp8, "constexpr size_t kTileRows = 32;\n",
          "constexpr size_t kTileRows = 32;\nstatic __device__ float g_tile_scale[4];\n__device__ int g_own;\n"
          "__constant__ float c_bias;\n")
    _edit(fp8, "  const float s = *scale;\n", "  const float s = *scale * g_tile_scale[0] + g_own + c_bias;\n")
    text = fp8.read_text()
    at = text.index("__global__ void reduce_dbias_kernel(")
    at = text.index("{\n", at) + 2
    fp8.write_text(text[:at] + "  if (threadIdx.x == 0) g_tile_scale[0] = 1.0f;\n" + text[at:])
    report = tmp_path / "report.md"
    assert main(["apply", "--target", str(RULE), str(root), "--diff", str(tmp_path / "d.diff"), "-q",
                 "--no-precheck", "--report", str(report)]) == 0, capsys.readouterr().err
    text = report.read_text()
    for kernel, other in (("cast_fp8_kernel", "reduce_dbias_kernel"), ("reduce_dbias_kernel", "cast_fp8_kernel")):
        line = next(l for l in text.splitlines() if l.startswith(f"- `actlib::{kernel}`"))
        assert f"the __device__ variable `g_tile_scale` (cast/fp8_quantize.cuh), which actlib::{other} also uses" in line
        assert f"list it under migrate.shared_variables.actlib::{kernel}" in line    # the key that settles it
    assert "g_own" not in text and "c_bias" not in text
    assert "- `actlib::unary_kernel`" not in text     # the others migrate


def test_a_non_template_kernel_in_the_rule_stays_static_with_the_reason(tmp_path, capsys):
    """TE's zero_scales_kernel and grouped_compute_scale_kernel are not templates; listed in a
    rule, apply stopped with an internal error (StopIteration looking for template parameters).
    Now the kernel stays static with the reason, and the others migrate."""
    root = _actlib(tmp_path)
    fp8 = root / "cast" / "fp8_quantize.cuh"
    _edit(fp8, "constexpr size_t kTileRows = 32;\n",
          "constexpr size_t kTileRows = 32;\n\n__global__ void zero_kernel(float *p) { p[threadIdx.x] = 0.0f; }\n")
    _edit(fp8, "                                        cols);\n  ACTLIB_CHECK_CUDA(cudaGetLastError());\n",
          "                                        cols);\n  ACTLIB_CHECK_CUDA(cudaGetLastError());\n"
          "  zero_kernel<<<1, 32, 0, stream>>>(dbias_workspace);\n")
    rule = _rule(tmp_path, ("- actlib::unary_kernel\n", "- actlib::unary_kernel\n    - actlib::zero_kernel\n"))
    report = tmp_path / "report.md"
    assert main(["apply", "--target", rule, str(root), "--diff", str(tmp_path / "d.diff"), "-q", "--no-precheck",
                 "--report", str(report)]) == 0, capsys.readouterr().err
    text = report.read_text()
    assert "- `actlib::zero_kernel`: not a template" in text
    assert "zero_kernel<<<1, 32, 0, stream>>>" in fp8.read_text()


@needs_nvrtc
def test_a_body_live_only_on_blackwell_is_prechecked_for_sm_100a(tmp_path, capsys):
    """TE's MXFP8 kernels: the body is one `#if __CUDA_ARCH__ >= 1000` block, so for sm_90 NVRTC
    compiles an empty kernel and a precheck at sm_90 alone passes code that fails where it runs
    (TE: DIVUP_TO_MULTIPLE and align_up missing from the prelude). The precheck compiles such a
    kernel for sm_100a too, and refuses it."""
    root = _actlib(tmp_path)
    fp8 = root / "cast" / "fp8_quantize.cuh"
    _edit(fp8, "  const size_t col = size_t(blockIdx.x) * blockDim.x + threadIdx.x;\n  if (col >= cols) return;\n",
          "#if __CUDA_ARCH__ >= 1000\n  const size_t col = size_t(blockIdx.x) * blockDim.x + threadIdx.x;\n"
          "  if (col >= cols + blackwell_only_helper()) return;\n")
    _edit(fp8, "  dbias[col] = static_cast<IType>(sum);\n}\n", "  dbias[col] = static_cast<IType>(sum);\n#endif\n}\n")
    before = fp8.read_text()
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q"]) == 2
    err = capsys.readouterr().err
    assert "actlib::reduce_dbias_kernel: its kernel string does not compile under NVRTC (sm_100a)" in err
    assert "blackwell_only_helper" in err
    assert "(sm_90)" not in err
    assert fp8.read_text() == before


def test_arch_targets_reach_the_stubs_the_manifest_and_verify(tmp_path, capsys):
    """migrate.options.arch_targets (TE: its CMake builds the activation TUs for sm_100a/sm_120f
    on Blackwell): the stubs append the device's target to the options of its compile (the
    layer's compile keeps the last --gpu-architecture), the manifest records the table, and verify compiles
    sm_120 as sm_120f and sm_90 as itself."""
    from codemod.verify.manifest import parse_manifest
    from codemod.verify.programs import plan, target_arch

    root = _actlib(tmp_path)
    rule = _rule(tmp_path, ("  options:\n", "  options:\n    arch_targets: {100: sm_100a, 120: sm_120f, 121: sm_120f}\n"))
    assert main(["apply", "--target", rule, str(root), "--write", "-q", "--no-precheck"]) == 0, capsys.readouterr().err
    out = root / "rtc" / "activation"
    table = (out / "kernels.cpp").read_text()
    assert re.search(r'\{\s*100,\s*"sm_100a"\s*\},\s*\{\s*120,\s*"sm_120f"\s*\},\s*\{\s*121,\s*"sm_120f"\s*\}', table)
    runtime = (root / "util" / "rtc_stubs.h").read_text()
    assert "compile_options(kernel_, options_)" in runtime and '"--gpu-architecture=" + chosen' in runtime
    from codemod.tool_state import manifest_path

    path = manifest_path(root, "activation")
    manifest = parse_manifest(path.read_text(), path, root, {})
    assert all(k.arch_targets == {100: "sm_100a", 120: "sm_120f", 121: "sm_120f"} for k in manifest.kernels)
    programs = plan([manifest], ["sm_90", "sm_100a", "sm_120"])
    assert {(p.arch, p.target) for p in programs} == {("sm_90", "sm_90"), ("sm_100a", "sm_100a"), ("sm_120", "sm_120f")}
    assert target_arch("sm_121", {121: "sm_120f"}) == "sm_120f" and target_arch("sm_103a", {}) == "sm_103a"
    # a bad table is a rule error naming the key
    bad = _rule(tmp_path, ("  options:\n", "  options:\n    arch_targets: {100: sm_100x}\n"))
    assert main(["apply", "--target", bad, str(_actlib(tmp_path / "b")), "--diff", str(tmp_path / "x.diff"), "-q"]) == 2
    assert "arch_targets" in capsys.readouterr().err
