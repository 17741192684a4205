"""Real TransformerEngine: its headers from the PyPI sdist (downloaded here), a full checkout when
TE_SOURCE_DIR is set. No TE code is stored in this repository; the driver below is ours and only
calls TE's public dispatch templates the way TE's own activation TUs do."""

import io
import json
import os
import re
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from codemod.analysis.analyze import analyze
from codemod.rule import Rule, load_rule

# TE's headers (the sdist download) or a TE checkout: the slow set (pytest -m slow)
pytestmark = pytest.mark.slow

SDIST_JSON = "https://pypi.org/pypi/transformer-engine-torch/json"
SDIST_VERSION = "2.20.2"  # pinned: the fan-out below is that release's

DRIVER = """\
#include "activation/activation_template.h"
#include "util/math.h"
using namespace transformer_engine;
void drv_gelu(const NVTETensor in, NVTETensor out, cudaStream_t s) {
  act_fn<fp32, Empty, gelu<fp32, fp32>>(in, out, s);
}
void drv_dgelu(const NVTETensor g, const NVTETensor in, NVTETensor out, cudaStream_t s) {
  dact_fn<fp32, Empty, dgelu<fp32, fp32>>(g, in, out, s);
}
void drv_geglu(const NVTETensor in, NVTETensor out, cudaStream_t s) {
  Empty e = {};
  gated_act_fn<fp32, Empty, gelu<fp32, fp32>>(in, out, e, s);
}
void drv_dgeglu(const NVTETensor g, const NVTETensor in, NVTETensor out, cudaStream_t s) {
  Empty e = {};
  dgated_act_fn<fp32, Empty, gelu<fp32, fp32>, dgelu<fp32, fp32>>(g, in, out, e, s);
}
"""


@pytest.fixture(scope="module")
def te_headers(tmp_path_factory):
    try:
        meta = json.load(urllib.request.urlopen(SDIST_JSON, timeout=30))
        files = meta.get("releases", {}).get(SDIST_VERSION) or meta["urls"]
        sdist = next(u for u in files if u["packagetype"] == "sdist" and SDIST_VERSION in u["filename"])
        data = urllib.request.urlopen(urllib.parse.urljoin(SDIST_JSON, sdist["url"]), timeout=120).read()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"cannot download the transformer-engine-torch sdist from PyPI (offline?): {exc}")
    root = tmp_path_factory.mktemp("te-sdist")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = [m for m in tar.getmembers() if "/common_headers/common/" in m.name and m.isfile()]
        tar.extractall(root, members=members, filter="data")
    common = next(root.glob("*/common_headers/common"))
    (common / "codemod_driver").mkdir()
    (common / "codemod_driver" / "drivers.cu").write_text(DRIVER)
    return common


def test_sdist_headers_dispatch_fanout(te_headers):
    rule = Rule(id="drivers", description="", path=None, translation_units=["codemod_driver/*.cu"],
                entry_points="^drv_", include_dirs=["include", ".", ".."])
    a = analyze(te_headers, [rule])
    eps = {e.name: {k.split("::")[-1]: n for k, n in e.kernels.items()} for e in a.entry_points}
    assert set(eps) == {"drv_gelu", "drv_dgelu", "drv_geglu", "drv_dgeglu"}
    # reference/te_kernel_family.md section 3.1: per element-wise op and per gated op
    assert eps["drv_gelu"]["unary_kernel"] == 45
    assert eps["drv_gelu"]["cast_fp8_1D_kernel"] == 6
    assert eps["drv_gelu"]["quantize_mxfp8_kernel"] == 72
    assert eps["drv_dgelu"]["unary_grad_kernel"] == 45
    assert eps["drv_dgelu"]["cast_fp8_2D_kernel"] == 6
    for name, bwd in (("drv_geglu", "gated_act_kernel"), ("drv_dgeglu", "dgated_act_kernel")):
        assert eps[name] == {bwd: 45, "cast_fp8_gated_kernel": 15, "quantize_gated_mxfp8_kernel": 36}
    # launches through `auto kernel = quantize_mxfp8_kernel<...>` resolve, with classified axes
    via = [s for s in a.sites if s.kind == "launch" and s.via and s.kernel and s.kernel.endswith("quantize_mxfp8_kernel")]
    assert via and all(s.instantiations > 0 for s in via)
    axes = {ax.param: ax.binding for s in via for ax in s.axes}
    assert axes["IType"] == "type_switch" and axes["OP"] == "entry_param"
    assert axes["WITH_GEMM_SWIZZLED_SCALES"] == "value_switch"
    # The 2.20.2 headers' NVFP4 path needs cuRANDDx, which the sdist does not ship: it is stubbed
    # (CM0102) and its errors stay inside cast/nvfp4; the activation path parses cleanly.
    errors = [d for d in a.diagnostics if d.severity == "error"]
    assert all(d.file.startswith("cast/nvfp4/") for d in errors), [(d.file, d.message) for d in errors]
    assert any(d.id == "CM0102" for d in a.diagnostics)


