"""Golden analysis: structured comparison with the expected JSON, and with the hand counts."""

import difflib
import json
from pathlib import Path

import pytest

from codemod.analysis.golden import CASES, REPO, dump, normalized

HAND = {case: json.loads((REPO / "golden" / case / "hand_count.json").read_text()) for case in CASES}


@pytest.mark.parametrize("case", CASES)
def test_matches_expected_json(analyses, case):
    expected_path = REPO / "golden" / case / "expected" / "analysis.json"
    got = dump(normalized(analyses[case]))
    want = expected_path.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            "expected/analysis.json", "analysis", n=2))
        pytest.fail(f"analysis of golden/{case} changed (regenerate with "
                    f"`python -m codemod.analysis.golden {case}` only if intended):\n{diff[:6000]}")


@pytest.mark.parametrize("case", CASES)
def test_kernel_fanout_matches_hand_count(analyses, case):
    a = analyses[case]
    got = {k.name: k.instantiations for k in a.kernels}
    assert got == HAND[case]["fanout"]["per_kernel"]


@pytest.mark.parametrize("case", CASES)
def test_entry_point_fanout_matches_hand_count(analyses, case):
    a = analyses[case]
    got = {e.name: e.instantiations for e in a.entry_points if e.name in HAND[case]["fanout"]["per_entry_point"]}
    assert got == HAND[case]["fanout"]["per_entry_point"]
    hand_kernels = {e["name"]: e["kernels"] for e in HAND[case]["entry_points"]}
    for e in a.entry_points:
        if e.name in hand_kernels:
            assert {k.split("::")[-1]: n for k, n in e.kernels.items()} == hand_kernels[e.name], e.name


@pytest.mark.parametrize("case", CASES)
def test_tu_fanout_matches_hand_count(analyses, case):
    a = analyses[case]
    for tu, want in HAND[case]["fanout"]["per_tu"].items():
        got = next(t for t in a.translation_units if t.file == tu)
        assert got.instantiations == want["total"], tu
        assert {k.split("::")[-1]: n for k, n in got.kernels.items()} == {k: v for k, v in want.items() if k != "total"}, tu


@pytest.mark.parametrize("case", CASES)
def test_launch_sites_match_hand_count(analyses, case):
    a = analyses[case]
    want = {s["id"] for s in HAND[case]["launch_sites"]}
    got = {f"{s.file}:{s.line}" for s in a.sites if s.kind == "launch"}
    assert got == want


def test_axis_classes_on_actlib(analyses):
    a = analyses["actlib"]
    site = next(s for s in a.sites if s.id.startswith("util/vectorized_pointwise.h:197"))
    axes = {ax.param: ax for ax in site.axes}
    assert axes["aligned"].binding == "runtime_branch"
    assert axes["OP"].binding == "entry_param"
    assert axes["InputType"].binding == "type_switch"
    assert any(s["class"] == "type_switch" and "ACTLIB_TYPE_SWITCH_INPUT" in s["detail"] for s in axes["InputType"].sources)
    assert axes["OutputType"].domain == ["__half", "__nv_bfloat16", "__nv_fp8_e4m3", "__nv_fp8_e5m2", "float"]
    assert axes["nvec"].binding == "constant" and not axes["nvec"].discoverable
    block = next(s for s in a.sites if s.kernel == "actlib::quantize_block_kernel" and s.kind == "launch")
    assert block.via == "kernel"
    assert {ax.param: ax.binding for ax in block.axes}["ROWWISE"] == "runtime_branch"


def test_castlib_corner_cases(analyses):
    a = analyses["castlib"]
    by_id = {s.id.rsplit(":", 1)[0]: s for s in a.sites if s.kind == "launch"}
    assert by_id["src/copy.cu:31"].in_macro_body and by_id["src/copy.cu:31"].expansions == 3
    assert by_id["src/misc.cu:76"].kernel is None  # a caller's function pointer: reported, not guessed
    assert by_id["src/misc.cu:69"].via == "kNegateTable" and by_id["src/misc.cu:69"].instantiations == 3
    assert by_id["src/misc.cu:59"].api == "cudaLaunchKernelEx"
    ids = {d.id for d in a.diagnostics}
    assert {"CM1001", "CM1002", "CM0202"} <= ids
    uses = {(s.api, s.line) for s in a.sites if s.kind == "use" and s.file == "src/reduce.cu"}
    assert ("occupancy", 69) in uses


