"""Calls specs of a parity profile (TE: scaled activations, fused router) and kernels_not_run (TE's
NVFP4 transpose): the plan from a synthetic analysis over TE's own headers, the rendered driver,
refusals, the nvcc compile, and plans from real analyses with rules/scaled_activation.yaml and
rules/fused_router.yaml (a checkout in TE_SOURCE_DIR or ./te; the NVFP4 rule's analysis-only
stand-in is tests/parity/fixtures/fp4_transpose.yaml)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from codemod.errors import RuleError, UnsupportedConstruct, UsageError
from codemod.parity.driver import render_driver
from codemod.parity.plan import build_plan, load_profile
from codemod.parity.runner import _combos

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCALED = ["nvte_scaled_swiglu", "nvte_scaled_situglu", "nvte_scaled_clamped_swiglu", "nvte_scaled_dswiglu",
          "nvte_scaled_dsituglu", "nvte_scaled_clamped_dswiglu", "nvte_scaled_srelu", "nvte_scaled_dsrelu"]
ROUTER = ["nvte_fused_topk_with_score_function_forward", "nvte_fused_topk_with_score_function_forward_v2",
          "nvte_fused_topk_with_score_function_forward_with_indices",
          "nvte_fused_topk_with_score_function_forward_qb_v2",
          "nvte_fused_topk_with_score_function_forward_qb_v2_unchecked",
          "nvte_fused_topk_with_score_function_forward_qb_with_indices",
          "nvte_fused_topk_with_score_function_forward_qb_with_indices_unchecked",
          "nvte_qb_histogram_accumulate", "nvte_qb_histogram_accumulate_unchecked",
          "nvte_fused_topk_with_score_function_backward", "nvte_fused_topk_with_score_function_backward_v2",
          "nvte_fused_topk_with_score_function_backward_with_indices",
          "nvte_fused_score_for_moe_aux_loss_forward", "nvte_fused_score_for_moe_aux_loss_forward_v2",
          "nvte_fused_score_for_moe_aux_loss_backward", "nvte_fused_moe_aux_loss_forward",
          "nvte_fused_moe_aux_loss_forward_graph_safe", "nvte_fused_moe_aux_loss_backward"]
TRANSPOSE = ["nvte_cast_transpose", "nvte_transpose", "nvte_cast_transpose_dbias", "nvte_fp8_transpose_dbias",
             *(f"nvte_cast_transpose_dbias_d{a}" for a in ("gelu", "silu", "relu", "qgelu", "srelu")),
             *(f"nvte_d{a}_cast_transpose" for a in ("geglu", "swiglu", "reglu", "qgeglu", "sreglu"))]
# Cases per build and entry point (all variants): inputs x formats x shapes x 2 value sets.
EXPECTED_CASES = {
    "nvte_scaled_swiglu": 360, "nvte_scaled_situglu": 360, "nvte_scaled_clamped_swiglu": 360,
    "nvte_scaled_dswiglu": 540, "nvte_scaled_dsituglu": 540, "nvte_scaled_clamped_dswiglu": 540,
    "nvte_scaled_srelu": 180, "nvte_scaled_dsrelu": 180,
    "nvte_fused_topk_with_score_function_forward": 270, "nvte_fused_topk_with_score_function_forward_v2": 540,
    "nvte_fused_topk_with_score_function_forward_with_indices": 810,
    "nvte_fused_topk_with_score_function_forward_qb_v2": 240,
    "nvte_fused_topk_with_score_function_forward_qb_v2_unchecked": 240,
    "nvte_fused_topk_with_score_function_forward_qb_with_indices": 240,
    "nvte_fused_topk_with_score_function_forward_qb_with_indices_unchecked": 240,
    "nvte_qb_histogram_accumulate": 30, "nvte_qb_histogram_accumulate_unchecked": 30,
    "nvte_fused_topk_with_score_function_backward": 150, "nvte_fused_topk_with_score_function_backward_v2": 300,
    "nvte_fused_topk_with_score_function_backward_with_indices": 450,
    "nvte_fused_score_for_moe_aux_loss_forward": 180, "nvte_fused_score_for_moe_aux_loss_forward_v2": 360,
    "nvte_fused_score_for_moe_aux_loss_backward": 90, "nvte_fused_moe_aux_loss_forward": 48,
    "nvte_fused_moe_aux_loss_forward_graph_safe": 48, "nvte_fused_moe_aux_loss_backward": 60,
}
FP4_KERNEL = ("transformer_engine::quantize_transpose_nvfp4::(anonymous namespace)::"
              "block_scaled_1d_cast_transpose_kernel")


def _te_root() -> Path | None:
    env = os.environ.get("TE_SOURCE_DIR")
    root = (Path(env) if env else REPO / "te") / "transformer_engine" / "common"
    return root if (root / "include" / "transformer_engine" / "fused_router.h").is_file() else None


needs_te = pytest.mark.skipif(_te_root() is None, reason="needs a TransformerEngine checkout (TE_SOURCE_DIR or ./te)")
HEADER = """\
typedef void *NVTETensor;
void demo_op(const NVTETensor input, const NVTETensor act_scales, NVTETensor output, int topk,
             cudaStream_t stream);