TE = os.environ.get("TE_SOURCE_DIR")


@pytest.mark.skipif(not TE, reason="TE_SOURCE_DIR is not set (a full TransformerEngine checkout)")
def test_full_checkout_activation_and_cast():
    common = Path(TE) / "transformer_engine" / "common"
    a = analyze(common, [load_rule("activation"), load_rule("cast")])
    # every nvte_* defined in activation/*.cu and cast/*.cu (an independent text scan) is an entry point
    defined = set()
    for tu in [*common.glob("activation/*.cu"), *common.glob("cast/*.cu")]:
        defined |= set(re.findall(r"^void (nvte_\w+)\(", tu.read_text(), re.M))
    assert {e.name for e in a.entry_points} == defined
    # the independent clang count: 44 __global__ templates (by qualified name; one name has three
    # SFINAE overloads) and 3 non-template kernels in these TUs' closure
    assert a.totals["declared_kernel_templates"] == 44
    assert a.totals["declared_non_template_kernels"] == 3
    assert a.totals["kernel_templates"] == 42 and a.totals["kernels"] == 44  # reached from the entry points
    # 73 spelled launch sites in the closure: the ones reached from these entry points, plus the
    # ones tree-sitter sees in functions no analysed entry point reaches (docs/te-analysis.md)
    unreached = [d for d in a.diagnostics if d.id == "CM0201"]
    assert a.totals["launch_sites"] + len(unreached) == 73
    fan = {k.name: k.instantiations for k in a.kernels}
    # reference/te_kernel_family.md section 3.2 (instantiations counted in the released library)
    for name, n in {"group_quantize_mxfp8_kernel": 4896, "scaled_gated_backward_kernel": 1944,
                    "quantize_mxfp8_kernel": 1224, "scaled_unary_backward_kernel": 648,
                    "quantize_gated_mxfp8_kernel": 576, "unary_kernel": 513, "unary_grad_kernel": 495,
                    "group_cast_fp8_kernel": 432, "quantize_4over6_kernel": 384, "gated_act_kernel": 360,
                    "dgated_act_kernel": 360, "cast_fp8_gated_kernel": 240, "scaled_gated_forward_kernel": 162,
                    "cast_fp8_2D_kernel": 102, "cast_fp8_1D_kernel": 66}.items():
        assert fan[name] == n, name
    # by hand (cast/fp8_blockwise/group_quantize_fp8_blockwise.cuh): IType 3 x OType 2 x
    # kSameBothDims 2 x (kRowwise, kColwise) in {(1,0), (0,1), (1,1)} (`if constexpr (kRowwise ||
    # kColwise)`) = 36; 48 before the frontend read texts at byte offsets (a UTF-8 `×` earlier in
    # the file shifted `using CType = float;` and the if constexpr)
    assert fan["group_block_scaled_1d_tma_kernel"] == fan["group_block_scaled_2d_tma_kernel"] == 36
    assert a.totals["instantiations"] == 12990
    assert {u.kernel.split("::")[-1]: u.reason for u in a.unreached} == {
        "grouped_amax_flat_kernel": "no_entry_point", "grouped_amax_zero_kernel": "no_entry_point",
        "group_cast_fp8_varying_first_tile_kernel": "not_launched"}


TE_NORM = os.environ.get("TE_NORM_SOURCE_DIR")


def _norm_hand_count(common: Path) -> dict[str, set]:
    """An independent count of TE's normalization instantiations, from the registrations alone: each
    REGISTER_NORM_LAUNCHER(norm, stage, launch, hidden, w, i, o, c, ...) instantiates its launcher
    with (w, i, o, c, uint32_t, hidden, ...) and the launcher's defaults, and each launcher launches
    its kernels with the Kernel_traits / finalize arguments its body spells (read once by hand:
    fwd tuned/general one kernel; bwd tuned/general the kernel and a finalize kernel; RMSNorm bwd
    with FUSED_ADD, default false)."""
    kernels: dict[str, set] = {}
    for f in sorted((common / "normalization").glob("*/*.cu")):
        text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", f.read_text(), flags=re.S)
        text = re.sub(r"#define[^\n]*(?:\\\n[^\n]*)*", " ", text)
        for m in re.finditer(r"\bREGISTER_NORM_LAUNCHER\s*\(([^;]*?)\)\s*;", text):
            norm, stage, launch, hidden, w, i, o, c, *va = [x.strip() for x in m.group(1).split(",")]
            pre = "ln" if norm == "LayerNorm" else "rmsnorm"
            base = (w, i, o, c, "uint32_t", hidden)
            if stage == "Forward":
                ctas, rest = (va[0], va[1:]) if launch == "tuned" else ("1", va)
                kernels.setdefault(f"{pre}_fwd_{launch}_kernel", set()).add(base + (ctas, *rest))
                continue
            n = 5 if launch == "tuned" else 4
            fused = (va[n:] or ["false"])[0] if pre == "rmsnorm" else None
            ctas, (wm, wn, main, final) = (va[0], va[1:5]) if launch == "tuned" else ("1", va[:4])
            kernels.setdefault(f"{pre}_bwd_{launch}_kernel", set()).add(base + (ctas, wm, wn, main, fused))
            finalize = (hidden, w, i, o, c, "uint32_t", "1024", final) if launch == "tuned" else (w, c, "4", "1", final, "32")
            kernels.setdefault(f"{pre}_bwd_finalize_{launch}_kernel", set()).add(finalize)
    return kernels


