"""Shared paths for the impact tests: golden inputs live in golden/impact/ at the repo root."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "golden" / "impact"
TE = GOLDEN / "te_sm90_j16"
TE_LOG = "golden/impact/te_sm90_j16/te_sm90_j16.ninja_log"
TE_CSV = "golden/impact/te_sm90_j16/te_sm90_j16.nvcc_time.csv"


@pytest.fixture
def at_repo(monkeypatch):
    """Run with the repo root as cwd so documents carry repo-relative input names."""
    monkeypatch.chdir(REPO)
    return REPO
