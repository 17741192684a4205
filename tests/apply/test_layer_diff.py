"""`apply --diff F --layer-diff L` (issue 15, acceptance 7): the shared NVRTC layer's part of a
migration (the stubs' runtime, the layer's own edits and disk cache, std names in the target's
header) is a patch of its own that applies first; F holds only the rule's part and applies on top
of it, from the repository root. Applied in that order they give exactly what the one patch gives."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.cli import main

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def _repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", *cmd], cwd=dest, check=True, capture_output=True)
    return dest


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)


def _tree(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(repo).parts}


def _paths(patch: str) -> set[str]:
    return {line.split(" b/", 1)[1] for line in patch.splitlines() if line.startswith("diff --git ")}


@pytest.mark.parametrize("case, rule", [("actlib", "activation.yaml"), ("layerlib", "rule.yaml")])
def test_layer_patch_then_rule_patch_equals_the_whole_migration(case, rule, tmp_path, capsys):
    rule_path = str(GOLDEN / case / rule)
    split, whole = _repo(GOLDEN / case / "input", tmp_path / "split"), _repo(GOLDEN / case / "input", tmp_path / "whole")
    layer, own, full = tmp_path / "layer.patch", tmp_path / "own.patch", tmp_path / "full.patch"
    assert main(["apply", "--target", rule_path, str(split), "--diff", str(own), "--layer-diff", str(layer),
                 "--no-precheck", "-q"]) == 0
    err = capsys.readouterr().err
    assert main(["apply", "--target", rule_path, str(whole), "--diff", str(full), "--no-precheck", "-q"]) == 0
    layer_text, own_text = layer.read_text(), own.read_text()
    # the layer's files are in its patch only; the stubs' runtime is one of them
    assert any(p.endswith("rtc_stubs.h") for p in _paths(layer_text))
    assert "kernels.h" not in "".join(_paths(layer_text)) and any(p.endswith("kernels.h") for p in _paths(own_text))
    assert str(layer) in err and err.index(str(layer)) < err.rindex(str(own))     # the hint applies the layer first
    # in order, from the repository root
    for patch in (layer, own):
        r = _git(split, "apply", "--check", str(patch))
        assert r.returncode == 0, r.stderr
        assert _git(split, "apply", str(patch)).returncode == 0
    assert _git(whole, "apply", str(full)).returncode == 0
    assert _tree(split) == _tree(whole)


def test_layer_diff_needs_diff(tmp_path, capsys):
    root = _repo(GOLDEN / "actlib" / "input", tmp_path / "lib")
    assert main(["apply", "--target", str(GOLDEN / "actlib" / "activation.yaml"), str(root), "--layer-diff",
                 str(tmp_path / "l.patch"), "-q"]) == 2
    assert "--layer-diff needs --diff" in capsys.readouterr().err


def test_layer_diff_is_refused_with_update(tmp_path, capsys):
    """An update's patch is one diff: a --layer-diff there would be left unwritten while the summary
    said the layer had not changed (it had: e.g. a rule that turns the disk cache on)."""
    root = _repo(GOLDEN / "actlib" / "input", tmp_path / "lib")
    assert main(["apply", "--target", str(GOLDEN / "actlib" / "activation.yaml"), str(root), "--update", "--diff",
                 str(tmp_path / "f.patch"), "--layer-diff", str(tmp_path / "l.patch"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "--layer-diff splits a first migration" in err and not (tmp_path / "f.patch").exists()


def test_cache_patch_between_the_layer_and_the_rule(tmp_path, capsys):
    """`--cache-diff C` (issue 29: the disk cache in a PR of its own): the cache header and the compile
    function's cache edits leave the layer's patch for C; layer, cache and rule patches applied in that
    order from the root give the whole migration, and a merged series of three commits checks clean
    from git history."""
    rule = str(GOLDEN / "actlib" / "activation.yaml")
    split, whole = _repo(GOLDEN / "actlib" / "input", tmp_path / "split"), _repo(GOLDEN / "actlib" / "input",
                                                                                  tmp_path / "whole")
    layer, cache, own, full = (tmp_path / f"{n}.patch" for n in ("layer", "cache", "own", "full"))
    assert main(["apply", "--target", rule, str(split), "--diff", str(own), "--layer-diff", str(layer),
                 "--cache-diff", str(cache), "--no-precheck", "-q"]) == 0
    err = capsys.readouterr().err
    assert err.index(str(layer)) < err.rindex(str(cache)) < err.rindex(str(own))   # the hint's order
    assert main(["apply", "--target", rule, str(whole), "--diff", str(full), "--no-precheck", "-q"]) == 0
    layer_text, cache_text, own_text = layer.read_text(), cache.read_text(), own.read_text()
    assert "rtc_cache" not in layer_text and "rtc_cache" not in own_text
    assert _paths(cache_text) == {"util/rtc.cpp", "util/rtc_cache.h"}
    assert "rtc_cache::load(" in cache_text and "label_mutex" in cache_text
    for patch in (layer, cache, own):
        r = _git(split, "apply", "--check", str(patch))
        assert r.returncode == 0, r.stderr
        assert _git(split, "apply", str(patch)).returncode == 0
        _git(split, "add", "-A")
        assert _git(split, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", patch.stem).returncode == 0
    assert _git(whole, "apply", str(full)).returncode == 0
    assert _tree(split) == _tree(whole)
    assert main(["apply", "--target", rule, str(split), "--check", "-q"]) == 0       # from git history


def test_cache_diff_needs_layer_diff(tmp_path, capsys):
    root = _repo(GOLDEN / "actlib" / "input", tmp_path / "lib")
    assert main(["apply", "--target", str(GOLDEN / "actlib" / "activation.yaml"), str(root), "--diff",
                 str(tmp_path / "f.patch"), "--cache-diff", str(tmp_path / "c.patch"), "-q"]) == 2
    assert "--cache-diff needs --layer-diff" in capsys.readouterr().err
