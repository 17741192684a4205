"""Tests of the clang / tree-sitter cross-check on snippets and on the golden mini-libraries.

The clang side is written out as data: what `codemod analyze --json` reports for each golden.
"""


from codemod.analysis.crosscheck import crosscheck, from_analysis_json
from codemod.frontend.treesitter import scan_bytes, scan_tree

from ts_samples import GOLDEN, SPLIT, rtc_launch_pos


def site(file, line, col, kernel, in_macro_body=False, kind="launch"):
    return {"file": file, "line": line, "col": col, "kind": kind, "kernel": kernel,
            "in_macro_body": in_macro_body}


def kernel(name, file, line, is_template=True):
    return {"name": name, "file": file, "line": line, "is_template": is_template}


CASTLIB_SITES = [
    site("src/copy.cu", 37, 27, "castlib::copy_kernel", in_macro_body=True),
    site("src/copy.cu", 38, 27, "castlib::copy_kernel", in_macro_body=True),
    site("src/copy.cu", 39, 28, "castlib::copy_kernel", in_macro_body=True),
    site("src/copy.cu", 52, 7, "castlib::convert_kernel"),
    site("src/misc.cu", 35, 41, "castlib::negate_kernel", kind="use"),
    site("src/misc.cu", 42, 3, "castlib::iota_kernel"),
    site("src/misc.cu", 59, 16, "castlib::fill_kernel"),
    site("src/misc.cu", 69, 3, "castlib::negate_kernel"),
    site("src/misc.cu", 76, 3, None),
    site("src/reduce.cu", 56, 7, "castlib::rowsum_tiled_kernel"),
    site("src/reduce.cu", 58, 7, "castlib::rowsum_generic_kernel"),
    site("src/reduce.cu", 69, 14, "castlib::amax_kernel", kind="use"),
    site("src/reduce.cu", 76, 3, "castlib::amax_kernel"),
]
CASTLIB_KERNELS = [
    kernel("castlib::copy_kernel", "src/copy.cu", 7),
    kernel("castlib::convert_kernel", "src/copy.cu", 16),
    kernel("castlib::fill_kernel", "src/misc.cu", 14),
    kernel("castlib::negate_kernel", "src/misc.cu", 23),
    kernel("castlib::iota_kernel", "src/misc.cu", 6, is_template=False),
    kernel("castlib::rowsum_tiled_kernel", "src/reduce.cu", 15),
    kernel("castlib::rowsum_generic_kernel", "src/reduce.cu", 23),
    kernel("castlib::amax_kernel", "src/reduce.cu", 34),
]


def test_castlib_disagreements_name_their_causes():
    diags = crosscheck(scan_tree(GOLDEN / "castlib" / "input"), CASTLIB_SITES, CASTLIB_KERNELS)
    assert [(d["id"], d["file"], d["line"], d["col"]) for d in diags] == [
        ("CM0201", "src/copy.cu", 37, 27),
        ("CM0201", "src/copy.cu", 38, 27),
        ("CM0201", "src/copy.cu", 39, 28),
        ("CM0202", "src/reduce.cu", 15, None),
    ]
    assert diags[0]["message"] == (
        "launch of castlib::copy_kernel is spelled in the body of macro LAUNCH_COPY "
        "(src/copy.cu:31); clang reports the invocation position, tree-sitter the spelling")
    assert diags[3]["message"].startswith(
        "clang finds __global__ template castlib::rowsum_tiled_kernel here, tree-sitter does not: "
        "an #if ... #endif inside its declarator hides it from tree-sitter (the __global__ at 11:1")
    assert all(d["severity"] == "warning" and d["count"] == 1 for d in diags)


ACTLIB_SITES = [
    site("cast/block_quantize.cuh", 108, 3, "actlib::quantize_block_kernel"),
    site("cast/dispatch.cuh", 125, 11, "actlib::gated_act_kernel"),
    site("cast/dispatch.cuh", 154, 11, "actlib::dgated_act_kernel"),
    site("cast/fp8_quantize.cuh", 97, 3, "actlib::cast_fp8_kernel"),
    site("cast/fp8_quantize.cuh", 105, 5, "actlib::reduce_dbias_kernel"),
    site("util/vectorized_pointwise.h", 197, 5, "actlib::unary_kernel"),
    site("util/vectorized_pointwise.h", 201, 5, "actlib::unary_kernel"),
    site("util/vectorized_pointwise.h", 220, 5, "actlib::unary_grad_kernel"),
    site("util/vectorized_pointwise.h", 224, 5, "actlib::unary_grad_kernel"),
]
ACTLIB_KERNELS = [
    kernel("actlib::unary_kernel", "util/vectorized_pointwise.h", 48),
    kernel("actlib::quantize_block_kernel", "cast/block_quantize.cuh", 38),
    kernel("actlib::unary_grad_kernel", "util/vectorized_pointwise.h", 80),
    kernel("actlib::cast_fp8_kernel", "cast/fp8_quantize.cuh", 17),
    kernel("actlib::gated_act_kernel", "util/vectorized_pointwise.h", 136),
    kernel("actlib::dgated_act_kernel", "util/vectorized_pointwise.h", 157),
    kernel("actlib::reduce_dbias_kernel", "cast/fp8_quantize.cuh", 58),
]


