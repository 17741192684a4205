"""Launch wrappers: a function taking the kernel as a parameter and launching it is followed
through that parameter (recognizers/wrappers.py). Before, the launch inside was CM1001 ("a
function parameter not bound to a kernel template here") and the kernels passed were unreached."""

from pathlib import Path

from codemod.analysis.analyze import analyze

SOURCE = """\
template <typename T, int N> __global__ void k(T *p, int n) {}
template <typename T> __global__ void g(T *p) {}
template <typename Kernel, typename... Args>
void launch(Kernel kernel, dim3 grid, dim3 block, cudaStream_t s, Args... args) {
  kernel<<<grid, block, 0, s>>>(args...);
}
template <typename Kernel, typename... Args>
void launch_checked(Kernel kernel, cudaStream_t s, Args... args) {
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);
  launch(kernel, dim3(1), dim3(32), s, args...);
}
void launch_plain(void (*kernel)(float *), float *p) { kernel<<<1, 1>>>(p); }
template <typename T>
void run(T *p, int n, bool wide, cudaStream_t s) {
  if (wide) launch(k<T, 8>, dim3(1), dim3(32), s, p, n);
  else launch(&k<T, 4>, dim3(1), dim3(32), s, p, n);
}
void api(float *p, double *q, int n, bool w, cudaStream_t s) {
  run(p, n, w, s);
  run<double>(q, n, w, s);
  launch_plain(g<float>, p);
  launch_checked(k<int, 2>, s, (int *)nullptr, n);
}
void api_fn(void (*fn)(float *), float *p) { launch_plain(fn, p); }
"""


def test_launch_wrappers_are_followed_through_the_kernel_parameter(tmp_path: Path):
    (tmp_path / "w.cu").write_text(SOURCE)
    a = analyze(tmp_path, [], use_cache=False)
    fan = {k.name: k.instantiations for k in a.kernels}
    # k: T {float, double} x N {4, 8} from run, plus (int, 2) forwarded by launch_checked
    assert fan == {"k": 5, "g": 1}
    launch = next(s for s in a.sites if s.line == 5)
    assert {tuple(v["args"]) for v in launch.variants} == {
        ("float", "4"), ("float", "8"), ("double", "4"), ("double", "8"), ("int", "2")}
    assert launch.via == "kernel"
    axes = {ax.param: ax.binding for ax in launch.axes}
    assert axes["N"] == "runtime_branch"
    attr = next(s for s in a.sites if s.line == 9)
    assert (attr.api, [v["args"] for v in attr.variants]) == ("cudaFuncSetAttribute", [["int", "2"]])
    plain = next(s for s in a.sites if s.line == 12)
    assert [v["args"] for v in plain.variants] == [["float"]]
    # a pointer no analysed caller binds to a kernel (api_fn's caller is outside) stays unresolved
    assert not a.unreached
    assert [d.id for d in a.diagnostics] == []


def test_overloads_are_matched_by_parameter_type(tmp_path: Path):
    """A dependent call names every overload (`launch<N>(p, n)` in a template): the one whose
    parameter types are the arguments' is walked, the caller's template parameters bound. Before,
    both overloads of equal arity were, and `k<double, 4>` was counted for a float-only entry."""
    (tmp_path / "o.cu").write_text(
        "template <typename T, int N> __global__ void k(T *p) {}\n"
        "template <int N> void launch(float *p, int n) { k<float, N><<<1, 1>>>(p); }\n"
        "template <int N> void launch(double *p, int n) { k<double, N><<<1, 1>>>(p); }\n"
        "template <int N, typename T> void run(T *p) { launch<N>(p, 1); }\n"
        "void api(float *p) { run<4>(p); }\n")
    a = analyze(tmp_path, [], use_cache=False)
    assert {tuple(v["args"]) for s in a.sites for v in s.variants} == {("float", "4")}