def test_routerlib_generic_lambdas(analyses):
    """`auto launch = [&](auto kernel) {...}; launch(k<...>);`: the lambda's parameter is bound to
    every kernel passed at every call; the launch and the other uses inside carry the passing
    sites (before: the launches were CM1001 and the kernels unreached)."""
    a = analyses["routerlib"]
    by_id = {s.id.rsplit(":", 1)[0]: s for s in a.sites}
    fwd = by_id["src/topk.cu:84"]
    assert fwd.kind == "launch" and fwd.kernel == "routerlib::topk_forward_kernel" and fwd.instantiations == 18
    g = fwd.generic_lambda
    assert (g["name"], g["param"], g["line"]) == ("launch", "kernel", 80)
    assert [(p["line"], p["targs"], p["branches"]) for p in g["passing_sites"]] == [
        (101, ["T", "0", "M"], ["score_function == 0"]),
        (104, ["T", "1", "M"], ["score_function == 1"]),
        (107, ["T", "2", "M"], ["switch(score_function)"])]
    assert [p["instantiations"] for p in g["passing_sites"]] == [6, 6, 6]
    assert g["function_template_params"] == ["T", "M"]
    assert g["sites"] == ["src/topk.cu:81:5", "src/topk.cu:83:19"]
    assert g["launch"] == {"config": ["grid", "kThreads", "shmem", "stream"],
                           "args": ["logits", "probs", "num_tokens", "num_experts", "topk"]}
    assert {ax.param: ax.binding for ax in fwd.axes} == {"T": "type_switch", "ScoreFunc": "runtime_branch",
                                                         "M": "entry_param"}
    assert by_id["src/topk.cu:81"].api == "cudaFuncSetAttribute" and by_id["src/topk.cu:81"].generic_lambda
    helper = by_id["src/topk.cu:83"]
    assert helper.kind == "use" and helper.api == "helper" and helper.helper == "persistent_grid"
    assert helper.helper_uses == [{"api": "occupancy", "file": "src/common.h", "line": 40, "col": 3,
                                   "param": "kernel_func"}]
    simple = by_id["src/topk.cu:89"].generic_lambda
    assert [(p["targs"], p["constexpr"]) for p in simple["passing_sites"]] == [
        (["T", "false"], ["M==Mode::Plain"]), (["T", "true"], ["!(M==Mode::Plain)"])]
    assert by_id["src/topk.cu:118"].instantiations == 9
    assert not [d for d in a.diagnostics if d.id == "CM1001"]


def test_unreached_kernels_have_reasons(analyses):
    a = analyses["routerlib"]
    got = {u.kernel: (u.reason, u.where) for u in a.unreached}
    assert got == {"routerlib::topk_debug_kernel": ("no_entry_point", ["src/topk.cu:133"]),
                   "routerlib::topk_unused_kernel": ("not_launched", [])}
    assert "topk_debug_dump" in next(u.detail for u in a.unreached if u.reason == "no_entry_point")
    assert [u.kernel for u in analyses["castlib"].unreached] == []
    # actlib's NVRTC transpose kernel is named only in the string its name expression is built from
    assert [(u.kernel, u.reason, u.where) for u in analyses["actlib"].unreached] == [
        ("actlib_rtc::transpose_kernel", "named_in_string", ["transpose/transpose.cpp:39"])]


def test_reports_list_unreached_kernels(analyses):
    from codemod.report.html import render_html
    from codemod.report.text import render

    a = analyses["routerlib"]
    text = render(a, verbose=True)
    assert "Declared kernels not reached (2)" in text and "topk_unused_kernel" in text
    assert "through generic lambda launch (src/topk.cu:80)" in text
    html = render_html(a)
    assert 'id="unreached"' in html and "no_entry_point" in html and "topk_debug_dump" in html
    assert "Through the generic lambda <code>launch</code>" in html


def test_scanlib_explicit_instantiations(analyses):
    """mamba's selective-scan shape: host launchers defined in a header and compiled only where a
    `.cu` lists them (`template void f<A, B>(...);`), kernels listed the same way, and nested
    `BOOL_SWITCH`-style macros. Before, the `.cu` files had no entry point and the bindings' file,
    which only declares the launcher, was charged with every instantiation."""
    a = analyses["scanlib"]
    tus = {t.file: t.instantiations for t in a.translation_units}
    assert tus == {"src/scan_fwd_f32.cu": 16, "src/scan_fwd_f16.cu": 32, "src/scan_fill.cu": 2, "src/scan_api.cpp": 0}
    by_id = {s.id.rsplit(":", 1)[0]: s for s in a.sites}
    fill = by_id["src/scan_fill.cu:14"]
    assert (fill.kind, fill.api, fill.variants[0]["args"]) == ("use", "explicit_instantiation", ["__half", "8"])
    launch = by_id["src/scan_fwd.cuh:65"]
    assert launch.via == "kernel" and launch.instantiations == 48
    flags = {tuple(v["args"][0].split("<")[1].split(", ")[2:5]) for v in launch.variants}
    assert len(flags) == 8   # kIsEvenLen x kHasZ x kIsVariableB, each both ways
    entries = {e.name: e for e in a.entry_points}
    assert (entries["scan_fwd_cuda<__half, __half>"].file, entries["scan_fwd_cuda<__half, __half>"].line) == ("src/scan_fwd_f16.cu", 5)