RTC_LAUNCH_LINE, RTC_LAUNCH_COL = rtc_launch_pos()


def test_actlib_only_the_rtc_launcher_differs():
    doc = {"sites": ACTLIB_SITES, "kernels": [{**k, "id": k["name"], "name": k["name"].split("::")[-1]}
                                             for k in ACTLIB_KERNELS]}
    diags = crosscheck(scan_tree(GOLDEN / "actlib" / "input"), **from_analysis_json(doc))
    assert [(d["id"], d["file"], d["line"], d["col"]) for d in diags] == [("CM0201", "util/rtc.cpp", RTC_LAUNCH_LINE, RTC_LAUNCH_COL)]
    assert "'reinterpret_cast<const void *>(kernel)'" in diags[0]["message"]


def test_actlib_rtc_kernel_is_reported_when_kernel_list_is_complete():
    diags = crosscheck(scan_tree(GOLDEN / "actlib" / "input"), ACTLIB_SITES, ACTLIB_KERNELS)
    assert [(d["id"], d["file"], d["line"], d["col"]) for d in diags] == [
        ("CM0202", "rtc/transpose.cu", 6, 17),
        ("CM0201", "util/rtc.cpp", RTC_LAUNCH_LINE, RTC_LAUNCH_COL),
    ]
    scoped = crosscheck(scan_tree(GOLDEN / "actlib" / "input"), ACTLIB_SITES, ACTLIB_KERNELS,
                        files=["util/vectorized_pointwise.h", "cast/dispatch.cuh"])
    assert scoped == []


def test_split_template_id_is_a_callee_mismatch():
    scans = {"s.cu": scan_bytes("s.cu", SPLIT)}
    clang = [site("s.cu", 4, 7, "ns::kern"), site("s.cu", 6, 7, "ns::kern")]
    [diag] = crosscheck(scans, clang, [])
    assert (diag["id"], diag["line"], diag["col"]) == ("CM0203", 6, 7)
    assert diag["message"].startswith("tree-sitter reads the callee of this launch as 'CType>' at 6:21")
    assert "statement-list macro argument" in diag["message"]


SWITCH = b"""template <typename T>
__global__ void kern(T *x) {}
void f(int *x) {
  SWITCH(dtype, T, kern<T><<<1,1>>>(x););
}
"""


def test_agreement_gives_no_diagnostics():
    scans = {"k.cu": scan_bytes("k.cu", SWITCH)}
    assert crosscheck(scans, [site("k.cu", 4, 20, "kern")], [kernel("kern", "k.cu", 2)]) == []


def test_missing_sites_on_both_sides():
    scans = {"k.cu": scan_bytes("k.cu", SWITCH)}
    diags = crosscheck(scans, [site("k.cu", 9, 3, "other")], [kernel("kern", "k.cu", 2)])
    assert [(d["id"], d["line"], d["col"]) for d in diags] == [("CM0201", 4, 20), ("CM0201", 9, 3)]
    assert diags[0]["message"].startswith("tree-sitter finds a launch of 'kern' that clang does not")
    assert diags[1]["message"] == ("clang finds a launch of other here, tree-sitter does not: tree-sitter "
                                   "recovered from 1 syntax errors in this file, the first at 4:39")


def test_from_analysis_json_adapts_sites_and_kernels():
    doc = {"sites": [{"file": "a.cu", "line": 3, "col": 5, "kind": "launch", "api": "<<<>>>",
                      "kernel": "ns::k", "in_macro_body": False, "axes": []}],
           "kernels": [{"id": "ns::k", "name": "k", "file": "a.cu", "line": 1, "is_template": True}]}
    assert from_analysis_json(doc) == {
        "clang_sites": [site("a.cu", 3, 5, "ns::k")],
        "clang_kernels": [kernel("ns::k", "a.cu", 1)],
        "launched_only": True,
    }
