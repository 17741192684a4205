"""PyTorch-style nested dispatch macros: a switch over a dtype enum whose cases (made by a macro
that another macro invokes once per type) alias the same name (`scalar_t`) and call the lambda
argument, nested inside each other and around `BOOL_SWITCH`-style flag switches. Before, the
inner `scalar_t` shadowed the outer one inside `using input_t = scalar_t;` and the two type axes
were counted as one (6 instead of 18)."""

from pathlib import Path

from codemod.analysis.analyze import analyze

SOURCE = """\
#include <cuda_fp16.h>
namespace lib { enum class ScalarType { Float, Half, Double }; }
template <lib::ScalarType> struct ScalarTypeToCPPType;
template <> struct ScalarTypeToCPPType<lib::ScalarType::Float> { using type = float; };
template <> struct ScalarTypeToCPPType<lib::ScalarType::Half> { using type = __half; };
template <> struct ScalarTypeToCPPType<lib::ScalarType::Double> { using type = double; };
template <lib::ScalarType N> using ScalarTypeToCPPTypeT = typename ScalarTypeToCPPType<N>::type;
#define LIB_PRIVATE_CASE_TYPE_USING_HINT(enum_type, HINT, ...) \\
  case enum_type: {                                           \\
    using HINT = ScalarTypeToCPPTypeT<enum_type>;             \\
    return __VA_ARGS__();                                     \\
  }
#define LIB_DISPATCH_CASE(enum_type, ...) LIB_PRIVATE_CASE_TYPE_USING_HINT(enum_type, scalar_t, __VA_ARGS__)
#define LIB_DISPATCH_SWITCH(TYPE, NAME, ...) \\
  [&] {                                     \\
    const auto &the_type = TYPE;            \\
    switch (the_type) {                     \\
      __VA_ARGS__                           \\
      default:                              \\
        break;                              \\
    }                                       \\
  }()
#define LIB_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(...)  \\
  LIB_DISPATCH_CASE(lib::ScalarType::Float, __VA_ARGS__) \\
  LIB_DISPATCH_CASE(lib::ScalarType::Double, __VA_ARGS__) \\
  LIB_DISPATCH_CASE(lib::ScalarType::Half, __VA_ARGS__)
#define LIB_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...) \\
  LIB_DISPATCH_SWITCH(TYPE, NAME, LIB_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(__VA_ARGS__))
#define BOOL_SWITCH(COND, CONST_NAME, ...) \\
  [&] {                                    \\
    if (COND) {                            \\
      constexpr bool CONST_NAME = true;    \\
      return __VA_ARGS__();                \\
    } else {                               \\
      constexpr bool CONST_NAME = false;   \\
      return __VA_ARGS__();                \\
    }                                      \\
  }()
template <typename T, typename W, bool kF> __global__ void k(T *p, W *w) {}
void api(lib::ScalarType t, lib::ScalarType wt, bool f, void *p, void *w) {
  LIB_DISPATCH_FLOATING_TYPES_AND_HALF(t, "api", [&] {
    using input_t = scalar_t;
    LIB_DISPATCH_FLOATING_TYPES_AND_HALF(wt, "api_w", [&] {
      BOOL_SWITCH(f, kF, [&] { k<input_t, scalar_t, kF><<<1, 1>>>((input_t *)p, (scalar_t *)w); });
    });
  });
}
"""


def test_nested_dispatch_macros_keep_each_level(tmp_path: Path):
    (tmp_path / "d.cu").write_text(SOURCE)
    a = analyze(tmp_path, [], use_cache=False)
    launch = next(s for s in a.sites if s.kind == "launch")
    types = ("__half", "double", "float")
    assert {tuple(v["args"]) for v in launch.variants} == {
        (t, w, f) for t in types for w in types for f in ("false", "true")}
    axes = {ax.param: ax.binding for ax in launch.axes}
    assert axes == {"T": "derived", "W": "type_switch", "kF": "value_switch"}
    assert not a.diagnostics
