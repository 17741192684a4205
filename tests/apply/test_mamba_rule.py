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
    # PyTorch's complex and atomics headers reach NVRTC as the framework stand-ins, not hidden
    hidden = spec.kernel_strings["host_includes"]
    assert "c10/util/complex.h" not in hidden and "ATen/cuda/Atomic.cuh" not in hidden


@pytest.mark.slow
@pytest.mark.skipif(not SOURCE or not os.environ.get("MAMBA_COMPILE_DB"),
                    reason="needs MAMBA_SOURCE_DIR and MAMBA_COMPILE_DB")
def test_mamba_kernels_migrate_and_verify_for_sm80_sm90_sm100a(tmp_path, capsys):
    """Both kernels migrate (before: both static, "spells the PyTorch type `c10::complex`"): the
    programs get the stand-ins of c10/util/complex.h and ATen/cuda/Atomic.cuh (types.framework:
    torch), and every one of the 1,440 variants compiles for sm_80, sm_90 and sm_100a. The compile
    database names the checkout's files: the tree is migrated in place in a copy of the checkout
    whose database is rewritten to it. Slow: about an hour of CPU (docs/results/mamba_apply.md)."""
    import json
    import shutil

    from codemod.cli import main

    root = tmp_path / "mamba"
    shutil.copytree(SOURCE, root, ignore=shutil.ignore_patterns(".git", "build", "*.o"))
    db = json.loads(Path(os.environ["MAMBA_COMPILE_DB"]).read_text())
    text = json.dumps(db).replace(str(Path(SOURCE).resolve()), str(root))
    (tmp_path / "compile_commands.json").write_text(text)
    code = main(["apply", "--target", str(RULE), str(root), "--compile-db", str(tmp_path / "compile_commands.json"),
                 "--write", "--no-precheck", "-q"])
    assert code == 0
    out = capsys.readouterr()
    assert "2 kernels migrated, 0 left static" in out.out + out.err
    assert (root / "csrc/selective_scan/rtc/selective_scan/framework/c10/util/complex.h").is_file()
    assert main(["verify", str(root), "--arch", "sm_80", "--arch", "sm_90", "--arch", "sm_100a", "--no-host",
                 "-j", "2"]) == 0
    out = capsys.readouterr()
    assert "1440 of 1440 variants" in out.out + out.err
