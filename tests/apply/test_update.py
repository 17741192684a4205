"""`apply --update` on a migrated golden actlib tree (issue 15, acceptance 2): after a kernel change it
rewrites exactly the generated files a fresh migration of the changed library differs in, with the
manifest kept outside the tree or moved away (then git's record of the migration is used); without
the manifest, --check still validates every generated file's content."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN
from codemod.cli import main
from codemod.tool_state import manifest_path

RULE = str(GOLDEN / "actlib" / "activation.yaml")
KERNEL_HEADER = "util/vectorized_pointwise.h"
# unary_kernel's last parameter and the first line of its body (the header's first kernel)
PARAM = ("ComputeType *amax, ComputeType *scale_inv, Param p, size_t n) {\n"
         "  const ComputeType s = scale != nullptr ? *scale : 1.0f;")
CHANGES = {
    "parameter": (PARAM, PARAM.replace("Param p, size_t n)", "Param p, unsigned long n)")),
    "body": (PARAM, PARAM.replace("1.0f;", "1.0f;  // no scale: identity")),
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def _digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.relative_to(root).parts}


def _change(path: Path, change: str) -> None:
    old, new = CHANGES[change]
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


@pytest.fixture
def migrated(actlib_git):
    """The golden actlib, migrated with --write and committed on its own."""
    assert main(["apply", "--target", RULE, str(actlib_git), "--write", "--no-precheck", "-q"]) == 0
    _git(actlib_git, "add", "-A")
    _git(actlib_git, "commit", "-qm", "migrate the activation kernels to NVRTC")
    return actlib_git


def _fresh(tmp_path: Path, change: str | None) -> dict[str, str]:
    """What a fresh migration of the (changed) original library writes: path -> text."""
    root = tmp_path / "fresh"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    if change:
        _change(root / KERNEL_HEADER, change)
    files, _, _ = compute(root, RULE)
    return {path: new for path, (_, new) in files.items()}


# NOTE: a body change with the manifest kept runs in the fast set; the other three (15-20 s each on
# 2 busy cores) with -m slow
@pytest.mark.parametrize("change, manifest", [
    pytest.param(change, manifest, id=f"{change}-{manifest}",
                 marks=[] if (change, manifest) == ("body", "kept") else [pytest.mark.slow])
    for manifest in ("kept", "moved away") for change in ("parameter", "body")])
def test_update_rewrites_exactly_what_the_kernel_change_changes(migrated, tmp_path, capsys, change, manifest):
    if manifest == "moved away":
        manifest_path(migrated, "activation").rename(tmp_path / "elsewhere.json")
    _change(migrated / KERNEL_HEADER, change)
    before = _digest(migrated)
    fresh = _fresh(tmp_path, change)
    expected = sorted(p for p, text in fresh.items() if (migrated / p).read_text() != text)
    # the stubs take a kernel's parameter types from the kernel itself (issue 29): a parameter-type
    # change reaches no generated file, as a body change does not
    assert expected == []
    args = ["apply", "--target", RULE, str(migrated), "--no-precheck", "-q"]
    assert main([*args, "--check"]) == (1 if expected else 0)
    capsys.readouterr()
    assert main([*args, "--update", "--write", "--allow-dirty"]) == 0, capsys.readouterr().err
    after = _digest(migrated)
    written = sorted(p for p in after if after[p] != before.get(p))
    assert written == expected
    for path, text in fresh.items():                       # the tree now holds the fresh migration
        assert (migrated / path).read_text() == text, path
    assert manifest_path(migrated, "activation").is_file()   # stored again
    assert main([*args, "--check"]) == 0


def test_a_parameter_change_needs_no_regeneration(migrated, tmp_path):
    """The cases above are not vacuous: the migrated tree spells no parameter list of the kernel
    (its launcher type is `decltype` of the kernel), so nothing generated changes with it."""
    stubs = "".join(p.read_text() for p in (migrated / "rtc/activation").glob("kernels*.h"))
    assert "decltype(&::actlib::unary_kernel<" in stubs and "size_t n" not in stubs
    _change(migrated / KERNEL_HEADER, "parameter")
    files, _, _ = compute(migrated, RULE, update=True)
    assert files == {}


def test_without_the_manifest_check_validates_every_generated_file(migrated, capsys):
    manifest_path(migrated, "activation").unlink()
    args = ["apply", "--target", RULE, str(migrated), "--no-precheck", "-q"]
    assert main([*args, "--check"]) == 0
    kernel_string = migrated / "rtc/activation/kernels_vectorized_pointwise.h"
    kernel_string.write_text(kernel_string.read_text() + "// a hand edit\n")
    capsys.readouterr()
    assert main([*args, "--check"]) == 1
    err = capsys.readouterr().err
    assert "rtc/activation/kernels_vectorized_pointwise.h" in err and "--update" in err
    assert main([*args, "--update", "--write", "--allow-dirty"]) == 0
    assert "a hand edit" not in kernel_string.read_text()


def test_without_manifest_or_git_record_the_refusal_names_both(tmp_path, capsys):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    args = ["apply", "--target", RULE, str(root), "--no-precheck", "-q"]
    assert main([*args, "--write"]) == 0
    manifest_path(root, "activation").unlink()
    capsys.readouterr()
    assert main([*args, "--check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") <= 2 and "neither its manifest nor a git commit" in err


def test_manifest_entries_above_the_library_root_stay_checkable(tmp_path):
    """A rule with repo_root (TE: its docs/envvars.rst two levels above transformer_engine/common)
    records `../../docs/...` in the manifest: --check/--update read it back (they refused their own
    manifest before) while an entry leaving the git work tree is still refused."""
    from codemod.apply.write.migrated import check, untouched
    from codemod.errors import ApplyError
    repo = tmp_path / "repo"
    lib = repo / "pkg" / "common"
    lib.mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "docs" / "envvars.rst").write_text("after\n")
    _git(repo, "init", "-q")
    after = hashlib.sha256(b"after\n").hexdigest()
    before = hashlib.sha256(b"before\n").hexdigest()
    doc = {"files": {"../../docs/envvars.rst": {"before": before, "after": after}}}
    assert check(lib, doc, "m.json") == ([], "")
    assert untouched(lib, doc) is False
    (repo / "docs" / "envvars.rst").write_text("before\n")
    assert untouched(lib, doc) is True
    with pytest.raises(ApplyError, match="leaves the tree"):
        check(lib, {"files": {"../../../elsewhere.rst": {"before": None, "after": after}}}, "m.json")
    with pytest.raises(ApplyError, match="leaves the tree"):
        check(lib, {"files": {"../../docs/../../x.rst": {"before": None, "after": after}}}, "m.json")


def test_check_right_after_write_holds_when_the_style_file_sits_above_the_library(tmp_path, capsys):
    """The repository's .clang-format is above the library root (as TE's is above
    transformer_engine/common): the regeneration `--check` runs in a scratch copy of the library must
    format as `--write` did, not with codemod's fallback style (it did: --check found every formatted
    file pending right after --write)."""
    repo = tmp_path / "repo"
    lib = repo / "lib"
    shutil.copytree(GOLDEN / "actlib" / "input", lib)
    (repo / ".clang-format").write_text("BasedOnStyle: Google\nColumnLimit: 100\nPointerAlignment: Right\n"
                                        "DerivePointerAlignment: false\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    assert main(["apply", "--target", RULE, str(lib), "--write", "--no-precheck", "-q"]) == 0
    capsys.readouterr()
    assert main(["apply", "--target", RULE, str(lib), "--check", "-q"]) == 0
    assert "already migrated" in capsys.readouterr().err


@pytest.mark.slow
def test_a_rule_lands_in_two_pull_requests_only_then_update(actlib_git, tmp_path, capsys):
    """A large rule reviewed as two pull requests: `--only` some kernels (the first), committed, then
    `--update` (the second: the rule's other kernels). The tree then equals a migration of the
    whole rule in one go, and the second diff touches only what the first left out."""
    first = ["actlib::unary_kernel", "actlib::unary_grad_kernel", "actlib::gated_act_kernel",
             "actlib::dgated_act_kernel"]
    args = ["apply", "--target", RULE, str(actlib_git), "--no-precheck", "-q"]
    assert main([*args, "--write", "--only", *first]) == 0
    _git(actlib_git, "add", "-A")
    _git(actlib_git, "commit", "-qm", "first: the element-wise kernels")
    second = tmp_path / "second.diff"
    assert main([*args, "--update", "--diff", str(second)]) == 0
    text = second.read_text()
    assert "cast_fp8_kernel" in text and "quantize_block_kernel" in text
    assert main([*args, "--update", "--write", "--allow-dirty"]) == 0, capsys.readouterr().err
    whole = _fresh(tmp_path, None)
    for path, want in whole.items():
        assert (actlib_git / path).read_text() == want, path
    assert main([*args, "--check"]) == 0
