"""Tests of the tree-sitter scanner: inline CUDA snippets and the golden mini-libraries."""

import json

import pytest

from codemod.frontend.treesitter import scan_bytes, scan_tree

from ts_samples import GOLDEN, SPLIT, rtc_launch_pos


def text(src: bytes, rng) -> str:
    return src[rng[0]:rng[1]].decode()


PLAIN = b"""__global__ void iota(float *out, int n) {}
void run(float *out, int n) {
  iota<<<grid_for(n), 256>>>(out, n);
}
"""


def test_plain_launch():
    scan = scan_bytes("a.cu", PLAIN)
    [site] = scan.launches
    assert (site.file, site.line, site.col) == ("a.cu", 3, 3)
    assert site.callee == "iota"
    assert site.template_args is None and site.template_args_range is None
    assert site.config == ["grid_for(n)", "256"]
    assert site.args == ["out", "n"]
    assert text(PLAIN, (site.start, site.end)) == "iota<<<grid_for(n), 256>>>(out, n)"
    assert text(PLAIN, site.callee_range) == "iota"
    assert text(PLAIN, site.config_range) == "<<<grid_for(n), 256>>>"
    assert text(PLAIN, site.args_range) == "(out, n)"
    assert not site.recovered
    assert scan.error_count == 0 and scan.errors == []


QUALIFIED = b"""namespace ns {
template <typename T, int N>
__global__ void __launch_bounds__(128) kern(T *x) {}
__global__ void plain(int);
}  // namespace ns
void f(float *x, cudaStream_t s) {
    ns::kern<float, 4><<<1, dim3(2), 0, s>>>(x);
}
"""


def test_qualified_template_launch():
    scan = scan_bytes("q.cu", QUALIFIED)
    [site] = scan.launches
    assert (site.line, site.col) == (7, 5)
    assert site.callee == "ns::kern"
    assert site.template_args == ["float", "4"]
    assert site.config == ["1", "dim3(2)", "0", "s"]
    assert site.args == ["x"]
    assert text(QUALIFIED, site.callee_range) == "ns::kern<float, 4>"
    assert text(QUALIFIED, site.template_args_range) == "<float, 4>"
    assert text(QUALIFIED, site.config_range) == "<<<1, dim3(2), 0, s>>>"
    assert site.start == QUALIFIED.index(b"ns::kern<float")


def test_kernel_declarations():
    scan = scan_bytes("q.cu", QUALIFIED)
    kern, plain = scan.kernels
    assert (kern.name, kern.line, kern.col, kern.is_template) == ("kern", 3, 40, True)
    assert kern.template_params == "<typename T, int N>"
    assert kern.is_definition
    assert text(QUALIFIED, (kern.start, kern.end)).startswith("template <typename T, int N>\n__global__")
    assert text(QUALIFIED, (kern.start, kern.end)).endswith("kern(T *x) {}")
    assert (plain.name, plain.line, plain.is_template, plain.template_params) == ("plain", 4, False, None)
    assert not plain.is_definition
    assert text(QUALIFIED, (plain.start, plain.end)) == "__global__ void plain(int);"


ARCH_GUARDED = b"""template <int N>
__global__ void __launch_bounds__(128) blackwell(float *x) {
#if (defined __CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)
  x[0] = N;
#else
  TRAP("needs sm_100");
#endif  // __CUDA_ARCH__
}
__global__ void over(float *x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ > 899
  x[0] = 1;
#endif
}
__global__ void partly(float *x) {
  x[1] = 2;
#if __CUDA_ARCH__ >= 900
  x[0] = 1;
#endif
}
__global__ void either(float *x) {
#if __CUDA_ARCH__ >= 900 || defined(FORCE)
  x[0] = 1;
#endif
}
__global__ void upper(float *x) {
#if __CUDA_ARCH__ < 1000
  x[0] = 1;
#endif
}
__global__ void hopper_only(float *x) {
#if __CUDA_ARCH__ >= 900 && __CUDA_ARCH__ < 1000
  x[0] = 1;
#endif
}
__global__ void heavy_else(float *x) {
#if __CUDA_ARCH__ >= 1000
  x[0] = 1;
#else
  x[0] = 2;
  x[1] = 3;
#endif
}
"""


@pytest.mark.parametrize("name, arch", [("blackwell", 1000), ("over", 900), ("partly", None), ("either", None),
                                        ("upper", None), ("heavy_else", None)])
def test_body_arch_guard(name, arch):
    """A body that is one `#if __CUDA_ARCH__ >= N` block (an `#else` of one statement allowed) gives
    N; code outside the guard, `||`, upper bounds or a real `#else` give None."""
    kernels = {k.name: k for k in scan_bytes("g.cu", ARCH_GUARDED).kernels}
    assert kernels[name].body_arch_min == arch


@pytest.mark.parametrize("name, bounds", [("upper", (None, 1000)), ("hopper_only", (900, 1000)), ("blackwell", None),
                                          ("either", None), ("partly", None)])
def test_body_arch_range_is_set_only_for_an_upper_bound(name, bounds):
    """A body that is one `#if` bounding __CUDA_ARCH__ from above gives its range; body_arch_min
    stays None there (apply reads it as a lower bound only)."""
    kernels = {k.name: k for k in scan_bytes("g.cu", ARCH_GUARDED).kernels}
    assert kernels[name].body_arch_range == bounds
    if bounds is not None:
        assert kernels[name].body_arch_min is None


VARIABLE = b"""template <typename T>
__global__ void kern(T *x) {}
void f(int *x) {
  auto k = kern<int>;
  k<<<g, b, smem>>>(x, 3);
}
"""


