"""Generic lambdas in a non-template function: clang makes `launch(k<...>)` an operator call
([launch, operator(), args]) there, unlike the dependent call golden/routerlib exercises; and a
lambda that no call passes a kernel to stays unresolved, saying why."""

from pathlib import Path

from codemod.analysis.analyze import analyze

SOURCE = """\
template <typename T, int N> __global__ void k(T *p) {}
template <typename T> __global__ void idle(T *p) {}
void api(float *p, int n) {
  auto launch = [&](auto kernel) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);
    kernel<<<1, 32, 0, 0>>>(p);
  };
  if (n == 4) {
    launch(k<float, 4>);
  } else {
    launch(&k<float, 8>);
  }
  auto never = [&](auto kernel) { kernel<<<1, 1>>>(p); };
}
"""


def test_generic_lambda_in_a_plain_function(tmp_path: Path):
    (tmp_path / "a.cu").write_text(SOURCE)
    a = analyze(tmp_path, [], use_cache=False)
    launch = next(s for s in a.sites if s.line == 6)
    assert launch.kernel == "k" and launch.instantiations == 2
    assert [(p["line"], p["targs"]) for p in launch.generic_lambda["passing_sites"]] == [
        (9, ["float", "4"]), (11, ["float", "8"])]
    assert next(s for s in a.sites if s.line == 5).api == "cudaFuncSetAttribute"
    never = next(s for s in a.sites if s.line == 13)
    assert never.kernel is None and "no call of it passes a kernel" in never.note
    assert {u.kernel: u.reason for u in a.unreached} == {"idle": "not_launched"}
