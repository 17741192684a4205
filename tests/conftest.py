"""Shared by every test: codemod's per-user state (tool_state.py: the state folder of a tree outside
git) goes to a folder of this test run, never to the user's ~/.local/state."""

from __future__ import annotations

import os
import shutil
import tempfile

_STATE = tempfile.mkdtemp(prefix="codemod-test-state-")


def pytest_configure(config):
    # subprocesses started by the tests inherit it
    os.environ["XDG_STATE_HOME"] = _STATE


def pytest_unconfigure(config):
    shutil.rmtree(_STATE, ignore_errors=True)
