"""Constant folding of template arguments (`nvec = 32 / std::max(sizeof(I), sizeof(O))` -> 8),
with type sizes from clang, and CM1005 where an argument stays an expression."""

from pathlib import Path

import pytest

from codemod.analysis.analyze import analyze
from codemod.analysis.consteval import NotConstant, fold, fold_text


@pytest.mark.parametrize("text, value", [
    ("32/static_cast<int>(std::max(sizeof(__half), sizeof(float)))", "8"),
    ("32 / static_cast<int>(std::max({sizeof(__half), sizeof(__half), sizeof(__nv_bfloat16)}))", "16"),
    ("std::min<size_t>(4, 8) << 1", "8"),
    ("true && (!false) ? 128 : 64", "128"),
    ("-7 / 2", "-3"),
    ("sizeof(float) == 4", "true"),
])
def test_constant_expressions_fold(text, value):
    assert fold_text(text) == value


@pytest.mark.parametrize("text", ["float", "Mode::Plain", "&gelu<float, float>", "kVec * 2", "sizeof(Pair)",
                                  "(f<float>==nullptr)?identity:f<float>", "4"])
def test_other_texts_are_left_as_they_are(text):
    assert fold_text(text) == text


def test_sizes_from_clang_win():
    assert fold("64 / sizeof(Pair)", {"Pair": 8}) == 8
    with pytest.raises(NotConstant):
        fold("64 / sizeof(Pair)", {})


LIB = {
    "k.cu": """\
#include <algorithm>
struct Pair { float a, b; };
template <typename T> constexpr int lanes() { return 4; }
#define SWITCH(dt, T, ...) switch (dt) { \\
  case 0: { using T = float; { __VA_ARGS__ } } break; \\
  case 1: { using T = __half; { __VA_ARGS__ } } break; \\
  case 2: { using T = Pair; { __VA_ARGS__ } } break; }
template <int nvec, typename I, typename O> __global__ void vec_kernel(const I *in, O *out) {}
template <int N, typename T> __global__ void lanes_kernel(T *p) {}
void api_vec(int di, int dout, const void *in, void *out) {
  SWITCH(di, I, SWITCH(dout, O,
    constexpr int nvec = 32 / static_cast<int>(std::max(sizeof(I), sizeof(O)));
    vec_kernel<nvec, I, O><<<1, 32>>>(static_cast<const I *>(in), static_cast<O *>(out));
  ))
}
void api_lanes(int dt, void *p) {
  SWITCH(dt, T, lanes_kernel<lanes<T>(), T><<<1, 32>>>(static_cast<T *>(p));)
}
""",
}


def test_analysis_folds_nvec_and_names_what_it_cannot(tmp_path: Path):
    for rel, text in LIB.items():
        (tmp_path / rel).write_text(text)
    a = analyze(tmp_path, [], use_cache=False)
    site = next(s for s in a.sites if s.kernel == "vec_kernel")
    nvec = next(ax for ax in site.axes if ax.param == "nvec")
    # float 4, __half 2, Pair 8 (sized by clang): 32 / max(.,.)
    assert nvec.domain == ["16", "4", "8"]
    assert next(k for k in a.kernels if k.name == "vec_kernel").instantiations == 9
    cm1005 = [d for d in a.diagnostics if d.id == "CM1005"]
    assert len(cm1005) == 1 and "lanes_kernel" in cm1005[0].message and "lanes<" in cm1005[0].message
    assert "migrate/names/values" in cm1005[0].message
