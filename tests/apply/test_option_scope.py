"""option_scope: an option the static build gives some sources only reaches the variants those
sources' entry points instantiate (issue 29: TE's --use_fast_math for activation/*.cu, not cast/*.cu)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from codemod.apply.emit.option_scope import scope, scoped_options
from codemod.apply.plan.plan import Variant

FILES = {"gelu": "activation/gelu.cu", "quantize": "cast/cast.cu", "dequantize": "dequantize/dequantize.cu"}


def _kp(*variants: tuple[dict, list[str]], kinds=("type", "function_pointer", "value")):
    names = ["IType", "OP", "ALIGNED"]
    params = [SimpleNamespace(name=n, kind=k) for n, k in zip(names, kinds)]
    return SimpleNamespace(kernel=SimpleNamespace(id="lib::unary_kernel", params=params),
                           variants=[Variant(dict(zip(names, axes)), [], eps) for axes, eps in variants])


def test_told_apart_by_the_functor_axis():
    kp = _kp((("__half", "&::lib::gelu", "true"), ["gelu"]), (("__half", "nullptr", "true"), ["quantize"]),
             (("float", "&::lib::gelu", "false"), ["gelu"]))
    assert scope(kp, ["activation/*.cu"], FILES) == {"axis": 1, "values": ["&::lib::gelu"]}


def test_all_none_and_a_variant_both_kinds_of_unit_reach():
    kp = _kp((("__half", "&::lib::gelu", "true"), ["gelu"]), (("float", "&::lib::gelu", "true"), ["gelu"]))
    assert scope(kp, ["activation/*.cu"], FILES) == {"axis": -1}
    assert scope(kp, ["fused_softmax/*.cu"], FILES) is None
    # one the cast entry point reaches too does not get it (nvte_quantize never compiles with it)
    kp = _kp((("__half", "nullptr", "true"), ["gelu", "quantize"]), (("float", "&::lib::gelu", "true"), ["gelu"]))
    assert scope(kp, ["activation/*.cu"], FILES) == {"axis": 0, "values": ["float"]}


def test_bool_axis_and_name_fallback():
    kp = _kp((("__half", "nullptr", "true"), ["gelu"]), (("__half", "nullptr", "false"), ["quantize"]))
    assert scope(kp, ["activation/*.cu"], FILES) == {"axis": 2, "values": ["true"]}
    kp = _kp((("__half", "a", "true"), ["gelu"]), (("__half", "b", "false"), ["quantize"]),
             (("__half", "a", "false"), ["dequantize"]), (("__half", "b", "true"), ["dequantize"]),
             kinds=("type", "value", "value"))
    # neither the number axis (spelled from its value at run time) nor the bool tells them apart
    got = scope(kp, ["activation/*.cu"], FILES)
    assert got == {"axis": -1, "names": ["&::lib::unary_kernel<__half, a, true>"]}


def test_only_conditionals_with_sources_are_scoped():
    kp = _kp((("__half", "&::lib::gelu", "true"), ["gelu"]), (("__half", "nullptr", "true"), ["quantize"]))
    conditional = [{"option": "-lineinfo", "cmake_option": "LINEINFO"},
                   {"option": "--use_fast_math", "cmake_option": "FAST", "sources": ["activation/*.cu"]}]
    assert scoped_options(kp, conditional, FILES) == [{"index": 1, "axis": 1, "values": ["&::lib::gelu"], "names": []}]


def test_a_code_generation_option_the_whole_build_gets_must_reach_nvrtc():
    """bitsandbytes' CMake appends --use_fast_math to CMAKE_CUDA_FLAGS: a rule without it had its
    migrated kernels compile to other numerics (their outputs differed from the original's on the
    H200, docs/results/bnb_device.md); apply refuses such a rule, naming the CMake line."""
    from codemod.apply.emit import option_scope
    from codemod.errors import ApplyError

    cmake = 'project(x)\nif(BUILD_CUDA)\n    string(APPEND CMAKE_CUDA_FLAGS " --use_fast_math")\nendif()\n'
    assert option_scope.global_codegen_flags(cmake) == [("--use_fast_math", 3)]
    with pytest.raises(ApplyError, match=r"--use_fast_math \(CMakeLists.txt:3\)") as e:
        option_scope.check_global_flags("CMakeLists.txt", cmake, {"always": ["--std=c++17"], "conditional": []})
    assert "migrate/options/always" in e.value.hint
    option_scope.check_global_flags("CMakeLists.txt", cmake, {"always": ["--use_fast_math"], "conditional": []})
    option_scope.check_global_flags("CMakeLists.txt", 'set(CMAKE_CUDA_FLAGS "-O3")\n', {"always": []})
