"""Grouped-tensor entry points in the parity plan and driver (TE profile): a synthetic header and
analysis for the plan and the rendered driver; TE's own headers (a checkout in TE_SOURCE_DIR or
./te) for the nvcc compile."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.errors import RuleError, UnsupportedConstruct
from codemod.parity.driver import render_driver
from codemod.parity.plan import build_plan, load_profile

REPO = Path(__file__).resolve().parents[2]
GROUP_KERNEL = "transformer_engine::dispatch::fp8::group_quantize_kernel::group_cast_fp8_kernel"
UNARY_KERNEL = "transformer_engine::unary_kernel"
RULE = {"id": "demo_grouped", "migrate": {"kernels": [GROUP_KERNEL, UNARY_KERNEL]}}

# A made-up API in the profile's handle types: one grouped, one plain, one mixing both, one grouped
# with a dbias, and a grouped cast taking a config scalar.
HEADER = """\
typedef void *NVTETensor;
typedef void *NVTEGroupedTensor;
typedef void *NVTEQuantizationConfig;
void demo_act(const NVTETensor input, NVTETensor output, cudaStream_t stream);
void demo_group_act(const NVTEGroupedTensor input, NVTEGroupedTensor output, cudaStream_t stream);
void demo_group_cast(const NVTEGroupedTensor input, NVTEGroupedTensor output,
                     const NVTEQuantizationConfig quant_config, cudaStream_t stream);
void demo_group_mixed(const NVTEGroupedTensor input, NVTETensor output, cudaStream_t stream);
void demo_group_dbias(const NVTEGroupedTensor input, NVTEGroupedTensor output,
                      NVTEGroupedTensor dbias, cudaStream_t stream);
