"""The activation migration on a full TransformerEngine checkout: runs only when TE_SOURCE_DIR
points at one (the repository root, holding transformer_engine/common). No TE code is stored here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.emit.generate import made_in_loops
from codemod.cli import main

TE = os.environ.get("TE_SOURCE_DIR")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not TE, reason="TE_SOURCE_DIR is not set (a full TransformerEngine checkout)")]


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def te_patch(tmp_path_factory) -> tuple[Path, Path]:
    """(clean copy of the checkout as a git repo, the activation patch)."""
    work = tmp_path_factory.mktemp("te") / "te"
    shutil.copytree(Path(TE), work, ignore=shutil.ignore_patterns(".git", "build", "*.so"))
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    patch = work.parent / "te.patch"
    assert main(["apply", "--target", "activation", str(work / "transformer_engine/common"),
                 "--diff", str(patch), "--quiet"]) == 0
    return work, patch


KERNELS = ("unary_kernel", "unary_grad_kernel", "gated_act_kernel", "dgated_act_kernel")
GROUPED = ("group_cast_fp8_kernel", "group_cast_fp8_rowwise_flat_kernel", "group_cast_fp8_variable_rowwise_flat_kernel",
           "group_cast_fp8_varying_first_rowwise_aligned_flat_kernel")
# issue 14: TMA descriptors, Blackwell-only bodies, arch-specific targets; the dbias reductions
BLACKWELL = ("quantize_mxfp8_kernel", "quantize_gated_mxfp8_kernel", "cast_fp8_1D_kernel", "cast_fp8_2D_kernel",
             "cast_fp8_gated_kernel", "reduce_dbias_kernel", "group_reduce_dbias_kernel", "group_quantize_mxfp8_kernel")
# NVFP4: the build's NVTE_BUILD_NUM_PHILOX_ROUNDS (build_defines), the C API's 4over6 mode nested in
# a type argument, the amax kernel whose head an #if splits
NVFP4 = ("quantize_transpose_nvfp4_kernel", "quantize_transpose_nvfp4_2D_kernel", "quantize_transpose_nvfp4_tuned_1D_kernel",
         "compute_rowwise_amax_kernel", "compute_columnwise_amax_kernel")
# kernels.h's sections: 4over6's Config and the cast entry points' DequantizeParam variants are
# spelled after the headers declaring them; the MXFP8 dequantize kernels come with the cast units
SECTIONS = ("quantize_4over6_kernel", "dequantize_mxfp8_kernel", "group_dequantize_mxfp8_kernel")


def test_deduced_arguments_are_passed_explicitly(te_patch):
    """TE's element-wise launches spell `<nvec, aligned, fp32, Param, OP>` and deduce the pointer
    types: the rewrite appends them as spelled in the launcher (analysis `deduced_from`), so all
    four kernels migrate (docs/results/te_apply.md)."""
    _, patch = te_patch
    text = patch.read_text()
    report = Path(str(patch) + ".report.md").read_text()
    assert "24 kernels migrated" in report
    left_static = report.split("## Left static", 1)[-1]
    for k in KERNELS:
        assert f"`transformer_engine::{k}`: " not in left_static
    for k in GROUPED:
        assert f"::group_quantize_kernel::{k}`: " not in left_static
    for k in BLACKWELL + NVFP4 + SECTIONS:
        assert f"::{k}`: " not in left_static
    # what kernels.h cannot spell where units include it: in the sections of the declaring headers
    rtc = "transformer_engine/common/activation/rtc"
    for section, spelled in (("kernels_dequantize_fp8.h", "type_arg, ::transformer_engine::dispatch::fp8::DequantizeParam)"),
                             ("kernels_quantize_fp8.h", "fn_arg, &::transformer_engine::dispatch::fp8::detail::identity)"),
                             ("kernels_quantize_4over6_nvfp4.h",
                              "type_arg, ::transformer_engine::dispatch::nvfp4::quantize_4over6_kernel::Config<")):
        part = text[text.index(f"+++ b/{rtc}/{section}\n"):]
        assert f"+NVTE_RTC_SPELLING({spelled}" in part[:part.index("diff --git")]
    kernels_h = text[text.index(f"+++ b/{rtc}/kernels.h\n"):]
    kernels_h = kernels_h[:kernels_h.index("diff --git")]
    assert "DequantizeParam" not in kernels_h and "Config<" not in kernels_h and "identity" not in kernels_h
    assert '+#include "../../activation/rtc/kernels_quantize_4over6_nvfp4.h"' in text
    # the stubs hand NVRTC the Philox rounds the host compile saw, not a copy of the default
    assert '"-DNVTE_BUILD_NUM_PHILOX_ROUNDS=" NVTE_RTC_BUILD_VALUE(NVTE_BUILD_NUM_PHILOX_ROUNDS)' in text
    # the grouped MXFP8 kernels read the tensor maps their static writers fill (shared_variables):
    # the launch passes the launching unit's, the layer gains global_address
    assert "update_tma_descriptors`: not listed" in left_static
    assert "+__device__ void *rtc_shared_g_tensor_maps = &::transformer_engine::dispatch::common::g_tensor_maps;" \
        in text
    assert "CUdeviceptr KernelManager::global_address(" in text
    # the one grouped FP8 kernel the rule leaves static, with the reason
    assert "group_quantize_kernel::group_cast_fp8_same_shape_full_tile_kernel`: not listed" in left_static
    # MXFP8's two swizzle.cuh, told apart for NVRTC; the stubs choose sm_100a/sm_120f on Blackwell
    assert '+#include "../specialized/swizzle.cuh"' in text and '+#include "../mxfp8/swizzle.cuh"' in text
    assert re.search(r'\{\s*100,\s*"sm_100a"\s*\}', text) and re.search(r'\{\s*120,\s*"sm_120f"\s*\}', text)
    assert "compile_options(kernel_, options_)" in text
    # the added lines as one string: TE's clang-format breaks a rewritten launch over several lines
    added = re.sub(r"\s+", " ", " ".join(l[1:] for l in text.splitlines() if l.startswith("+"))).replace(
        "() .launch(", "().launch(")
    assert "rtc_activation::unary_kernel<nvec, true, fp32, Param, OP, InputType, OutputType>().launch(" in added
    # an NVFP4 kernel's launcher type: `decltype` of the kernel's address, in its own namespace (nvfp4_scale_t)
    assert re.search(r"-> ?decltype\(&::transformer_engine::dispatch::nvfp4::"
                     r"quantize_transpose_kernel:: ?quantize_transpose_nvfp4_kernel<", added)
    # the grouped MXFP8 launch passes the tensor maps, and the scaling type, swizzle, 2D and shape
    # representation as values (launcher_values): their switches are gone
    assert ("OType>( ::transformer_engine::dispatch::common::g_tensor_maps, scaling_type, "
            "with_gemm_swizzled_scales, use_2d_quantization, shape_rep);") in added
    assert ("rtc_activation::unary_grad_kernel<1, true, fp32, Param, OP, InputType, InputTypeGrad, "
            "OutputType>().launch(") in added
    assert "<<<" not in "".join(l for l in text.splitlines(True) if l.startswith("+") and "launch(" in l)


def test_patch_applies_to_a_clean_checkout(te_patch):
    work, patch = te_patch
    r = _git(work, "apply", "--check", str(patch))   # from the repository root
    assert r.returncode == 0, r.stderr


def test_verify_compiles_a_covering_sample(te_patch, tmp_path):
    """Every kernel string compiles under NVRTC for a greedy cover of the variants (one arch here;
    docs/results/te_apply.md has sm_90 + sm_100a with fast math off and on)."""
    from codemod.verify import nvrtc

    try:
        nvrtc.load()
    except nvrtc.NvrtcNotFound as exc:
        pytest.skip(f"NVRTC not available: {exc.render()}")
    work, patch = te_patch
    applied = tmp_path / "te"
    shutil.copytree(work, applied, ignore=shutil.ignore_patterns(".git"))
    r = subprocess.run(["git", "apply", str(patch)], cwd=applied,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "verify.json"
    rc = main(["verify", str(applied / "transformer_engine/common"), "--arch", "sm_90", "--no-host",
               "--manifest", str(patch) + ".manifest.json", "-j", "2", "-q", "--json", str(out)])
    assert rc == 0
    import json

    report = json.loads(out.read_text())
    assert report["programs"] and all(p["ok"] for p in report["programs"])
    assert {p["kernel"].split("::")[-1] for p in report["programs"] if p["ok"]} == set(KERNELS + GROUPED + BLACKWELL
                                                                                     + NVFP4 + SECTIONS)


def test_layer_gets_the_disk_cache_and_compiles(te_patch):
    """The rule's `nvrtc_layer.cache`: util/rtc.cpp keeps its NVRTC calls; the compile function takes
    the label's mutex, releases its lock before the key, loads or compiles and stores, and takes its
    lock again, all at its call sites; util/rtc_cache.h is added, and the patched
    rtc.cpp compiles with nvcc (toolkit headers from the wheel; cuBLAS/cuDNN and the CMake string
    headers stubbed as for the analysis)."""
    from codemod.frontend.toolchain import make_toolchain
    from codemod.verify.host import find_nvcc

    work, patch = te_patch
    text = patch.read_text()
    assert "+++ b/transformer_engine/common/util/rtc_cache.h" in text
    assert "+  std::lock_guard<std::mutex> label_lock(label_mutex(kernel_label));  // then the layer's lock" in text
    assert "-  std::unique_lock<std::shared_mutex> lock_guard_(lock_);" not in text
    assert "+  if (!cache_key.empty()) rtc_cache::store(cache_key, mangled_name, compiled_code);" in text
    assert "rtc_cache::create_program" not in text and "CompileLock" not in text
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("no nvcc")
    tree = work.parent / "te_applied"
    if not tree.exists():
        shutil.copytree(work, tree)
        assert _git(tree, "apply", str(patch)).returncode == 0
    common = tree / "transformer_engine/common"
    rtc = (common / "util/rtc.cpp").read_text()
    assert "rtc_cache::load(cache_key, &cached_name, &cached_code)" in rtc and "lock_guard_.unlock();" in rtc
    assert "NVTE_CHECK_NVRTC(nvrtcCreateProgram(&program," in rtc       # TE's own NVRTC calls
    tc = make_toolchain(["cublas_v2.h", "cublasLt.h", "cudnn.h", "nccl.h", "string_code_util_math_h.h", "string_code_utils_cuh.h"])
    proc = subprocess.run([nvcc, "-std=c++17", "-x", "cu", "-c", str(common / "util/rtc.cpp"), "-o",
                           str(work.parent / "rtc.o"), "-I", str(common), "-I", str(common / "include"),
                           "-I", str(tc.cuda_include), "-I", str(tc.cuda_include / "cccl"), "-I", str(tc.stub_dir)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_kernel_strings_only_in_kernels_cpp_and_nothing_to_check(te_patch):
    """Issue 15, acceptance 3 and 4 on TE: the rewritten headers include the stubs (kernels.h, the
    shared util/rtc_stubs.h) and no string header; activation/rtc/kernels.cpp includes them and
    compiles with nvcc against the string headers made as TE's CMake makes them. Since issue 29
    it holds no build-time check: the kernels' signatures come from the kernels (decltype) and
    what the preludes needed from common.h moved into common_device.h (move_to), so nothing is a
    copy (before: a hash check of the prelude's copies and of kernels.h's kernel declarations)."""
    from codemod.frontend.toolchain import make_toolchain
    from codemod.verify.host import find_nvcc

    work, patch = te_patch
    tree = work.parent / "te_applied"
    if not tree.exists():
        shutil.copytree(work, tree)
        assert _git(tree, "apply", str(patch)).returncode == 0
    common = tree / "transformer_engine/common"
    for header in ("util/vectorized_pointwise.h", "cast/fp8/group_quantize_fp8.cuh", "activation/rtc/kernels.h",
                   "util/rtc_stubs.h"):
        assert "string_code_" not in (common / header).read_text(), header
    assert '#include "string_code_util_vectorized_pointwise_h.h"' in (common / "activation/rtc/kernels.cpp").read_text()
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("no nvcc")
    strings = work.parent / "string_headers"
    strings.mkdir(exist_ok=True)
    template = (common / "util/string_header.h.in").read_text()
    cmake = (common / "CMakeLists.txt").read_text()
    calls = [c for c in re.findall(r"(?m)^\s*make_string_header_from_file\(\s*(\S+)\s+(\S+)\s*\)", cmake)
             if not c[0].startswith("${")]                                     # the loop's own call
    calls += sorted(made_in_loops(cmake.encode(), "make_string_header_from_file"))     # the CMake block's loop
    # a program per kernel header with the headers its kernels' name expressions need: the element-wise
    # kernels' includes cast/fp8's two headers (the cast entry points' DequantizeParam, dequantize_func,
    # identity)
    assert ("activation/rtc/vectorized_pointwise.cu", "string_code_activation_rtc_vectorized_pointwise_cu") in calls
    for path, symbol in calls:
        (strings / f"{symbol}.h").write_text(template.replace("@STRING_NAME@", symbol).replace(
            "@STRING@", (common / path).read_text()))
    tc = make_toolchain(["cublas_v2.h", "cublasLt.h", "cudnn.h", "nccl.h"])

    def build() -> subprocess.CompletedProcess:
        return subprocess.run([nvcc, "-std=c++17", "-x", "cu", "-c", str(common / "activation/rtc/kernels.cpp"),
                               "-o", str(work.parent / "kernels.o"), "-I", str(common), "-I", str(common / "include"),
                               "-I", str(strings), "-I", str(tc.cuda_include), "-I", str(tc.cuda_include / "cccl"),
                               "-I", str(tc.stub_dir), "-DNVTE_BUILD_ACTIVATION_WITH_FAST_MATH=0"],
                              capture_output=True, text=True, timeout=600)

    proc = build()
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "holds(" not in (common / "activation/rtc/kernels.cpp").read_text()
    assert '#include "common_device.h"' in (common / "common.h").read_text()


def test_rewritten_units_compile(te_patch):
    """Every unit including a rewritten header includes kernels.h through it, possibly before the
    headers that declare what kernels.h names: activation/gelu.cu, activation/gelu_grouped.cu and
    cast/cast.cu of the patched tree compile with nvcc (the front end; the host pass syntax only).
    They did not, with kernels.h spelling cast/fp8's DequantizeParam, dequantize_func and
    detail::identity, 4over6's Config and, in the factories, nvfp4_scale_t (undeclared there); the
    first four are now spelled in the sections of the headers declaring them."""
    from codemod.frontend.toolchain import make_toolchain
    from codemod.verify.host import find_nvcc

    work, patch = te_patch
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("no nvcc")
    tree = work.parent / "te_applied"
    if not tree.exists():
        shutil.copytree(work, tree)
        assert _git(tree, "apply", str(patch)).returncode == 0
    common = tree / "transformer_engine/common"
    tc = make_toolchain(["cublas_v2.h", "cublasLt.h", "cudnn.h", "nccl.h", "string_code_util_math_h.h",
                         "string_code_utils_cuh.h"])
    for unit in ("activation/gelu.cu", "activation/gelu_grouped.cu", "cast/cast.cu"):
        proc = subprocess.run([nvcc, "-std=c++17", "-c", str(common / unit), "-o", str(work.parent / "unit.o"),
                               "-arch=sm_90", "--expt-relaxed-constexpr", "-Xcompiler", "-fsyntax-only",
                               "-I", str(common), "-I", str(common.parent), "-I", str(common / "include"),
                               "-I", str(tc.cuda_include), "-I", str(tc.cuda_include / "cccl"), "-I", str(tc.stub_dir),
                               "-DNVTE_BUILD_ACTIVATION_WITH_FAST_MATH=0", "-DNVTE_BUILD_LEGACY_STATIC_ACTIVATION=0"],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (unit, proc.stderr[-4000:])


def test_docs_and_operator_test_are_generated(te_patch, tmp_path):
    """Issue 15, acceptance 6: the legacy option and NVTE_DISABLE_NVRTC in docs/envvars.rst, and a
    googletest in tests/cpp/operator (joined to test_operator, two ctest runs: NVRTC recording, the
    static fallback comparing) that compiles with nvcc against TE's test headers. gtest's headers come
    from GTEST_INCLUDE_DIR (the compile is skipped without them); cuBLAS/cuDNN headers, which only
    logging.h's macros name, are empty stand-ins."""
    from codemod.verify.host import find_nvcc

    work, patch = te_patch
    text = patch.read_text()
    assert "+.. envvar:: NVTE_BUILD_LEGACY_STATIC_ACTIVATION\n" in text
    assert ("only when the library was built with :envvar:`NVTE_BUILD_LEGACY_STATIC_ACTIVATION` ``ON``" in text)
    assert "+               test_nvrtc_activation.cu\n" in text
    assert "ENVIRONMENT \"NVTE_TEST_NVRTC_RECORD_DIR=${CMAKE_CURRENT_BINARY_DIR};NVTE_DISABLE_NVRTC=1\")" in text
    applied = tmp_path / "te"
    shutil.copytree(work, applied, ignore=shutil.ignore_patterns(".git"))
    r = subprocess.run(["git", "apply", str(patch)], cwd=applied, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    test = (applied / "tests/cpp/operator/test_nvrtc_activation.cu").read_text()
    # one table row per entry point (unary or binary form; gated: a [rows, 2 * cols] input), one test body
    for row in ('{"nvte_gelu", nvte_gelu, nullptr, false}', '{"nvte_dgelu", nullptr, nvte_dgelu, false}',
                '{"nvte_swiglu", nvte_swiglu, nullptr, true}', '{"nvte_dswiglu", nullptr, nvte_dswiglu, true}'):
        assert row in test
    assert test.count("TEST_P(") == 1 and "entry.gated ? 2 * kCols : kCols" in test
    # the output's device bytes: test::Tensor's typed host view checks the element type (the first
    # H200 run of the generated test failed all 198 cases on rowwise_cpu_dptr<unsigned char>)
    assert "rowwise_cpu_dptr" not in test and "cudaMemcpy(bytes.data(), output.rowwise_dptr()" in test
    gtest, nvcc = os.environ.get("GTEST_INCLUDE_DIR"), find_nvcc()
    if not gtest or nvcc is None:
        pytest.skip("GTEST_INCLUDE_DIR or nvcc missing: the generated test is not compiled")
    stand_ins = tmp_path / "stand_ins"
    stand_ins.mkdir()
    for header in ("cublas_v2.h", "cudnn.h", "cublasmp.h", "nccl.h"):
        (stand_ins / header).write_text("/* stand-in: only macro bodies name it */\n")
    from codemod.verify.nvrtc import load

    nvrtc_include = Path(load().path).resolve().parents[1] / "include"
    common = applied / "transformer_engine"
    cmd = [nvcc, "-std=c++17", "-c", "test_nvrtc_activation.cu", "-o", str(tmp_path / "t.o"), "-arch=sm_90",
           "--expt-relaxed-constexpr", f"-I{gtest}", f"-I{common / 'common/include'}", f"-I{common / 'common'}",
           f"-I{common}", "-I..", f"-I{stand_ins}", f"-I{nvrtc_include}"]
    r = subprocess.run(cmd, cwd=applied / "tests/cpp/operator", capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
