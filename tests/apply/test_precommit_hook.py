"""The check a target adopts after merging (issue 29): `.pre-commit-hooks.yaml`'s entry, run as
pre-commit runs it (the entry split on blanks, then the hook's args), on a migrated golden tree."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import yaml

from codemod.apply.golden import GOLDEN
from codemod.cli import main

REPO = Path(__file__).resolve().parents[2]


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def test_the_hook_entry_checks_a_merged_migration(tmp_path, monkeypatch, capsys):
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "nvrtc-migration-check")
    assert hook["pass_filenames"] is False and hook["language"] == "python"
    entry = shlex.split(hook["entry"])
    assert entry[0] == "codemod"          # the console script pyproject.toml installs
    root = tmp_path / "lib"
    shutil.copytree(GOLDEN / "tulib" / "input", root)
    rule = tmp_path / "rule.yaml"
    rule.write_text((GOLDEN / "tulib" / "rule.yaml").read_text())
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    diff = tmp_path / "m.diff"
    assert main(["apply", "--target", str(rule), str(root), "--diff", str(diff), "--no-precheck", "-q"]) == 0
    _git(root, "apply", str(diff))
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "migrate the scaled kernels to NVRTC")

    def run_hook() -> int:
        capsys.readouterr()
        return main([*entry[1:], str(rule), str(root)])   # pre-commit appends the hook's args

    assert run_hook() == 0
    text = rule.read_text()
    rule.write_text(text.replace("always: [--std=c++17]", "always: [--std=c++17, -DTULIB_CHECKED=1]"))
    assert run_hook() == 1
    assert "rtc/scaled/kernels.cpp" in capsys.readouterr().err
