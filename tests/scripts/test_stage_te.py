"""scripts/stage_te.sh on two tiny repositories standing in for TE's and CUTLASS's mirrors: the
library at a commit, CUTLASS's headers at the commit the library's submodule pins, and the refusals."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "stage_te.sh"
pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="needs git")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _repos(tmp_path: Path) -> tuple[Path, Path, str, str]:
    cutlass = tmp_path / "cutlass"
    for path, text in (("include/cute/tensor.hpp", "// cute\n"), ("tools/util/include/u.h", "// util\n"),
                       ("media/big.png", "png\n"), ("examples/e.cu", "// example\n")):
        (cutlass / path).parent.mkdir(parents=True, exist_ok=True)
        (cutlass / path).write_text(text)
    _git(cutlass.parent, "init", "-q", str(cutlass))
    _git(cutlass, "add", "-A")
    _git(cutlass, "commit", "-qm", "pinned")
    pin = _git(cutlass, "rev-parse", "HEAD")
    (cutlass / "include" / "cute" / "tensor.hpp").write_text("// later\n")
    _git(cutlass, "commit", "-qam", "later")
    te = tmp_path / "te"
    (te / "transformer_engine" / "common").mkdir(parents=True)
    (te / "transformer_engine" / "common" / "CMakeLists.txt").write_text("# lib\n")
    _git(te.parent, "init", "-q", str(te))
    _git(te, "add", "-A")
    _git(te, "update-index", "--add", "--cacheinfo", f"160000,{pin},3rdparty/cutlass")
    _git(te, "commit", "-qm", "with submodule")
    return te, cutlass, _git(te, "rev-parse", "HEAD"), pin


def test_stages_the_library_and_the_pinned_cutlass_headers(tmp_path):
    te, cutlass, commit, pin = _repos(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(SCRIPT), str(te), commit[:9], str(cutlass), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert pin in proc.stdout
    assert (out / "transformer_engine" / "common" / "CMakeLists.txt").read_text() == "# lib\n"
    assert (out / "3rdparty" / "cutlass" / "include" / "cute" / "tensor.hpp").read_text() == "// cute\n"  # the pin, not HEAD
    assert (out / "3rdparty" / "cutlass" / "tools" / "util" / "include" / "u.h").is_file()
    assert not (out / "3rdparty" / "cutlass" / "media").exists() and not (out / "3rdparty" / "cutlass" / "examples").exists()


def test_refusals_write_nothing(tmp_path):
    te, cutlass, commit, _ = _repos(tmp_path)
    cases = [(["nosuchcommit", str(cutlass), str(tmp_path / "a")], "no commit nosuchcommit"),
             ([commit, str(te), str(tmp_path / "b")], "lacks"),   # a "CUTLASS mirror" without the pinned commit
             ([commit, str(cutlass), str(tmp_path)], "exists")]
    for args, why in cases:
        proc = subprocess.run(["bash", str(SCRIPT), str(te), *args], capture_output=True, text=True)
        assert proc.returncode == 2 and why in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
