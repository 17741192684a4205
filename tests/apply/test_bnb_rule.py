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
def test_bnb_rule_migrates_the_nine_kernels(tmp_path, capsys):
    """kernels.cuh declares them, kernels.cu defines them (instantiation macro lines) and ops.cu
    launches them: all 9 migrate, NVRTC precheck (sm_90) and the parse as migrated included.
    Before this branch: exit 2, "definition of kQuantizeBlockwise not found"."""
    from codemod.cli import main

    code = main(["apply", "--target", str(RULE), SOURCE, "--compile-db", os.environ["BNB_COMPILE_DB"],
                 "--diff", str(tmp_path / "b.diff"), "-q"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "9 kernels migrated, 4 left static" in err
    report = (tmp_path / "b.diff.report.md").read_text()
    assert "## Left static" in report and report.count("not listed in the rule's migrate/kernels") == 4
