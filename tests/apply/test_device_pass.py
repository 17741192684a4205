"""Device-pass trimming (`migrate.device_pass`, golden/ctlib's plan/plan.h; TE's
normalization/common.h): host-only includes and the declarations needing them hidden from nvcc's
device passes, checked against every .cu unit that includes the header."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.emit import device_pass
from codemod.apply.golden import GOLDEN
from codemod.cli import main
from codemod.errors import ApplyError

CASE = GOLDEN / "ctlib"
RULE = CASE / "rule.yaml"
ENTRY = {"header": "plan/plan.h", "hide": ["graph/graph.h"], "reason": "host code"}
DIRS = ["include", "."]


def test_hidden_include_takes_the_alias_and_the_class_needing_it():
    trim = device_pass.plan_trim(CASE / "input", ENTRY, DIRS)
    assert trim.includes == ["../graph/graph.h"]
    assert set(trim.declared) == {"cg", "GraphPlan"}     # the alias (a namespace only graph.h opens), the class
    assert trim.lost_files == {"graph/graph.h"}
    data = (CASE / "input" / "plan" / "plan.h").read_bytes()
    hidden = b"".join(data[s:e] for s, e in trim.blocks)
    # PlanBase and the lookup functions stay: the kernel unit's host code uses them
    assert b"class PlanBase" not in hidden and b"get_plan" not in hidden
    assert b"// Runs through an execution graph." in hidden     # a declaration's comment goes with it


def test_names_a_declaration_only_introduces_are_no_use(tmp_path):
    """A parameter or member named like a hidden declaration (`Graph`) is a new name, not a use."""
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    plan = root / "plan" / "plan.h"
    text = plan.read_text()
    text = text.replace("PlanBase *kernel_plan();", "PlanBase *kernel_plan();\nint count(int Graph);")
    plan.write_text(text)
    trim = device_pass.plan_trim(root, ENTRY, DIRS)
    assert set(trim.declared) == {"cg", "GraphPlan"}


def test_a_unit_using_a_hidden_name_is_refused(tmp_path, capsys):
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    unit = root / "plan" / "scale.cu"
    text = unit.read_text()
    old = "PlanBase *kernel_plan() {"
    unit.write_text(text.replace(old, "bool is_graph(PlanBase *p) { return dynamic_cast<GraphPlan *>(p); }\n\n" + old))
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 2
    err = capsys.readouterr().err
    assert "plan/scale.cu:" in err and "`GraphPlan`" in err and "device passes of plan/scale.cu" in err
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before     # nothing written


def test_second_apply_hides_nothing_more(tmp_path, capsys):
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0, \
        capsys.readouterr().err
    header = (root / "plan" / "plan.h").read_text()
    assert header.count("#ifndef __CUDA_ARCH__") == 3
    assert "// Execution graphs are host code: the device passes need not parse them.\n#ifndef __CUDA_ARCH__\n" \
           '#include "../graph/graph.h"\n#endif  // __CUDA_ARCH__\n' in header
    trim = device_pass.plan_trim(root, ENTRY, DIRS)
    assert trim.blocks == [] and trim.declared == {}
    assert main(["apply", "--target", str(RULE), str(root), "--check", "-q"]) == 0, capsys.readouterr().err


@pytest.mark.slow
def test_the_trimmed_unit_compiles_without_parsing_the_graph_header(tmp_path, capsys):
    """nvcc -c of plan/scale.cu (sm_90) before and after: graph.h's device-pass warning goes away,
    and the unit still compiles."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found")
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)

    def compile_unit() -> str:
        p = subprocess.run([nvcc, "-c", "-std=c++17", "-arch=sm_90", "-Iinclude", "-I.", "plan/scale.cu",
                            "-o", str(tmp_path / "scale.o")], cwd=root, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stderr

    assert "parsed in a device pass" in compile_unit()
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0, \
        capsys.readouterr().err
    assert "parsed in a device pass" not in compile_unit()


TE = os.environ.get("TE_SOURCE_DIR")


@pytest.mark.skipif(not TE, reason="TE_SOURCE_DIR not set")
def test_te_normalization_common_keeps_the_cudnn_frontend_from_the_norm_units():
    import yaml

    from codemod.apply.base.tree import units_reaching

    root = Path(TE) / "transformer_engine" / "common"
    rule = yaml.safe_load((Path(__file__).resolve().parents[2] / "rules" / "transpose.yaml").read_text())
    (entry,) = [e for e in rule["migrate"]["device_pass"] if "header" in e]
    dirs = rule["analyze"]["include_dirs"]
    trim = device_pass.plan_trim(root, entry, dirs)
    assert set(trim.declared) == {"fe", "CudnnNormalizationPlan"}
    assert trim.includes == ["cudnn.h", "cudnn_frontend.h", "cudnn_frontend_utils.h", "../cudnn_utils.h"]
    units = [u for u in units_reaching(root, {entry["header"]}, dirs) if u.endswith(".cu")]
    assert units == ["normalization/layernorm/ln_bwd_semi_cuda_kernel.cu",
                     "normalization/layernorm/ln_fwd_cuda_kernel.cu",
                     "normalization/rmsnorm/rmsnorm_bwd_semi_cuda_kernel.cu",
                     "normalization/rmsnorm/rmsnorm_fwd_cuda_kernel.cu"]
    device_pass.check_units(root, trim, entry, dirs, units)     # no error: none uses what is hidden


UNIT = {"unit": "plan/graph_plan.cu", "reason": "host code"}


def test_a_unit_without_device_code_is_hidden_whole():
    start, end = device_pass.plan_unit(CASE / "input", UNIT)
    data = (CASE / "input" / "plan" / "graph_plan.cu").read_bytes()
    assert data[start:].startswith(b"#include <vector>") and end == len(data)    # the leading comment stays out
    device_pass.check_unit(CASE / "input", UNIT, DIRS)      # launches fill_kernel, defined in scale.cu


def test_a_unit_with_device_code_is_refused(tmp_path):
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    unit = root / "plan" / "graph_plan.cu"
    unit.write_text(unit.read_text().replace("void GraphPlan::run", "__device__ float twice(float v) { return 2 * v; }\n\n"
                                             "void GraphPlan::run"))
    with pytest.raises(ApplyError, match=r"plan/graph_plan.cu:\d+: `__device__`: the unit has device code"):
        device_pass.check_unit(root, UNIT, DIRS)


def test_a_unit_launching_a_kernel_its_headers_define_is_refused(tmp_path):
    """Hidden whole, its device pass would not compile a kernel a header defines (a template it
    instantiates, or here the only definition it sees): refused."""
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    header = root / "plan" / "kernels.cuh"
    header.write_text(header.read_text().replace(
        "__global__ void fill_kernel(float *y, size_t n, float value);",
        "__global__ void fill_kernel(float *y, size_t n, float value);\n"
        "template <typename T>\n__global__ void zero_kernel(T *y, size_t n) {\n  if (threadIdx.x < n) y[threadIdx.x] = T(0);\n}"))
    unit = root / "plan" / "graph_plan.cu"
    unit.write_text(unit.read_text().replace("fill_kernel<<<blocks, 256, 0, stream>>>(y, n, 0.0f);",
                                             "zero_kernel<<<blocks, 256, 0, stream>>>(y, n);"))
    with pytest.raises(ApplyError, match=r"`zero_kernel` is a kernel plan/kernels.cuh defines"):
        device_pass.check_unit(root, UNIT, DIRS)


@pytest.mark.slow
def test_the_unit_hidden_whole_compiles_to_an_empty_device_pass(tmp_path, capsys):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found")
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)

    def compile_unit() -> str:
        p = subprocess.run([nvcc, "-c", "-std=c++17", "-arch=sm_90", "-Iinclude", "-I.", "plan/graph_plan.cu",
                            "-o", str(tmp_path / "graph_plan.o")], cwd=root, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stderr

    assert "parsed in a device pass" in compile_unit()
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0, \
        capsys.readouterr().err
    assert "parsed in a device pass" not in compile_unit()


@pytest.mark.skipif(not TE, reason="TE_SOURCE_DIR not set")
def test_te_fused_attention_units_hidden_whole_and_utils_refused():
    import yaml

    root = Path(TE) / "transformer_engine" / "common"
    rule = yaml.safe_load((Path(__file__).resolve().parents[2] / "rules" / "transpose.yaml").read_text())
    dirs = rule["analyze"]["include_dirs"]
    units = [e for e in rule["migrate"]["device_pass"] if "unit" in e]
    assert [e["unit"] for e in units] == ["fused_attn/fused_attn_fp8.cu", "fused_attn/fused_attn_f16_arbitrary_seqlen.cu"]
    for entry in units:
        device_pass.check_unit(root, entry, dirs)      # they launch utils.cu's kernels, define none
    with pytest.raises(ApplyError, match="fused_attn/utils.cu:.*`__global__`"):
        device_pass.check_unit(root, {"unit": "fused_attn/utils.cu", "reason": "r"}, dirs)
