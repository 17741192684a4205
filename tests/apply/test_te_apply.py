"""The activation migration on a full TransformerEngine checkout: runs only when TE_SOURCE_DIR
points at one (the repository root, holding transformer_engine/common). No TE code is stored here."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.cli import main

TE = os.environ.get("TE_SOURCE_DIR")
pytestmark = pytest.mark.skipif(not TE, reason="TE_SOURCE_DIR is not set (a full TransformerEngine checkout)")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def te_patch(tmp_path_factory) -> tuple[Path, Path]:
    """(clean copy of the checkout as a git repo, the activation patch)."""
    work = tmp_path_factory.mktemp("te") / "te"
    shutil.copytree(Path(TE), work, ignore=shutil.ignore_patterns(".git", "build", "*.so"))
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    patch = work.parent / "te.patch"
    assert main(["apply", "--target", "activation", str(work / "transformer_engine/common"),
                 "--diff", str(patch), "--quiet"]) == 0
    return work, patch


def test_refusals_are_reported_and_nothing_half_migrated(te_patch):
    """TE's element-wise launches deduce InputType/OutputType from the launch arguments, which the
    stub factories cannot take yet: apply refuses all four kernels, names the site and the
    parameters, and changes nothing (docs/results/te_apply.md)."""
    work, patch = te_patch
    assert patch.read_text() == ""
    report = Path(str(patch) + ".report.md").read_text()
    assert "0 kernels migrated" in report
    for k in ("unary_kernel", "unary_grad_kernel", "gated_act_kernel", "dgated_act_kernel"):
        assert f"`transformer_engine::{k}`: template arguments InputType, " in report
    assert _git(work, "status", "--porcelain").stdout == ""
