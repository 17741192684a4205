"""Shared fixtures for the apply tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.golden import GOLDEN


@pytest.fixture
def actlib_git(tmp_path) -> Path:
    """A clean copy of the golden actlib input, committed to a git repository of its own."""
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, capture_output=True)
    return root
