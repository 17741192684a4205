"""TransformerEngine's own checks on the patched tree, for every TE rule in rules/ with a `migrate:`
section: `git apply --check` from the repository root, qa/L0_license's copyright checker and the
hooks of TE's .pre-commit-config.yaml at their pinned versions (tests/apply/target_checks.py).
Runs only when TE_SOURCE_DIR (TE_NORM_SOURCE_DIR for the normalization rule) points at a checkout
(the repository root); a hook whose pinned tool is not installed (`pip install -e .[test]`)
is skipped, not passed."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from codemod.cli import main

from .target_checks import run_checks

# TE checkouts: the slow set (pytest -m slow)
pytestmark = pytest.mark.slow

RULES = Path(__file__).resolve().parents[2] / "rules"
# TE's rules only (bnb.yaml and mamba.yaml migrate other libraries: their own tests run them)
MIGRATING = sorted(p.stem for p in RULES.glob("*.yaml")
                   if "migrate" in (rule := yaml.safe_load(p.read_text()) or {})
                   and rule.get("library") == "TransformerEngine")
# the checkout each rule migrates: TE d0067d0, or the parent of TE's own normalization migration
CHECKOUT = {"normalization": "TE_NORM_SOURCE_DIR"}


def _clean_repo(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".git", "build", "*.so"))
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", *cmd], cwd=dest, check=True, capture_output=True)
    return dest


@pytest.mark.parametrize("rule", MIGRATING)
def test_te_checks_pass_on_the_patched_tree(rule, tmp_path):
    env = CHECKOUT.get(rule, "TE_SOURCE_DIR")
    if not os.environ.get(env):
        pytest.skip(f"{env} is not set (the TransformerEngine checkout rule {rule} migrates)")
    repo = _clean_repo(Path(os.environ[env]), tmp_path / "te")
    patch, layer = tmp_path / f"{rule}.patch", tmp_path / f"{rule}.layer.patch"
    # the NVRTC layer's part first, then the rule's own (acceptance 7: the patch a maintainer reviews)
    assert main(["apply", "--target", rule, str(repo / "transformer_engine/common"), "--diff", str(patch),
                 "--layer-diff", str(layer), "--quiet", "--no-precheck"]) == 0
    text = patch.read_text() + (layer.read_text() if layer.exists() else "")
    assert "namespace std" not in text and "using ::cuda::std::" not in text   # issue 15, acceptance 3
    checks = [replace(c, name=f"{layer.name}: {c.name}") for c in run_checks(repo, layer)] if layer.exists() else []
    checks += run_checks(repo, patch)
    report = "\n".join(map(str, checks))
    print(report)
    assert "codemod_manifest" not in text and ".json" not in "".join(
        line for line in text.splitlines() if line.startswith("+++ "))    # no data file (acceptance 2)
    failed = [c for c in checks if c.status == "failed"]
    assert not failed, report
    skipped = [c for c in checks if c.status == "skipped"]
    if skipped:
        pytest.skip("pinned tools not installed: " + "; ".join(map(str, skipped)))
