"""Tree-sitter queries of apply: which includes NVRTC never sees, parameter types without their
top-level qualifiers, and enumeration template arguments in name expressions."""

from __future__ import annotations

import pytest

from codemod.apply.base import source
from codemod.apply.plan.names import Unspellable, argument
from codemod.apply.golden import GOLDEN
from codemod.apply.plan.spec import migrate_spec
from codemod.rule import load_rule_file


def test_includes_in_branches_nvrtc_does_not_take():
    text = b"""#include <a>
#ifdef __CUDACC_RTC__
#include "rtc_only.h"
#else
#include <host_else>
#endif
#ifndef __CUDACC_RTC__
#include <host_ifndef>
#endif
#if !defined(__CUDACC_RTC__)
#include <host_if_not_defined>
#elif FOO
#include <maybe_elif>
#endif
#if defined(__CUDACC_RTC__)
#include "rtc_only_too.h"
#elif BAR
#include <host_elif>
#endif
#if defined(__CUDACC_RTC__) || FOO
#include <unknown_condition>
#endif
"""
    guarded = {i.name: i.rtc_guarded for i in source.includes(text)}
    assert guarded == {"a": False, "rtc_only.h": False, "host_else": True, "host_ifndef": True,
                       "host_if_not_defined": True, "maybe_elif": False, "rtc_only_too.h": False,
                       "host_elif": True, "unknown_condition": False}


@pytest.mark.parametrize("spelled,expected", [
    ("const float *__restrict__", "const float *"),
    ("e8m0_t *const __restrict__", "e8m0_t *"),
    ("const size_t", "size_t"),
    ("const InputType *", "const InputType *"),
    ("Vec<const float *, 4> const", "Vec<const float *, 4>"),
    ("const __grid_constant__ CUtensorMap", "CUtensorMap"),
    ("const float &", "const float &"),
])
def test_value_type_drops_top_level_qualifiers(spelled, expected):
    assert source.value_type(spelled) == expected


def test_kernel_signature_types_are_unqualified():
    text = b"""template <int N>
__global__ void k(const float *__restrict__ in, float *const __restrict__ out, const size_t n) {}
"""
    sig = source.kernel_signature(text, 0, len(text))
    assert sig.param_types == ["const float *", "float *", "size_t"]
    assert sig.param_decls[0] == "const float *__restrict__ in"


def test_enumeration_arguments_are_cast():
    spec = migrate_spec(load_rule_file(GOLDEN / "actlib" / "activation.yaml"))
    assert argument("value", "2", spec, enum="ns::detail::Mode") == "static_cast<::ns::detail::Mode>(2)"
    assert argument("value", "1+1", spec, enum="::ns::Mode") == "static_cast<::ns::Mode>(2)"
    assert argument("value", "2", spec) == "2"
    with pytest.raises(Unspellable):
        argument("value", "Mode::kRow", spec, enum="ns::Mode")


def test_copied_struct_definition_keeps_its_semicolon():
    """`struct X {...};` at namespace scope: tree-sitter leaves the `;` a sibling; a prelude copy
    without it does not compile (TE normalization's KernelParamsBase under NVRTC)."""
    from codemod.apply.base.source import declarations

    src = b"namespace a {\nstruct B { int x; };\nstruct C : public B {\n  int y;\n};\ntemplate <typename T> struct D {};\n}\n"
    assert [t for _, t in declarations(src, {"B", "C", "D"})] == [
        "struct B { int x; };", "struct C : public B {\n  int y;\n};", "template <typename T> struct D {};"]


def test_prelude_copies_find_using_aliases_with_their_conditions():
    """`using fp4e2m1 = __nv_fp4_e2m1;` under `#if FP4_TYPE_SUPPORTED` (TE's common.h): a
    prelude_copy name, copied with its condition (before, "no declaration of fp4e2m1")."""
    from codemod.apply.base.source import declarations

    data = b"namespace te {\n#if FP4_TYPE_SUPPORTED\nusing fp4e2m1 = __nv_fp4_e2m1;\n#endif\n}  // namespace te\n"
    assert declarations(data, {"fp4e2m1"}) == [("te", "#if FP4_TYPE_SUPPORTED\nusing fp4e2m1 = __nv_fp4_e2m1;\n#endif")]


