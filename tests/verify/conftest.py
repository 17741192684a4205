"""Shared fixtures for the verify tests: the minilib patched tree and NVRTC availability."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MINILIB = FIXTURES / "minilib"


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
