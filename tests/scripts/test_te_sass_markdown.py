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