"""


def _analysis(names, kernel="k"):
    return {"entry_points": [{"name": n, "file": "x.cu", "line": 1, "kernels": {kernel: {}}} for n in names]}


def _te_plan(names=SCALED + ROUTER, profile=None, kernel="k"):
    return build_plan(_analysis(names, kernel), {"id": "demo", "migrate": {"kernels": [kernel]}},
                      profile or load_profile("te"), _te_root())


def _demo_plan(tmp_path, spec: dict):
    root = tmp_path / "lib"
    (root / "include" / "demo").mkdir(parents=True, exist_ok=True)
    (root / "include" / "demo" / "api.h").write_text(HEADER)
    profile = load_profile("te")
    profile.data = dict(profile.data, headers=["include/demo/api.h"], calls=[dict(spec, match="^demo_op$")])
    return build_plan(_analysis(["demo_op"]), {"id": "demo", "migrate": {"kernels": ["k"]}}, profile, root)


@needs_te
def test_every_entry_gets_its_variants_and_case_count():
    plan = _te_plan()
    per_entry = Counter()
    for label, n in plan.case_counts().items():
        per_entry[label.split("/")[0]] += n
    assert dict(per_entry) == EXPECTED_CASES
    assert sum(per_entry.values()) == 3060 + 3540 + 786   # scaled, top-k router, aux-loss scores and loss
    labels = [e.label for e in plan.entries]
    assert "nvte_scaled_dswiglu/interleave32+no_dscales" in labels
    assert "nvte_fused_topk_with_score_function_forward_v2/sqrtsoftplus_radix_top16_bias+bitmap" in labels
    assert "nvte_fused_topk_with_score_function_forward/softmax_top4" in labels   # BYTEMAP only, no cross
    assert len(labels) == len(set(labels))


@needs_te
def test_scaled_tensors_shapes_dtypes_and_null_scale_gradient():
    plan = _te_plan(SCALED)
    by_label = {e.label: e for e in plan.entries}
    fwd = {a.name: a for a in by_label["nvte_scaled_swiglu/interleave32+scales_fp32"].args}
    assert fwd["input"].dims == ["R", "2*C"] and fwd["input"].dtype == ""
    assert fwd["act_scales"].role == "input" and fwd["act_scales"].dims == ["R"] and fwd["act_scales"].dtype == "fp32"
    assert fwd["output"].dims == ["R", "C"] and fwd["output"].dtype == ""   # the case's format
    assert fwd["glu_interleave_size"].value == "32"
    bwd = {a.name: a for a in by_label["nvte_scaled_dswiglu/contiguous+no_dscales"].args}
    assert bwd["grad_act_scales"].null and bwd["grad_input"].dims == ["R", "2*C"]
    assert by_label["nvte_scaled_dswiglu/contiguous+dscales_bf16"].formats == ["fp32", "fp16", "bf16"]
    situ = {a.name: a.value for a in by_label["nvte_scaled_situglu/contiguous+scales_in"].args if a.role == "scalar"}
    assert situ == {"beta1": "1.0f", "beta2": "1.0f", "glu_interleave_size": "0"}


@needs_te
def test_router_tensors_follow_te_checks():
    plan = _te_plan(ROUTER)
    by_label = {e.label: e for e in plan.entries}
    v2 = {a.name: a for a in by_label["nvte_fused_topk_with_score_function_forward_v2/sigmoid_top4+bitmap"].args}
    assert v2["routing_map"].dims == ["R", "(C + 7) / 8"] and v2["routing_map"].dtype == "byte"
    assert v2["routing_map_format"].value == "NVTE_ROUTING_MAP_FORMAT_BITMAP_U8"
    assert v2["expert_bias"].absent and v2["probs"].dtype == "input" and v2["intermediate_output"].dtype == "fp32"
    assert v2["num_tokens"].value == "static_cast<int>(R)" and v2["score_function"].value == "0"
    grouped = {a.name: a.value for a in
               by_label["nvte_fused_topk_with_score_function_forward_v2/sigmoid_groups8_top8_bias+bytemap"].args
               if a.role == "scalar"}
    assert (grouped["num_groups"], grouped["group_topk"], grouped["topk"]) == ("8", "4", "8")
    qb = {a.name: a for a in
          by_label["nvte_fused_topk_with_score_function_forward_qb_with_indices/fused_atomic_top4+bitmap_i16"].args}
    assert qb["topk_indices"].dims == ["R", "topk"] and qb["topk_indices"].dtype == "int16"
    assert qb["histogram"].zero and qb["histogram"].dims == ["C", "16"]
    assert qb["bin_bounds"].fill == "values" and qb["bin_bounds"].fill_arg == "-2.0f, 2.0f"
    assert qb["histogram_mode"].value == "NVTE_QB_HISTOGRAM_FUSED_ATOMIC"
    bwd = {a.name: a for a in
           by_label["nvte_fused_topk_with_score_function_backward_with_indices/softmax_top4+i64"].args}
    assert bwd["topk_indices"].fill == "distinct" and bwd["topk_indices"].fill_arg == "C"
    assert bwd["topk_indices"].role == "input" and bwd["topk_indices"].dtype == "int64"
    hist = by_label["nvte_qb_histogram_accumulate/bins300"]
    assert hist.inputs == ["fp32"] and hist.formats == ["native"]
    # The router's shapes are appended to the profile's (indices of the default shapes unchanged).
    assert plan.shapes_rc[:5] == [(64, 256), (33, 97), (1, 320), (0, 64), (96, 2048)]
    assert [plan.shapes_rc[i] for i in hist.shapes] == [(64, 128), (33, 37), (1, 256), (0, 64), (520, 320)]
    assert plan.formats[8].name == "native" and [f.name for f in plan.formats[:8]] == [
        "fp32", "fp32+amax", "fp16", "fp16+amax", "bf16", "bf16+amax", "fp8e4m3", "fp8e5m2"]


@needs_te
def test_driver_fills_calls_tensors_and_masks_entries():
    plan = _te_plan(SCALED + ROUTER)
    text = render_driver(plan, version="<version>")
    flat = re.sub(r"\s+", " ", text)
    # Null handle, handle without buffers, zeroed accumulating output, distinct indices, constants.
    assert re.search(r"nvte_scaled_dswiglu\(binding::raw\(h_grad\), binding::raw\(h_input\), "
                     r"binding::raw\(h_act_scales\), binding::raw\(h_grad_input\), nullptr, 0, stream\);", flat)
    assert "expert_bias = Tensor(); // a handle without buffers" in flat
    assert re.search(r"histogram = make_plain_output\(\d+, 2, static_cast<size_t>\(C\), static_cast<size_t>\(300\), "
                     r"true\);", flat)
    assert re.search(r"topk_indices = make_filled\(c, \d+, 2, static_cast<size_t>\(R\), static_cast<size_t>\(topk\), "
                     r"Fill::kDistinct, static_cast<size_t>\(C\), \{\}, 1\);", flat)
    assert "Fill::kValues, 0, {-2.0f, 2.0f}" in flat
    assert "Fill::kMask01" in flat and "Fill::kBits" in flat
    # 1-D tensors keep their rank in the handle (TE compares cutoff and bin_bounds shapes exactly).
    assert "t.ndim == 1 ? flat_shape(t.rows) : shape(t.rows, t.cols)" in flat
    # Entry masks: a scaled entry runs formats fp32, fp16, bf16 (bits 0, 2, 4) on the default shapes;
    # a router entry the native format (the last) on its own shapes.
    native_bit = 1 << [f.name for f in plan.formats].index("native")
    assert re.search(r'\{"nvte_scaled_srelu/scales_in", .*?, 1u << 0 \| 1u << 1 \| 1u << 2, 0x15ull, 0x1full\}', flat)
    assert re.search(r'\{"nvte_qb_histogram_accumulate/bins1", .*?, 1u << 0, 0x%xull, 0x1e8ull\}' % native_bit, flat)
    # No calls tensors' dump of inputs: outputs only.
    call = flat[flat.index("struct Call_nvte_qb_histogram_accumulate__bins16 "):]
    call = call[:call.index("};")]
    assert 'd.tensor("histogram", histogram);' in call and 'd.tensor("raw_scores"' not in call


@needs_te
def test_bench_keys_use_labels_and_fall_back_to_the_entry_format():
    plan = json.loads(_te_plan(["nvte_scaled_srelu", "nvte_qb_histogram_accumulate"]).to_json())
    keys = _combos(plan, ["bf16+amax", "fp8e4m3", "bf16"])
    assert "nvte_scaled_srelu/scales_in:fp16:bf16" in keys
    assert not any(k.startswith("nvte_scaled_srelu/scales_in:fp16:fp8") for k in keys)
    assert "nvte_qb_histogram_accumulate/bins16:fp32:native" in keys


@needs_te
def test_nvfp4_kernel_entries_are_not_called_with_the_reason():
    reason = "nvte_quantize, nvte_quantize_v2: NVFP4 .*ARCH_BLACKWELL_FAMILY.*compile-verified only"
    with pytest.raises(UsageError, match=reason):
        _te_plan(["nvte_quantize", "nvte_quantize_v2"], kernel=FP4_KERNEL)
    # Beside a runnable kernel the entry point is called; only-NVFP4 entries are listed.
    analysis = _analysis(["nvte_quantize"], FP4_KERNEL)
    analysis["entry_points"] += _analysis(["nvte_gelu"], "transformer_engine::unary_kernel")["entry_points"]
    plan = build_plan(analysis, {"id": "d", "migrate": {"kernels": [FP4_KERNEL, "transformer_engine::unary_kernel"]}},
                      load_profile("te"), _te_root())
    assert [e.name for e in plan.entries] == ["nvte_gelu"]
    assert plan.not_called[0]["name"] == "nvte_quantize" and "sm_100" in plan.not_called[0]["why"]
    # The migrated kernel itself is listed as compile-verified only (in the result and the report).
    assert any(c.startswith(FP4_KERNEL + ": NVFP4") for c in plan.compile_verified_only)


@pytest.mark.parametrize("spec, error, message", [
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R", "rows"]}}}, RuleError, "names rows"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R, C"]}}}, RuleError, "is not an expression"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R); abort("]}}}, RuleError, "is not an expression"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"], "colour": 1}}}, RuleError, "unknown keys"),
    ({"tensors": {"act_scales": {"role": "input"}, "input": {"dims": []}}}, RuleError, "needs dims"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"]}, "output": {"dims": ["R"], "fill": "bits"}}},
     RuleError, "cannot take fill"),
    ({"tensors": {"act_scales": {"role": "output", "dims": ["R"]}, "output": {"dims": ["R"]}}},
     UnsupportedConstruct, "at most one that takes the case's format"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"], "dtype": "fp6"}}}, RuleError, "unknown dtype fp6"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"], "fill": "gauss"}}}, RuleError, "fill is random"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"], "dtype": "int32"}}}, RuleError,
     "int32 input `act_scales` needs fill: mask01"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"]}}, "scalars": {"topk": 1},
      "variants": [{"name": "a"}, {"name": "a"}]}, RuleError, "distinct names"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"]}}, "scalars": {"topk": 1},
      "variants": [{"name": "a b"}]}, RuleError, "letters, digits"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"]}}, "scalars": {"topk": 1}, "formats": ["mxfp8"]},
     RuleError, "unknown format mxfp8"),
    ({"tensors": {"act_scales": {"role": "input", "dims": ["R"]}}, "scalars": {"topk": 1}, "flavour": 2},
     RuleError, "unknown keys"),
])
def test_invalid_calls_spec_is_refused(tmp_path, spec, error, message):
    spec = dict(spec)
    spec.setdefault("scalars", {"topk": 1})
    with pytest.raises(error, match=re.escape(message)):
        _demo_plan(tmp_path, spec)


def test_calls_spec_scalars_may_use_the_case_shape(tmp_path):
    plan = _demo_plan(tmp_path, {"tensors": {"act_scales": {"role": "input", "dims": ["R"]}},
                                 "scalars": {"topk": "static_cast<int>(C) / 2"}})
    text = re.sub(r"\s+", " ", render_driver(plan, version="<version>"))
    assert "[[maybe_unused]] const auto topk = static_cast<int>(C) / 2;" in text
    assert "demo_op(binding::raw(h_input), binding::raw(h_act_scales), binding::raw(h_output), " \
           "static_cast<int>(C) / 2, stream);" in text


@pytest.mark.skipif(shutil.which("nvcc") is None or _te_root() is None,
                    reason="needs nvcc and a TransformerEngine checkout (TE_SOURCE_DIR or ./te)")
def test_te_calls_driver_compiles_against_te_headers(tmp_path):
    root = _te_root()
    src = tmp_path / "driver.cu"
    src.write_text(render_driver(_te_plan(SCALED + ROUTER + TRANSPOSE)))
    proc = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "d.o"),
                           f"-I{root / 'include'}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def _real_plan(tmp_path, target: str):
    """Analysis of the rule's TUs on TE (a rule of rules/ or an analyze-only fixture), then the plan
    with every kernel the analysis connects to an entry point as migrate.kernels."""
    from codemod.cli import main

    root = _te_root()
    out = tmp_path / "a.json"
    assert main(["analyze", str(root), "--target", target, "--json", str(out)]) in (0, 1)
    analysis = json.loads(out.read_text())
    kernels = sorted({k for ep in analysis["entry_points"] for k in ep.get("kernels", {})})
    return analysis, build_plan(analysis, {"id": "t", "migrate": {"kernels": kernels}}, load_profile("te"), root)


@needs_te
def test_scaled_activation_plan_from_the_real_analysis(tmp_path):
    from codemod.rule import load_rule

    analysis, _ = _real_plan(tmp_path, "scaled_activation")
    plan = build_plan(analysis, load_rule("scaled_activation").raw, load_profile("te"), _te_root())
    assert sorted({e.name for e in plan.entries}) == sorted(SCALED)
    per_entry = Counter()
    for label, n in plan.case_counts().items():
        per_entry[label.split("/")[0]] += n
    assert dict(per_entry) == {n: EXPECTED_CASES[n] for n in SCALED}
    assert {k.split("::")[-1] for e in plan.entries for k in e.kernels} == {
        "scaled_gated_forward_kernel", "scaled_gated_backward_kernel", "scaled_unary_forward_kernel",
        "scaled_unary_backward_kernel"}


@needs_te
def test_fused_router_plan_from_the_real_analysis(tmp_path):
    """rules/fused_router.yaml (every fused_router TU): every entry point the analysis connects to
    a kernel is planned with its calls spec (the profile covers all of them); entry points it
    connects to none are not (the frontend's reach decides, issue 13)."""
    analysis, plan = _real_plan(tmp_path, "fused_router")
    reaching = {ep["name"] for ep in analysis["entry_points"] if ep.get("kernels")}
    assert {e.name for e in plan.entries} == reaching
    assert reaching <= set(ROUTER) and {"nvte_qb_histogram_accumulate", "nvte_fused_moe_aux_loss_backward"} <= reaching
    per_entry = Counter()
    for label, n in plan.case_counts().items():
        per_entry[label.split("/")[0]] += n
    assert dict(per_entry) == {n: EXPECTED_CASES[n] for n in reaching}


def _te_norm_root() -> Path | None:
    """TE before its hand-written norm migration (the parent of aef96db0c): TE_NORM_SOURCE_DIR or ./te_norm."""
    env = os.environ.get("TE_NORM_SOURCE_DIR")
    root = (Path(env) if env else REPO / "te_norm") / "transformer_engine" / "common"
    return root if (root / "include" / "transformer_engine" / "normalization.h").is_file() else None


NORM = ["nvte_layernorm_fwd", "nvte_layernorm_bwd", "nvte_rmsnorm_fwd", "nvte_rmsnorm_bwd", "nvte_rmsnorm_bwd_add"]


@pytest.mark.skipif(_te_norm_root() is None, reason="needs TE's pre-#3156 tree (TE_NORM_SOURCE_DIR or ./te_norm)")
def test_normalization_entries_take_the_workspace_query_and_their_own_tensors(tmp_path):
    plan = build_plan(_analysis(NORM), {"id": "norm", "migrate": {"kernels": ["k"]}}, load_profile("te"),
                      _te_norm_root())
    per_entry = Counter()
    for label, n in plan.case_counts().items():
        per_entry[label.split("/")[0]] += n
    assert dict(per_entry) == {"nvte_layernorm_fwd": 504, "nvte_rmsnorm_fwd": 504, "nvte_layernorm_bwd": 72,
                               "nvte_rmsnorm_bwd": 72, "nvte_rmsnorm_bwd_add": 72}
    fwd = {a.name: a for a in next(e for e in plan.entries if e.label == "nvte_layernorm_fwd/zero_centered_gamma").args}
    assert fwd["workspace"].role == "workspace" and not fwd["workspace"].dims   # size query, as before
    assert fwd["z"].dtype == "" and fwd["mu"].dims == ["R"] and fwd["mu"].dtype == "fp32"
    assert fwd["zero_centered_gamma"].value == "true" and fwd["multiprocessorCount"].value == "132"
    bwd = {a.name: a for a in next(e for e in plan.entries if e.label == "nvte_rmsnorm_bwd_add/gamma").args}
    assert bwd["add"].role == "input" and bwd["dx"].dtype == "input" and bwd["dgamma"].dims == ["C"]
    text = render_driver(plan, version="<version>")
    # A 1-D workspace shape stays 1-D when it is bound again (TE compares it exactly).
    assert "t.ndim = s.ndim == 1 ? 1 : 2;" in text
    if shutil.which("nvcc"):
        src = tmp_path / "driver.cu"
        src.write_text(text)
        proc = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "d.o"),
                               f"-I{_te_norm_root() / 'include'}"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-4000:]


