"""Launchers called from macro bodies the way TE's fused router dispatches them: a macro whose body
invokes another macro (`MODES(F)` -> `LAUNCH(F, Mode::A)` / `LAUNCH(F, Mode::B)`), a body calling
the same launcher twice (`if (bias) f<T, B>(...) else f<T, T>(...)`), a macro parameter named like
the alias passed to it (`DISPATCH(DataType, IndexType)`), and `int32_t` spelled for a type a
switch gives as `int`."""

from pathlib import Path

from codemod.analysis.analyze import analyze

SOURCE = """\
#include <cstdint>
enum class Mode { Off, A, B };
template <typename T, typename B, int F, typename I, Mode M> __global__ void k(T *p) {}
template <typename T, typename B, int F, typename I, Mode M>
void launcher(T *p) { k<T, B, F, I, M><<<1, 1>>>(p); }
#define SWITCH(dt, T, ...) switch (dt) { \\
  case 0: { using T = float; { __VA_ARGS__ } } break; \\
  case 1: { using T = double; { __VA_ARGS__ } } break; }
#define ISWITCH(dt, T, ...) switch (dt) { \\
  case 0: { using T = int32_t; { __VA_ARGS__ } } break; \\
  case 1: { using T = int64_t; { __VA_ARGS__ } } break; }
void api_modes(int dt, int f, int mode, void *p) {
#define LAUNCH(FV, MV) SWITCH(dt, T, launcher<T, float, FV, int32_t, MV>(static_cast<T *>(p));)
#define MODES(FV)            \\
  if (mode == 1) {           \\
    LAUNCH(FV, Mode::A)      \\
  } else {                   \\
    LAUNCH(FV, Mode::B)      \\
  }
  if (f) {
    MODES(1)
  } else {
    MODES(2)
  }
#undef MODES
#undef LAUNCH
}
void api_bias(int dt, int bt, int it, bool bias, void *p) {
#define DISPATCH(DataType, IndexType)                                          \\
  if (bias) {                                                                   \\
    SWITCH(bt, BiasType, launcher<DataType, BiasType, 1, IndexType, Mode::Off>( \\
                             static_cast<DataType *>(p));)                      \\
  } else {                                                                      \\
    launcher<DataType, DataType, 1, IndexType, Mode::Off>(static_cast<DataType *>(p)); \\
  }
  SWITCH(dt, DataType, ISWITCH(it, IndexType, DISPATCH(DataType, IndexType);))
#undef DISPATCH
}
"""


def test_macro_dispatched_launchers(tmp_path: Path):
    (tmp_path / "d.cu").write_text(SOURCE)
    a = analyze(tmp_path, [], use_cache=False)
    got = {tuple(v["args"]) for s in a.sites if s.kernel == "k" for v in s.variants}
    # api_modes: T (2) x F {1, 2} x M {A, B}, B = float, I = int32_t (= int)
    modes = {(t, "float", f, "int", m) for t in ("float", "double") for f in ("1", "2")
             for m in ("Mode::A", "Mode::B")}
    # api_bias: T (2) x B (T, or the bias switch: float, double) x I {int, long}; (T, T) is in the switch
    bias = {(t, b, "1", i, "Mode::Off") for t in ("float", "double") for b in ("float", "double")
            for i in ("int", "long")}
    assert got == modes | bias
    assert next(k for k in a.kernels if k.name == "k").instantiations == 16