def test_launch_through_variable():
    [site] = scan_bytes("v.cu", VARIABLE).launches
    assert (site.line, site.col, site.callee, site.template_args) == (5, 3, "k", None)
    assert site.config == ["g", "b", "smem"]
    assert site.args == ["x", "3"]
    assert text(VARIABLE, site.args_range) == "(x, 3)"


SWITCH = b"""void f(int *x, DType dtype) {
  SWITCH(dtype, T, kern<T><<<1,1>>>(x););
}
"""


def test_launch_in_statement_list_macro_argument():
    scan = scan_bytes("s.cu", SWITCH)
    [site] = scan.launches
    assert (site.line, site.col, site.callee, site.template_args) == (2, 20, "kern", ["T"])
    assert text(SWITCH, site.callee_range) == "kern<T>"
    assert text(SWITCH, (site.start, site.end)) == "kern<T><<<1,1>>>(x)"
    # The trailing `;` inside the argument list is the one error; it is a sibling, not an ancestor.
    assert scan.error_count == 1 and scan.errors == [(2, 39)]
    assert not site.recovered


def test_error_recovery_splits_template_id():
    scan = scan_bytes("split.cu", SPLIT)
    good, bad = scan.launches
    assert (good.line, good.col, good.callee, good.recovered) == (4, 7, "kern", False)
    # Recovery keeps only the tail of the template-id as the callee.
    assert (bad.line, bad.col, bad.callee, bad.template_args, bad.recovered) == (6, 21, "CType>", None, True)
    assert scan.error_count == 6
    assert scan.errors[0] == (3, 5)


DECLARATOR_IF = b"""template <typename T>
__global__ void
#if defined(__CUDACC__)
__launch_bounds__(32)
#endif
rowsum(const T *in, float *out) {}

template <typename T>
__global__ void fine(T *x) {}
"""


def test_if_inside_declarator_hides_kernel():
    scan = scan_bytes("r.cu", DECLARATOR_IF)
    assert [k.name for k in scan.kernels] == ["fine"]
    assert scan.unattached_globals == [(2, 1)]
    assert scan.error_count > 0


LAUNCH_EX = b"""void fill(float *out, int n) {
  cudaLaunchConfig_t config = {};
  check(cudaLaunchKernelEx(&config, fill_kernel<float>, out, n), "fill");
  cudaFuncSetAttribute(fill_kernel<float>, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024);
}
"""


def test_launch_api_calls():
    scan = scan_bytes("x.cu", LAUNCH_EX)
    assert scan.launches == []
    ex, attr = scan.api_calls
    assert (ex.api, ex.line, ex.col, ex.is_launch) == ("cudaLaunchKernelEx", 3, 9, True)
    assert ex.args == ["&config", "fill_kernel<float>", "out", "n"]
    assert ex.kernel_arg == "fill_kernel<float>"
    assert text(LAUNCH_EX, ex.callee_range) == "cudaLaunchKernelEx"
    assert text(LAUNCH_EX, ex.args_range) == "(&config, fill_kernel<float>, out, n)"
    assert (attr.api, attr.line, attr.col, attr.is_launch, attr.kernel_arg) == (
        "cudaFuncSetAttribute", 4, 3, False, "fill_kernel<float>")


MACRO_BODY = b"""#define LAUNCH(T) \\
  ns::copy<T><<<g, b, 0, s>>>(in, out)
void f() { LAUNCH(float); }
"""


def test_launch_in_macro_body_keeps_spelled_position():
    [site] = scan_bytes("m.cu", MACRO_BODY).launches
    assert (site.line, site.col, site.macro) == (2, 3, "LAUNCH")
    assert site.callee == "ns::copy" and site.template_args == ["T"]
    assert text(MACRO_BODY, (site.start, site.end)) == "ns::copy<T><<<g, b, 0, s>>>(in, out)"
    assert text(MACRO_BODY, site.template_args_range) == "<T>"


def hand_launch_lines(case: str) -> set[tuple[str, int]]:
    doc = json.loads((GOLDEN / case / "hand_count.json").read_text())
    return {(s["file"], s["line"]) for s in doc["launch_sites"]}


def ts_launch_lines(scans) -> set[tuple[str, int]]:
    lines = {(s.file, s.line) for scan in scans.values() for s in scan.launches}
    return lines | {(c.file, c.line) for scan in scans.values() for c in scan.api_calls if c.is_launch}


@pytest.mark.parametrize("case", ["actlib", "castlib"])
def test_golden_launch_lines_match_hand_count(case):
    scans = scan_tree(GOLDEN / case / "input")
    found = ts_launch_lines(scans)
    # actlib's RTC launcher calls cudaLaunchKernel on a runtime handle: not a static launch site.
    extra = {("util/rtc.cpp", rtc_launch_pos()[0])} if case == "actlib" else set()
    assert found == hand_launch_lines(case) | extra


def test_castlib_details():
    scans = scan_tree(GOLDEN / "castlib" / "input")
    src = (GOLDEN / "castlib" / "input" / "src" / "copy.cu").read_bytes()
    body, switch = scans["src/copy.cu"].launches
    assert (body.line, body.col, body.macro, body.callee) == (31, 3, "LAUNCH_COPY", "castlib::copy_kernel")
    assert text(src, body.callee_range) == "castlib::copy_kernel<T>"
    assert (switch.line, switch.col, switch.template_args) == (52, 7, ["IT", "OT", "4"])
    assert text(src, switch.config_range) == "<<<grid, block, 0, stream>>>"
    kernels = {(k.file, k.name, k.line) for s in scans.values() for k in s.kernels}
    assert ("src/reduce.cu", "rowsum_tiled_kernel", 15) not in kernels
    assert ("src/reduce.cu", "rowsum_generic_kernel", 23) in kernels
    assert len(kernels) == 7
    assert scans["src/reduce.cu"].unattached_globals == [(11, 1)]
