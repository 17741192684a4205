"""scripts/te_sass.py --markdown: the committed summary is rendered from the JSON result."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import te_sass  # noqa: E402


def _variant(status, cls="", explained=False):
    return {"status": status, "classification": cls, "explained": explained}


def test_the_markdown_counts_each_kernels_classes_per_arch_and_flags_the_unexplained(tmp_path):
    result = {
        "te_commit": "d0067d0", "rule": "rules/activation.yaml", "codemod_commit": "abc1234", "machine": "CPU",
        "date": "2026-12-02", "archs": ["sm_90", "sm_100a"], "static_flags": ["-O3"], "verify_exit_code": 1,
        "nvrtc_programs_ok": True, "nvrtc_seconds": 1.0,
        "sass": {"counts": {"compared": 4, "identical": 1, "identical-modulo-names": 1, "different-explained": 1,
                            "different-unexplained": 1, "error": 0},
                 "tools": {"nvcc_version": "13.0.88", "nvrtc_version": "13.0", "nvdisasm_version": "13.5",
                           "same_release": True}, "seconds": 2.0,
                 "programs": [
                     {"kernel": "ns::k", "arch": "sm_90", "config": "default",
                      "variants": [_variant("identical"), _variant("identical-modulo-names", "names")]},
                     {"kernel": "ns::k", "arch": "sm_100a", "config": "default",
                      "variants": [_variant("different", "shared-pointer-width", True), _variant("different", "code")]},
                 ]}}
    path = tmp_path / "te_sass_x.json"
    path.write_text(json.dumps(result))
    assert te_sass.main_script(["--markdown", str(path)]) == 0
    md = path.with_suffix(".md").read_text()
    assert "| `k` | default | 2 | 1 identical, 1 identical-modulo-names | 1 shared-pointer-width, 1 code UNEXPLAINED |" in md
    assert "**4 variant-arch pairs: 1 identical, 1 identical modulo names" in md and "1 unexplained" in md
    assert "**shared-pointer-width**" in md and "**source-location**" not in md


def test_a_rule_with_moved_kernels_names_its_static_side_and_keeps_namesakes_apart(tmp_path):
    result = {
        "te_commit": "d0067d0", "rule": "rules/transpose.yaml", "static_side": "patched",
        "moved_code": [{"header": "transpose/t_kernels.cuh", "unit": "transpose/t.cu", "code_lines": 3,
                        "not_in_unit": ["static_assert(transformer_engine::detail::is_same<CType, float>::value);"]}],
        "codemod_commit": "abc1234", "machine": "CPU", "date": "2026-12-03", "archs": ["sm_90"],
        "static_flags": ["-O3"], "verify_exit_code": 0, "nvrtc_programs_ok": True, "nvrtc_seconds": 1.0,
        "sass": {"counts": {"compared": 2, "identical": 2, "identical-modulo-names": 0, "different-explained": 0,
                            "different-unexplained": 0, "error": 0},
                 "tools": {"nvcc_version": "13.0.88", "nvrtc_version": "13.0", "nvdisasm_version": "13.5",
                           "same_release": True}, "seconds": 2.0,
                 "programs": [
                     {"kernel": "transformer_engine::detail::reduce_dbias_kernel", "arch": "sm_90",
                      "config": "default", "variants": [_variant("identical")]},
                     {"kernel": "transformer_engine::reduce_dbias_kernel", "arch": "sm_90",
                      "config": "default", "variants": [_variant("identical")]},
                 ]}}
    path = tmp_path / "te_sass_transpose.json"
    path.write_text(json.dumps(result))
    assert te_sass.main_script(["--markdown", str(path)]) == 0
    md = path.with_suffix(".md").read_text()
    assert md.startswith("# TE transpose rule:")
    assert "--rule transpose --static patched --name te_sass_transpose" in md
    assert "the rule's one option set" in md and "--use_fast_math" not in md
    assert "| `detail::reduce_dbias_kernel` | default | 1 | 1 identical |" in md
    assert "| `reduce_dbias_kernel` | default | 1 | 1 identical |" in md
    assert "| `transpose/t_kernels.cuh` | `transpose/t.cu` | 3 | `static_assert(" in md


def test_the_moved_code_check_lists_the_lines_the_original_unit_does_not_hold(tmp_path):
    original, patched = tmp_path / "orig", tmp_path / "patched"
    (original / "transpose").mkdir(parents=True)
    (patched / "transpose").mkdir(parents=True)
    (original / "transpose" / "t.cu").write_text(
        "#include <cuda_runtime.h>\nnamespace te {\n__global__ void k() {\n  static_assert(std::is_same<A, B>::value);\n}\n"
        "void host() { k<<<1, 1>>>(); }\n}  // namespace te\n")
    (patched / "transpose" / "t_kernels.cuh").write_text(
        "// Device code moved from t.cu\n#ifndef T_KERNELS_CUH_\n#define T_KERNELS_CUH_\n#include \"../common.h\"\n"
        "namespace te {\n__global__ void k() {\n    static_assert(detail::is_same<A, B>::value);\n}\n"
        "}  // namespace te\n#endif\n")
    (patched / "transpose" / "t.cu").write_text("#include \"t_kernels.cuh\"\n")
    [moved] = te_sass.moved_code_check(patched, original)
    assert moved == {"header": "transpose/t_kernels.cuh", "unit": "transpose/t.cu", "code_lines": 5,
                     "not_in_unit": ["static_assert(detail::is_same<A, B>::value);"]}