"""


def _library(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    (root / "include" / "demo").mkdir(parents=True, exist_ok=True)
    (root / "include" / "demo" / "api.h").write_text(HEADER)
    return root


def _analysis(*names: str, kernel: str = GROUP_KERNEL) -> dict:
    return {"entry_points": [{"name": n, "file": "demo.cu", "line": 1, "kernels": {kernel: {}}}
                             for n in names]}


def _profile(**overrides):
    profile = load_profile("te")
    profile.data = dict(profile.data, headers=["include/demo/api.h"], **overrides)
    return profile


def _plan(tmp_path, *names, profile=None, analysis=None):
    analysis = analysis or _analysis(*names)
    return build_plan(analysis, RULE, profile or _profile(), _library(tmp_path))


def test_grouped_entry_gets_roles_and_the_grouped_cases(tmp_path):
    analysis = _analysis("demo_group_act", "demo_group_cast")
    analysis["entry_points"] += _analysis("demo_act", kernel=UNARY_KERNEL)["entry_points"]
    plan = _plan(tmp_path, analysis=analysis)
    assert [e.name for e in plan.entries] == ["demo_act"]
    assert [e.name for e in plan.grouped_entries] == ["demo_group_act", "demo_group_cast"]
    act, cast = plan.grouped_entries
    assert [(a.name, a.role) for a in act.args] == [("input", "input"), ("output", "output"),
                                                     ("stream", "stream")]
    assert act.kernels == [GROUP_KERNEL] and act.inputs == ["fp32", "fp16", "bf16"]
    assert [(a.name, a.role, a.value) for a in cast.args if a.role == "scalar"] == [
        ("quant_config", "scalar", "nullptr")]
    grouped = plan.grouped
    assert grouped.tensor_type == "NVTEGroupedTensor"
    assert [(f.name, f.rowwise, f.colwise) for f in grouped.formats[:3]] == [
        ("fp8e4m3/rowwise", True, False), ("fp8e4m3/colwise", False, True), ("fp8e4m3/both", True, True)]
    cases = {c.name: c for c in grouped.cases}
    assert {c.shape for c in grouped.cases} == {"same", "varying_first", "varying_last"}
    same = cases["same:4x64x256"]
    assert same.dims == [(64, 256)] * 4 and same.logical == (256, 256)
    first = cases["varying_first:64+0+33+1+300x256"]
    assert first.dims == [(64, 256), (0, 256), (33, 256), (1, 256), (300, 256)]
    assert first.logical == (398, 256)
    last = cases["varying_last:33x97+31+1"]
    assert last.dims == [(33, 97), (33, 31), (33, 1)] and last.logical == (33, 129)
    assert cases["same:2x0x64"].logical == (0, 64)


def test_plan_json_keeps_its_keys_without_grouped_entries(tmp_path):
    plain = json.loads(_plan(tmp_path, analysis=_analysis("demo_act", kernel=UNARY_KERNEL)).to_json())
    assert "grouped" not in plain and "grouped_entries" not in plain
    both = json.loads(_plan(tmp_path, "demo_group_act").to_json())
    assert both["grouped_entries"][0]["name"] == "demo_group_act"
    assert both["grouped"]["cases"][5]["logical"] == [398, 256]


def test_mixed_handle_types_are_refused(tmp_path):
    with pytest.raises(UnsupportedConstruct, match="demo_group_mixed: a grouped entry point takes grouped"):
        _plan(tmp_path, "demo_group_mixed")


def test_grouped_dbias_is_refused(tmp_path):
    with pytest.raises(UnsupportedConstruct, match=r"found .*NVTEGroupedTensor dbias"):
        _plan(tmp_path, "demo_group_dbias")


def test_grouped_tensor_without_grouped_type_cannot_be_filled(tmp_path):
    profile = _profile()
    del profile.data["grouped_tensor_type"]
    with pytest.raises(UnsupportedConstruct, match="parameter `const NVTEGroupedTensor input` cannot be filled"):
        _plan(tmp_path, "demo_group_act", profile=profile)


@pytest.mark.parametrize("change, message", [
    ({"cases": [{"shape": "ragged", "rows": 1, "cols": 1}]}, "shape is one of same, varying_first"),
    ({"cases": [{"shape": "varying_first", "cols": 64}]}, "missing or invalid 'first_dims'"),
    ({"cases": [{"shape": "same", "num_tensors": 0, "rows": 1, "cols": 1}]}, "at least one group"),
    ({"formats": [{"name": "mx", "dtype": "fp8e4m3", "scaling": "block1d"}]}, "per_tensor scaling"),
])
def test_invalid_grouped_profile_is_refused(tmp_path, change, message):
    profile = _profile()
    profile.data["grouped"] = dict(profile.data["grouped"], **change)
    with pytest.raises(RuleError, match=re.escape(message)):
        _plan(tmp_path, "demo_group_act", profile=profile)


def test_driver_calls_grouped_entries_through_grouped_handles(tmp_path):
    plan = _plan(tmp_path, "demo_group_act", "demo_group_cast")
    text = render_driver(plan, version="<version>")
    assert "nvte_create_grouped_tensor(" in text and "nvte_destroy_grouped_tensor" in text
    assert re.search(r"demo_group_act\(binding::raw\(h_input\), binding::raw\(h_output\), stream\);", text)
    assert re.search(r"demo_group_cast\(binding::raw\(h_input\), binding::raw\(h_output\), nullptr,\s*stream\);",
                     text)
    # Every shape array and per-group buffer reaches the handle; every output buffer is dumped.
    for param in ("RowwiseData", "ColumnwiseData", "Scale", "Amax", "RowwiseScaleInv",
                  "ColumnwiseScaleInv", "FirstDims", "LastDims", "TensorOffsets"):
        assert f"kNVTEGrouped{param}," in text
    for buffer in ("data", "columnwise_data", "amax", "scale_inv", "columnwise_scale_inv"):
        assert f'd.buffer(name + ".{buffer}", t.{buffer});' in text
    assert '{"varying_first:64+0+33+1+300x256", GroupedShape::kVaryingFirst, 5, 15, 398, 256},' in text
    assert '{"fp8e5m2/colwise", 4, Scaling::kPerTensor, true, true, false, true},' in text
    assert "kGroupedEntries[g].make(s)" in text and "grouped_id(g, c, s)" in text
    # Grouped entries are not timed: the bench loop walks kEntries only.
    bench = text[text.index("int run_bench("):text.index("int main(")]
    assert "kGroupedEntries" not in bench


def test_driver_without_grouped_entries_has_no_grouped_code(tmp_path):
    text = render_driver(_plan(tmp_path, analysis=_analysis("demo_act", kernel=UNARY_KERNEL)), version="<version>")
    assert "GroupedTensor" not in text and "kGrouped" not in text and "bind_grouped" not in text


def _te_root() -> Path | None:
    env = os.environ.get("TE_SOURCE_DIR")
    root = (Path(env) if env else REPO / "te") / "transformer_engine" / "common"
    return root if (root / "include" / "transformer_engine" / "activation.h").is_file() else None


@pytest.mark.skipif(shutil.which("nvcc") is None or _te_root() is None,
                    reason="needs nvcc and a TransformerEngine checkout (TE_SOURCE_DIR or ./te)")
def test_grouped_te_driver_compiles_against_te_headers(tmp_path):
    root = _te_root()
    analysis = _analysis("nvte_group_gelu", "nvte_group_silu", "nvte_group_quantize")
    analysis["entry_points"] += _analysis("nvte_gelu", kernel=UNARY_KERNEL)["entry_points"]
    plan = build_plan(analysis, RULE, load_profile("te"), root)
    assert [e.name for e in plan.grouped_entries] == ["nvte_group_gelu", "nvte_group_quantize", "nvte_group_silu"]
    src = tmp_path / "driver.cu"
    src.write_text(render_driver(plan))
    proc = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "d.o"),
                           f"-I{root / 'include'}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_definition_wins_over_a_header_declaring_another_handle_type(tmp_path):
    """TE d0067d0 declares nvte_group_dgelu's output `NVTETensor` and defines it `NVTEGroupedTensor`
    (one `void *`, so both compile): the plan follows the definition and records the mismatch; a
    definition that agrees with the header (or no definition file) keeps the header's refusal."""
    root = _library(tmp_path)
    (root / "demo.cu").write_text("void demo_group_mixed(const NVTEGroupedTensor input, NVTEGroupedTensor output,\n"
                                  "                      cudaStream_t stream) { run(input, output, stream); }\n")
    plan = build_plan(_analysis("demo_group_mixed"), RULE, _profile(), root)
    assert [e.name for e in plan.grouped_entries] == ["demo_group_mixed"]
    assert plan.header_mismatches == [{"name": "demo_group_mixed", "header": "include/demo/api.h:8",
                                       "definition": "demo.cu:1",
                                       "parameters": ["NVTETensor output -> NVTEGroupedTensor output"]}]
    assert json.loads(plan.to_json())["header_mismatches"] == plan.header_mismatches
    (root / "demo.cu").write_text("void demo_group_mixed(const NVTEGroupedTensor input, NVTETensor output,\n"
                                  "                      cudaStream_t stream) {}\n")
    with pytest.raises(UnsupportedConstruct, match="grouped inputs and one grouped output only"):
        build_plan(_analysis("demo_group_mixed"), RULE, _profile(), root)
