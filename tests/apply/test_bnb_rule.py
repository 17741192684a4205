"""rules/bnb.yaml: schema-valid; on a bitsandbytes checkout (BNB_SOURCE_DIR, the repository root;
BNB_COMPILE_DB, a compile database whose include path declares cuBLAS) the outcome recorded in
docs/results/bnb_apply.md."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codemod.apply.spec import migrate_spec
from codemod.rule import load_rule

RULE = Path(__file__).resolve().parents[2] / "rules" / "bnb.yaml"
SOURCE = os.environ.get("BNB_SOURCE_DIR")


def test_bnb_rule_loads():
    spec = migrate_spec(load_rule(str(RULE)))
    assert len(spec.kernels) == 9 and spec.layer["create"] == {"framework": "none"}
    assert spec.cmake["target"] == "bitsandbytes"


@pytest.mark.slow
@pytest.mark.skipif(not SOURCE or not os.environ.get("BNB_COMPILE_DB"), reason="needs BNB_SOURCE_DIR and BNB_COMPILE_DB")
def test_bnb_kernels_declared_in_a_header_and_defined_in_a_unit_stay_static_named(tmp_path):
    """kernels.cuh declares them, kernels.cu defines and instantiates them, ops.cu launches them:
    not migrated yet; each is named with that reason and apply exits 1 (it was exit 2, "definition
    not found")."""
    from codemod.cli import main

    code = main(["apply", "--target", str(RULE), SOURCE, "--compile-db", os.environ["BNB_COMPILE_DB"],
                 "--diff", str(tmp_path / "b.diff"), "-q"])
    report = (tmp_path / "b.diff.report.md").read_text()
    assert code == 1
    assert report.count("declared in csrc/kernels.cuh but defined in csrc/kernels.cu") == 9
