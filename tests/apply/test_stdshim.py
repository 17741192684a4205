"""Minimal std shims (`shims.<name>.minimal`): definitions in dependency order, unknown names left
to libcu++, and every definition compiles under NVRTC."""

import pytest

from codemod.apply.base import stdshim
from codemod.apply.emit.generate import render


def test_dependencies_come_first_and_unknown_names_are_left():
    texts, rest = stdshim.definitions(["is_same_v", "decay_t", "min"])
    joined = "\n".join(texts)
    assert joined.index("struct integral_constant") < joined.index("struct is_same") < joined.index("is_same_v")
    assert rest == ["decay_t"]


def test_all_definitions_compile_under_nvrtc():
    from codemod.verify import nvrtc

    try:
        lib = nvrtc.load()
    except nvrtc.NvrtcNotFound as exc:
        pytest.skip(f"NVRTC not available: {exc.render()}")
    texts, rest = stdshim.definitions(sorted(stdshim.DEFINITIONS))
    assert rest == []
    shim = render("shim.j2", name="type_traits", include="cuda/std/type_traits",
                  definitions=texts, std_names=[], global_names=[])
    assert "#include" not in shim
    src = """#include <type_traits>
static_assert(std::is_same_v<std::remove_cv_t<const volatile float>, float>);
static_assert(std::is_floating_point<const double>::value && !std::is_floating_point<int>::value);
static_assert(std::is_same<std::conditional_t<false, int, float>, float>::value);
static_assert(std::is_same<std::remove_pointer_t<int *const>, int>::value);
static_assert(std::is_same<std::remove_reference_t<int &&>, int>::value);
template <class T, std::enable_if_t<std::is_same<T, float>::value, int> = 0>
__global__ void k(T *p) { *p = std::min(*p, T(1)) + std::max(*p, T(0)) + std::true_type{}(); }
template __global__ void k<float>(float *);
"""
    r = lib.compile(src, "shim_test.cu", {"type_traits": shim}, arch="sm_90")
    assert r.ok, r.log


def test_minimal_cstdint_needs_no_libcu_include():
    """`<cstdint>` with `minimal: true`: the fixed-width names defined in std and re-exported to
    the global namespace, with no `<cuda/std/cstdint>` (CUDA 13 keeps it under include/cccl, which
    TE's NVRTC layer does not pass: the H200 run failed on it)."""
    from codemod.verify import nvrtc

    names = ["uint8_t", "uint16_t", "uint32_t", "uint64_t", "int8_t", "int16_t", "int32_t", "int64_t"]
    texts, rest = stdshim.definitions(names)
    assert rest == []
    shim = render("shim.j2", name="cstdint", include="cuda/std/cstdint", definitions=texts,
                  std_names=[], global_names=[], defined_global=names)
    assert "#include" not in shim and "using ::std::uint64_t;" in shim
    try:
        lib = nvrtc.load()
    except nvrtc.NvrtcNotFound as exc:
        pytest.skip(f"NVRTC not available: {exc.render()}")
    src = """#include <cstdint>
static_assert(sizeof(uint8_t) == 1 && sizeof(std::int16_t) == 2 && sizeof(uint32_t) == 4);
static_assert(sizeof(std::uint64_t) == 8 && sizeof(int64_t) == 8 && int8_t(-1) < 0);
__global__ void k(uint64_t *p) { *p = static_cast<std::uint32_t>(*p); }
"""
    r = lib.compile(src, "cstdint_test.cu", {"cstdint": shim}, arch="sm_90", include_cuda=False)
    assert r.ok, r.log


def test_a_shim_of_a_c_header_keeps_its_name():
    """<stdint.h>'s shim is shims/stdint.h, not shims/stdint.h.h; <cstdint>'s is shims/cstdint.h."""
    from codemod.apply.base.stdshim import shim_path

    assert shim_path("rtc", "stdint.h") == "rtc/shims/stdint.h"
    assert shim_path("rtc", "cstdint") == "rtc/shims/cstdint.h"
