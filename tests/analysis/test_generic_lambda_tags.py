"""Generic-lambda tags: a helper calls the lambda it is given with `std::true_type{}` /
`std::integral_constant<int, 4>{}`, and the lambda reads `decltype(tag)::value`. Before, the
argument stayed `decltype(tag)::value` (one unresolved instantiation per launch)."""

from pathlib import Path

from codemod.analysis.analyze import analyze

SOURCE = """\
#include <type_traits>
template <typename T, bool kFlag, int kVec> __global__ void k(T *p) {}
template <typename F> void dispatch_bool(bool b, F &&f) {
  if (b) f(std::true_type{});
  else f(std::false_type{});
}
template <typename F> void dispatch_vec(int v, F &&f) {
  if (v == 4) f(std::integral_constant<int, 4>{});
  else f(std::integral_constant<int, 2>{});
}
template <typename T>
void run(T *p, bool flag, int vec) {
  dispatch_bool(flag, [&](auto tag) {
    constexpr bool kFlag = decltype(tag)::value;
    dispatch_vec(vec, [&](auto vtag) {
      k<T, kFlag, decltype(vtag)::value><<<1, 1>>>(p);
    });
  });
}
void api(float *p, bool f, int v) { run(p, f, v); }
"""


def test_tags_take_the_values_the_helper_passes(tmp_path: Path):
    (tmp_path / "t.cu").write_text(SOURCE)
    a = analyze(tmp_path, [], use_cache=False)
    launch = next(s for s in a.sites if s.kind == "launch")
    assert {tuple(v["args"]) for v in launch.variants} == {
        ("float", f, v) for f in ("true", "false") for v in ("2", "4")}
    axes = {ax.param: ax for ax in launch.axes}
    assert axes["kVec"].binding == "value_switch" and axes["kVec"].domain == ["2", "4"]
    assert any("dispatch_bool" in s["detail"] for s in axes["kFlag"].sources)
    assert all(ax.discoverable for ax in launch.axes)
    assert not [d for d in a.diagnostics if d.id == "CM1003"]