@pytest.mark.skipif(not TE_NORM, reason="set TE_NORM_SOURCE_DIR to the parent of TE's aef96db0c (PR #3156)")
def test_te_normalization_before_hand_migration():
    """rules/normalization on the tree TE migrated by hand: the nvte_* norm functions reach the 12
    kernels through TeNormalizationRegistry (filled by 552 REGISTER_NORM_LAUNCHER registrations),
    701 distinct instantiations, per kernel as the independent count."""
    common = Path(TE_NORM) / "transformer_engine" / "common"
    hand = _norm_hand_count(common)
    assert len(hand) == 12 and sum(map(len, hand.values())) == 701
    a = analyze(common, [load_rule("normalization")])
    assert {e.name for e in a.entry_points} == {"nvte_layernorm_fwd", "nvte_layernorm_bwd", "nvte_rmsnorm_fwd",
                                                 "nvte_rmsnorm_bwd", "nvte_rmsnorm_bwd_add"}
    assert {k.name: k.instantiations for k in a.kernels} == {k: len(v) for k, v in hand.items()}
    assert a.totals["instantiations"] == 701
    assert all(k.discoverable for k in a.kernels)
    assert all(e.instantiations == 701 for e in a.entry_points)  # one registry: every entry reaches all
    registrations = sum(len(re.findall(r"^REGISTER_NORM_LAUNCHER\(", f.read_text(), re.M))
                        for f in (common / "normalization").glob("*/*.cu"))
    assert registrations == 552

@pytest.mark.skipif(not TE, reason="TE_SOURCE_DIR is not set (a full TransformerEngine checkout)")
def test_full_checkout_fused_router():
    """rules/fused_router.yaml: the kernels of fused_topk_with_score_function.cu are launched from
    generic lambdas, reached through dispatch macros that invoke other macros; counted by hand
    in docs/analysis.md (TE section)."""
    common = Path(TE) / "transformer_engine" / "common"
    a = analyze(common, [load_rule("fused_router")])
    defined = set()
    for tu in common.glob("fused_router/*.cu"):
        defined |= set(re.findall(r"^void (nvte_\w+)\(", tu.read_text(), re.M))
    assert {e.name for e in a.entry_points} == defined and len(defined) == 18
    fan = {k.name: k.instantiations for k in a.kernels}
    assert fan == {
        # fused_topk_with_score_function.cu: 286
        "fused_topk_with_score_function_forward_kernel": 180, "fused_topk_forward_simple_kernel": 60,
        "fused_topk_backward_selected_indices_kernel": 27, "fused_topk_with_score_function_backward_kernel": 18,
        "qb_histogram_accumulate_kernel": 1,
        # fused_score_for_moe_aux_loss.cu: 33
        "fused_score_for_moe_aux_loss_forward_kernel": 18, "fused_score_for_moe_aux_loss_forward_simple_kernel": 6,
        "fused_score_for_moe_aux_loss_backward_kernel": 9,
        # fused_moe_aux_loss.cu: 48
        "fused_moe_aux_loss_forward_kernel": 15, "fused_moe_aux_loss_forward_kernel_graph_safe": 15,
        "fused_moe_aux_loss_backward_kernel": 15, "convert_accum_to_output": 3}
    assert a.totals["instantiations"] == 367 and a.unreached == []
    assert {d.id for d in a.diagnostics} == {"CM0102"}  # no CM1001 (lambdas), no CM1003 (defaults)
    assert all(k.discoverable for k in a.kernels)
    launch = next(s for s in a.sites if s.id.startswith("fused_router/fused_topk_with_score_function.cu:720:"))
    g = launch.generic_lambda
    assert (g["name"], g["param"]) == ("launch", "kernel") and len(g["passing_sites"]) == 3
    assert {s.api for s in a.sites if s.generic_lambda and s.function == launch.function} == {
        "<<<>>>", "cudaFuncSetAttribute", "helper"}
    helper = next(s for s in a.sites if s.api == "helper" and s.function == launch.function)
    assert helper.helper == "compute_persistent_grid"
    assert [(u["api"], u["file"]) for u in helper.helper_uses] == [("occupancy", "fused_router/async_loader.h")]
