"""rules/mamba.yaml: schema-valid; on a mamba checkout (MAMBA_SOURCE_DIR, the repository root holding
setup.py and csrc/selective_scan; a compile database with PyTorch's headers or stand-ins as
MAMBA_COMPILE_DB) the outcome recorded in docs/results/mamba_apply.md."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codemod.apply.plan.spec import migrate_spec
from codemod.rule import load_rule

RULE = Path(__file__).resolve().parents[2] / "rules" / "mamba.yaml"
SOURCE = os.environ.get("MAMBA_SOURCE_DIR")


def test_mamba_rule_loads():
    spec = migrate_spec(load_rule(str(RULE)))
    assert spec.kernels == ["selective_scan_fwd_kernel", "selective_scan_bwd_kernel"]
    assert spec.legacy_option == "MAMBA_BUILD_LEGACY_STATIC_SELECTIVE_SCAN"
    assert spec.layer["create"] == {"framework": "torch"} and spec.types["framework"] == "torch"


@pytest.mark.slow
@pytest.mark.skipif(not SOURCE or not os.environ.get("MAMBA_COMPILE_DB"),
                    reason="needs MAMBA_SOURCE_DIR and MAMBA_COMPILE_DB")
def test_mamba_kernels_stay_static_naming_c10_complex(tmp_path, capsys):
    """Both kernels' Ktraits spell c10::complex<float> (the complex-weight variants), which NVRTC
    programs cannot include: nothing is migrated and apply exits 1, the reason naming the type."""
    from codemod.cli import main

    # a dry run (--diff writes nothing in the tree): the compile database names the checkout's files
    code = main(["apply", "--target", str(RULE), SOURCE, "--compile-db", os.environ["MAMBA_COMPILE_DB"],
                 "--diff", str(tmp_path / "m.diff"), "-q"])
    report = (tmp_path / "m.diff.report.md").read_text()
    assert code == 1
    assert report.count("spells the PyTorch type `c10::complex`") == 2