@needs_te
def test_nvfp4_rule_on_the_real_analysis_is_compile_verified_only(tmp_path):
    """The NVFP4 transpose kernel as TE's analysis names it matches kernels_not_run: every
    nvte_quantize* entry point reaching it is not called, and the plan is refused with the reason."""
    from codemod.cli import main

    out = tmp_path / "a.json"
    assert main(["analyze", str(_te_root()), "--target", str(FIXTURES / "fp4_transpose.yaml"),
                 "--json", str(out)]) in (0, 1)
    analysis = json.loads(out.read_text())
    reaching = {ep["name"] for ep in analysis["entry_points"] if FP4_KERNEL in ep.get("kernels", {})}
    assert {"nvte_quantize", "nvte_quantize_v2"} <= reaching
    with pytest.raises(UsageError, match="nvte_quantize, nvte_quantize_v2: NVFP4"):
        build_plan(analysis, {"id": "fp4", "migrate": {"kernels": [FP4_KERNEL]}}, load_profile("te"), _te_root())


@needs_te
def test_transpose_entries_write_the_transpose_as_columnwise_data():
    """rules/transpose.yaml's entry points (transpose.h): cast-transpose outputs in the */t formats
    (columnwise data [C, R], one scale_inv: te_nvte.cuh.j2), TE's shapes and dtypes; the tensor-list
    entry point is listed as not called, with the reason."""
    plan = _te_plan(TRANSPOSE + ["nvte_multi_cast_transpose"])
    by_label = {e.label: e for e in plan.entries}
    per_entry = Counter()
    for label, n in plan.case_counts().items():
        per_entry[label.split("/")[0]] += n
    # no 0-row shape for these two (TE divides by zero choosing their kernel: te.yaml)
    assert per_entry["nvte_cast_transpose"] == 3 * 5 * 4 * 2          # inputs x formats x shapes x values
    assert per_entry["nvte_transpose"] == 5 * 1 * 4 * 2                 # every dtype in, native out
    assert per_entry["nvte_fp8_transpose_dbias"] == 2 * 2 * 5 * 2 * 2   # FP8 in x FP8 out x ... x dbias dtypes
    assert sum(per_entry.values()) == 1890
    shapes = {label: {plan.shapes_rc[i] for i in e.shapes or range(len(plan.shapes_rc))}
              for label, e in by_label.items()}
    assert (0, 64) not in shapes["nvte_cast_transpose"] | shapes["nvte_transpose"]
    assert (0, 64) in shapes["nvte_cast_transpose_dbias"]
    formats = {f.name: f for f in plan.formats}
    ct = by_label["nvte_cast_transpose"]
    assert [formats[n].colwise for n in ct.formats] == [True] * 5
    assert {a.name: a.dims for a in ct.args if a.dims} == {"input": ["R", "C"], "output": ["R", "C"]}
    gated = {a.name: a for a in by_label["nvte_dswiglu_cast_transpose"].args}
    assert gated["act_input"].dims == ["R", "2*C"] and gated["output"].dims == ["R", "2*C"]
    dact = {a.name: a.role for a in by_label["nvte_cast_transpose_dbias_dgelu"].args}
    assert dact == {"input": "input", "act_input": "input", "output": "output", "dbias": "dbias",
                    "workspace": "workspace", "stream": "stream"}
    t = {a.name: a for a in by_label["nvte_transpose"].args}
    assert t["transposed_output"].dims == ["C", "R"] and t["transposed_output"].dtype == "input"
    assert {a.name: a.dtype for a in by_label["nvte_fp8_transpose_dbias/dbias_bf16"].args if a.name == "dbias"} \
        == {"dbias": "bf16"}
    skipped = {n["name"] if isinstance(n, dict) else n.name: n for n in plan.not_called}
    assert "nvte_multi_cast_transpose" in skipped and "nvte_multi_cast_transpose" not in by_label