def test_prelude_copies_are_found_in_a_header_tree_sitter_reads_as_one_error():
    """TE's transformer_engine.h closes `extern "C" {` in an `#ifdef __cplusplus` block followed by
    C++ that tree-sitter cannot read: the whole file is one ERROR node, and its enums (the 4over6
    mode) were not found to copy."""
    from codemod.apply.base.source import declarations, parse

    data = (b'#ifndef E_H_\n#define E_H_\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
            b'enum Mode { kModeA = 0, kModeB = 1 };\n#ifdef __cplusplus\n}  // extern "C"\n'
            b'class T {\n  T(const Mode m = kModeA, int x = {1}) : y(x) {}\n  int y;\n};\n#endif\n#endif\n')
    assert [c.type for c in parse(data).children] == ["ERROR"]
    assert declarations(data, {"Mode"}) == [("", "enum Mode { kModeA = 0, kModeB = 1 };")]


def test_a_kernel_whose_head_an_if_splits_is_found():
    """CM0202: the frontend's scanner sees no kernel in `template <...> __global__ void` / `#if ...
    __launch_bounds__(N) #endif` / `k(...) {...}`; apply finds its definition from the head on."""
    from codemod.apply.base.source import kernel_definition, kernel_signature

    data = (b"#include <x.h>\nint before;\ntemplate <typename T, int N>\n__global__ void\n#if defined(__CUDA_ARCH__)\n"
            b"__launch_bounds__(N)\n#endif\n    k(const T *in, float *out) {\n  out[0] = in[0];\n}\n")
    start, end = kernel_definition("k.cuh", data, "k")
    assert data[start:end].startswith(b"template <typename T, int N>") and data[start:end].endswith(b"}")
    assert kernel_signature(data, start, end).param_types == ["const T *", "float *"]
    assert kernel_definition("k.cuh", data, "other") is None


def test_include_conditions():
    from codemod.apply.base.source import include_conditions

    data = (b"#ifndef G_\n#define G_\n#include <a.h>\n#if FP4\n#include <b.h>\n#ifdef X\n#include \"c.h\"\n#endif\n"
            b"#endif\n#endif\n")
    assert include_conditions(data) == {"a.h": [], "b.h": ["#if FP4"], "c.h": ["#if FP4", "#ifdef X"]}


def test_host_of_a_device_host_variable_is_found_and_nothing_else():
    """NVRTC rejects `__host__` on a variable (`attribute "__host__" does not apply here`; TE's
    `__device__ __host__ constexpr size_t kScaleColAlign`): its byte range, for the guard; functions,
    `__device__`-only variables and what is already hidden from NVRTC are left alone."""
    from codemod.apply.base.source import host_variable_qualifiers

    data = (b"namespace a {\n__device__ __host__ constexpr size_t kAlign = 4;\n__device__ constexpr int kB = 2;\n"
            b"__host__ __device__ inline int f(int x) { return x; }\n__host__ __device__ int g(int);\n"
            b"#ifndef __CUDACC_RTC__\n__host__ __device__ constexpr int kHidden = 1;\n#endif\n}\n")
    found = host_variable_qualifiers(data)
    assert [data[a:b] for a, b in found] == [b"__host__"]
    assert data[:found[0][0]].endswith(b"__device__ ")


def test_guard_end_is_the_include_guards_endif_line():
    from codemod.apply.base.source import guard_end

    guarded = b"// c\n#ifndef G_\n#define G_\nint x;\n\n#endif  // G_\n"
    assert guarded[guard_end(guarded):] == b"#endif  // G_\n"
    for unguarded in (b"#pragma once\nint x;\n", b"#ifndef G_\n#define G_\n#endif\nint y;\n"):
        assert guard_end(unguarded) == len(unguarded)
