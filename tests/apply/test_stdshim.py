"""Minimal std shims (`shims.<name>.minimal`): definitions in dependency order, unknown names left
to libcu++, and every definition compiles under NVRTC."""

import pytest

from codemod.apply import stdshim
from codemod.apply.generate import render


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
    shim = render("shim.j2", banner="test", name="type_traits", include="cuda/std/type_traits",
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
