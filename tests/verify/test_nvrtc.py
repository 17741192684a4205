"""The ctypes NVRTC binding on tiny kernels: function-pointer template parameters, in-memory
headers, lowered names, both target archs, and failures that name the program and show the log."""

from __future__ import annotations

import pytest

from codemod.errors import VerifyError

OPS_H = """
namespace ns {
__device__ inline float square(float v) { return v * v; }
template <typename P> __device__ float scaled(float v) { return P(2) * v; }
}
"""

KERNEL = """
#include "ops.h"
#include <cuda_bf16.h>
namespace ns {
template <typename T, float (*OP)(float), bool CLAMP>
__global__ void apply(T *x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = OP(static_cast<float>(x[i]));
  if constexpr (CLAMP) v = fminf(v, 1.0f);
  x[i] = static_cast<T>(v);
}
}
"""

NAMES = ["&::ns::apply<float, &::ns::square, true>", "&::ns::apply<__nv_bfloat16, &::ns::scaled<int>, false>"]


@pytest.mark.parametrize("arch", ["sm_90", "sm_100a", "sm_120"])
def test_compiles_with_in_memory_header_and_lowers_every_name(lib, arch):
    result = lib.compile(KERNEL, "apply.cu", {"ops.h": OPS_H}, [], NAMES, arch=arch)
    assert result.ok, result.log
    assert result.arch == arch
    assert sorted(result.lowered) == sorted(NAMES)
    assert result.cubin_size > 0
    assert result.seconds > 0
    assert result.check() is result


def test_lowered_name_is_the_itanium_mangled_kernel_name(lib):
    result = lib.compile(KERNEL, "apply.cu", {"ops.h": OPS_H}, [], NAMES)
    # void ns::apply<float, &ns::square, true>(float*, int)
    assert result.lowered[NAMES[0]] == "_ZN2ns5applyIfXadL_ZNS_6squareEfEELb1EEEvPT_i"
    assert result.lowered[NAMES[1]].startswith("_ZN2ns5applyI13__nv_bfloat16XadL_ZNS_6scaledIiEEffEELb0EEEvPT_i")


def test_missing_header_fails_with_log_naming_the_program(lib):
    result = lib.compile(KERNEL, "apply.cu", {}, [], NAMES)
    assert not result.compiled and not result.ok
    assert 'cannot open source file "ops.h"' in result.log
    with pytest.raises(VerifyError) as info:
        result.check()
    message = info.value.render()
    assert "apply.cu" in message and "[sm_90]" in message
    assert "ops.h" in message  # the log head is part of the error


def test_syntax_error_in_kernel_is_reported_with_line(lib):
    broken = KERNEL.replace("if (i >= n) return;", "if (i >= n) return")
    result = lib.compile(broken, "broken_apply.cu", {"ops.h": OPS_H}, [], NAMES, arch="sm_100a")
    assert not result.ok
    assert "broken_apply.cu(" in result.log and "error" in result.log
    assert result.describe().startswith("broken_apply.cu [sm_100a]: NVRTC compile failed")


def test_invalid_name_expression_fails_the_program(lib):
    result = lib.compile(KERNEL, "apply.cu", {"ops.h": OPS_H}, [], ["&::ns::apply<float, &::ns::cube, true>"])
    assert not result.ok
    assert "cube" in result.log


def test_options_pass_through_and_std_is_not_doubled(lib):
    result = lib.compile(KERNEL, "apply.cu", {"ops.h": OPS_H}, ["--std=c++20", "--use_fast_math"], NAMES[:1])
    assert result.ok, result.log
    assert result.options.count("--std=c++20") == 1
    assert not any(o == "--std=c++17" for o in result.options)
    assert "--gpu-architecture=sm_90" in result.options


def test_unknown_option_is_a_compile_failure_not_an_exception(lib):
    result = lib.compile(KERNEL, "apply.cu", {"ops.h": OPS_H}, ["--no-such-option"], NAMES[:1])
    assert not result.ok
    assert "--no-such-option" in result.log


def test_supported_archs_include_targets(lib):
    archs = lib.supported_archs()
    assert 90 in archs and 100 in archs
    assert lib.version[0] >= 12


def test_missing_library_is_a_clear_error(monkeypatch, tmp_path):
    from codemod.verify import nvrtc

    monkeypatch.setenv("CODEMOD_NVRTC_LIB", str(tmp_path / "libnvrtc.so.13"))
    with pytest.raises(nvrtc.NvrtcNotFound) as info:
        nvrtc.find_library()
    assert "CODEMOD_NVRTC_LIB" in info.value.render()
    assert "pip install nvidia-cuda-nvrtc" in info.value.render()


def test_bad_arch_name_is_rejected():
    from codemod.verify.nvrtc import arch_options

    assert arch_options("sm_100a") == ["--gpu-architecture=sm_100a"]
    with pytest.raises(VerifyError):
        arch_options("hopper")


def test_cccl_folder_only_when_the_layer_passes_it(lib):
    """libcu++ lives under include/cccl since CUDA 13: verify adds that folder only when the rule
    says the library's NVRTC layer does (`nvrtc_layer.cuda_includes_cccl`), so a kernel string that
    needs it fails here as it would at run time."""
    if not any(d.name == "cccl" for d in lib.include_dirs):
        pytest.skip("this CUDA include tree has no cccl/ folder")
    src = "#include <cuda/std/cstdint>\n__global__ void k(cuda::std::uint32_t *p) { *p = 1; }\n"
    assert lib.compile(src, "with_cccl.cu", include_cccl=True).ok
    without = lib.compile(src, "without_cccl.cu", include_cccl=False)
    assert not without.ok and "cuda/std/cstdint" in without.log


def test_log_head_shows_errors_before_warnings():
    from codemod.verify.nvrtc import CompileResult

    log = "\n".join([
        "a.cuh(3): warning #20012-D: __host__ annotation is ignored",
        "    __host__ __device__ X() = default;",
        "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"",
        "b.cuh(9): error: identifier \"DIVUP\" is undefined",
        "    DIVUP(a, b);",
        "1 error detected in the compilation of \"k.cu\".",
    ])
    head = CompileResult("k.cu", "sm_90", False, log).log_head(lines=3)
    assert head.splitlines()[:3] == ["b.cuh(9): error: identifier \"DIVUP\" is undefined", "    DIVUP(a, b);",
                                     "1 error detected in the compilation of \"k.cu\"."]
    assert head.endswith("(3 more log lines)")
