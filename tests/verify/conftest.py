"""Shared fixtures for the verify tests: the minilib patched tree and NVRTC availability."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MINILIB = FIXTURES / "minilib"
GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def migrated_golden(case: str, rule_id: str, dest: Path) -> Path:
    """golden/CASE's input at DEST (a git repository) with its expected patch applied and its
    expected manifest stored where `apply --write` keeps it: a migrated tree as verify and the
    benchmarks find it."""
    shutil.copytree(GOLDEN / case / "input", dest)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    proc = subprocess.run(["git", "apply", str(GOLDEN / case / "expected" / "apply.patch")], cwd=dest,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    from codemod.tool_state import manifest_path

    manifest = manifest_path(dest, rule_id)
    manifest.parent.mkdir(parents=True)
    shutil.copy(GOLDEN / case / "expected" / "apply.manifest.json", manifest)
    return dest


def _nvrtc_or_skip():
    from codemod.verify import nvrtc

    try:
        return nvrtc.load()
    except nvrtc.NvrtcNotFound as exc:
        pytest.skip(f"NVRTC not available: {exc.render()}")


@pytest.fixture(scope="session")
def lib():
    """The process's NVRTC; tests that need it skip with the reason when it is missing."""
    return _nvrtc_or_skip()


@pytest.fixture
def minilib(tmp_path: Path) -> Path:
    """A writable copy of the minilib fixture (a patched tree with one manifest)."""
    _nvrtc_or_skip()
    target = tmp_path / "minilib"
    shutil.copytree(MINILIB, target)
    return target
