"""Everything inside a library tree is untrusted input (issue 33): a manifest or journal the tree
(or a tarball of it, with its `.git`) carries directs no write, delete, mode or load outside the
tree; the state folder is where the tree cannot supply it and is refused when it is a symlink or
another user's; the stored manifest is part of the journaled write; a file edited during the write
is a conflict; a TU clang cannot read stops apply; the license header is read from the tree only.
docs/reliability.md (section "Untrusted trees") lists which test holds which guarantee."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from codemod.apply.write import journal
from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN
from codemod.apply.write.patch import write_all
from codemod.cli import main
from codemod.errors import ApplyError, RuleError
from codemod.tool_state import manifest_path

RULE = str(GOLDEN / "actlib" / "activation.yaml")
REPO = Path(__file__).resolve().parents[2]
SITE_HEADER = "util/vectorized_pointwise.h"      # rewritten, and written last
KERNEL_HEADER = SITE_HEADER


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry below folder (not .git): content hash or kind, and mode."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if ".git" in rel.parts:
            continue
        st = p.lstat()
        kind = ("link", os.readlink(p)) if p.is_symlink() else (_sha(p.read_bytes()) if p.is_file() else "folder")
        out[rel.as_posix()] = (kind, stat.S_IMODE(st.st_mode))
    return out


def _copy(dst: Path) -> Path:
    shutil.copytree(GOLDEN / "actlib" / "input", dst)
    return dst


@pytest.fixture
def outside(tmp_path) -> Path:
    """Files a hostile tree aims at: outside the library tree."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim.txt").write_text("precious\n")
    (folder / "victim2.txt").write_text("also precious\n")
    (folder / "empty").mkdir()
    return folder


def _run(capsys, root: Path, *mode: str) -> tuple[int, str, str]:
    code = main(["apply", "--target", RULE, str(root), "--no-precheck", "-q", *mode])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str, *says: str) -> None:
    assert err.startswith("codemod: error: ") and err.strip().count("\n") == 0, err
    assert "Traceback" not in err and "internal error" not in err, err
    for s in says:
        assert s in err, (s, err)


# --- the legacy in-tree manifest -----------------------------------------------------------------

def _hostile_manifest(outside: Path) -> dict:
    """A manifest whose `edited` map names files outside the tree: un-migrating would write each
    `before` text to it, and remove the one whose `before` is null."""
    victim, victim2 = outside / "victim.txt", outside / "victim2.txt"
    return {"rule": "activation", "schema": "codemod-manifest/1", "files": {},
            "edited": {str(victim): {"before": "pwned\n", "after": victim.read_text()},
                       "../outside/victim2.txt": {"before": None, "after": victim2.read_text()}}}


@pytest.mark.parametrize("mode", [["--check"], ["--update"], ["--update", "--write"]])
def test_an_in_tree_legacy_manifest_directs_nothing(tmp_path, outside, capsys, mode):
    root = _copy(tmp_path / "input")
    legacy = root / "rtc/activation/codemod_manifest.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps(_hostile_manifest(outside)))
    kept = _snapshot(outside)
    code, _, err = _run(capsys, root, *mode)
    assert _snapshot(outside) == kept
    # ignored, and said so once: the tree is a fresh one (--check: changes pending)
    assert err.count("codemod_manifest.json") == 1 and "ignored" in err, err
    assert code == (1 if mode == ["--check"] else 0), err
    assert legacy.is_file()                               # the tree's own file, left alone


def test_a_manifest_in_the_git_state_folder_naming_paths_out_is_refused(actlib_git, outside, capsys):
    stored = manifest_path(actlib_git, "activation")
    assert stored.is_relative_to(actlib_git / ".git")    # a tarball with its .git can carry it
    stored.parent.mkdir(parents=True)
    stored.write_text(json.dumps(_hostile_manifest(outside)))
    kept, tree = _snapshot(outside), _snapshot(actlib_git)
    for mode in (["--check"], ["--update"], ["--update", "--write"]):
        code, out, err = _run(capsys, actlib_git, *mode)
        assert code == 2, (mode, err)
        _one_line_error(err, str(stored), "outside")
        assert out == ""
    assert _snapshot(outside) == kept and _snapshot(actlib_git) == tree


@pytest.mark.parametrize("path, why", [
    ("ABSOLUTE", "absolute"),
    ("../outside/victim.txt", "leaves the tree"),
    ("link/victim.txt", "symlink"),
    ("util", "not a regular file"),
    ("util/./math.h", "`.`"),
])
def test_every_manifest_path_is_checked_against_the_tree(actlib_git, outside, capsys, path, why):
    (actlib_git / "link").symlink_to(outside, target_is_directory=True)
    path = str(outside / "victim.txt") if path == "ABSOLUTE" else path
    stored = manifest_path(actlib_git, "activation")
    stored.parent.mkdir(parents=True)
    stored.write_text(json.dumps({"rule": "activation", "files": {"util/math.h": {"before": "0" * 64, "after": "1" * 64}},
                                  "edited": {path: {"before": "pwned\n", "after": "x"}}}))
    kept = _snapshot(outside)
    code, _, err = _run(capsys, actlib_git, "--update")
    assert code == 2
    _one_line_error(err, str(stored), why)
    assert _snapshot(outside) == kept


def test_git_s_record_of_the_migration_writes_through_no_symlink(actlib_git, outside, capsys):
    # no manifest: --check un-migrates from the commit that added kernels.h; an edited file since
    # replaced by a symlink out of the tree must not lead the scratch copy's write out
    root = actlib_git
    assert main(["apply", "--target", RULE, str(root), "--write", "--no-precheck", "-q"]) == 0
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "migrate")
    manifest_path(root, "activation").unlink()
    assert _run(capsys, root, "--check")[0] == 0                   # git's record alone: regenerated, equal
    victim = outside / "victim.txt"
    victim.write_bytes((root / "CMakeLists.txt").read_bytes())      # what the migration wrote
    (root / "CMakeLists.txt").unlink()
    (root / "CMakeLists.txt").symlink_to(victim)
    kept = _snapshot(outside)
    code, _, err = _run(capsys, root, "--check")
    assert code == 2, err
    _one_line_error(err, "git commit", "CMakeLists.txt", "symlink")
    assert _snapshot(outside) == kept


def test_a_non_utf8_byte_in_an_edited_file_is_one_line_when_un_migrating(actlib_git, capsys):
    root = actlib_git
    assert main(["apply", "--target", RULE, str(root), "--write", "--no-precheck", "-q"]) == 0
    capsys.readouterr()
    cmake = root / "CMakeLists.txt"
    cmake.write_bytes(cmake.read_bytes() + b"# caf\xe9\n")
    for mode in (["--check"], ["--update"]):
        code, _, err = _run(capsys, root, *mode)
        assert code == 2, err
        _one_line_error(err, "CMakeLists.txt", "not UTF-8")


# --- the journal and the state folder ------------------------------------------------------------

def _plant_journal(folder: Path, files: list, dirs=(), backups: dict | None = None) -> Path:
    (folder / "backup").mkdir(parents=True, exist_ok=True)
    for name, data in (backups or {}).items():
        (folder / name).write_bytes(data)
    record = {"schema": "codemod-journal/1", "pid": 4711, "started": "2026-12-01T11:02:03Z",
              "dirs": list(dirs), "files": files}
    (folder / "journal.json").write_text(json.dumps(record))
    return folder / "journal.json"


def _restore_entry(root: Path, rel: str, backup: str, evil: bytes, mode=0o644) -> dict:
    """A journal entry that says `rel` holds the write's new content and `backup` its original."""
    current = (root / rel).read_bytes() if not os.path.isabs(rel) else Path(rel).read_bytes()
    return {"path": rel, "tmp": journal._tmp_of(rel) if not os.path.isabs(rel) else rel + ".t", "old": _sha(evil),
            "new": _sha(current), "mode": mode, "backup": backup}


def test_a_journal_shipped_in_a_tree_outside_git_is_not_state(tmp_path, outside, capsys):
    root = _copy(tmp_path / "input")
    victim, victim2 = outside / "victim.txt", outside / "victim2.txt"
    evil = b"#!/bin/sh\necho owned\n"
    _plant_journal(root / ".codemod", [
        {"path": str(victim2), "tmp": str(victim), "old": None, "new": _sha(victim2.read_bytes()), "mode": None,
         "backup": None},
        {"path": str(victim), "tmp": str(victim) + ".t", "old": _sha(evil), "new": _sha(victim.read_bytes()),
         "mode": 0o4755, "backup": "backup/0"},
    ], dirs=[str(outside / "empty")], backups={"backup/0": evil})
    kept, tree = _snapshot(outside), _snapshot(root)
    for mode in ([], ["--check"]):
        code, _, err = _run(capsys, root, *mode)
        assert code == (1 if mode else 0), err
        assert "recovered" not in err and "codemod: note: .codemod/ is ignored" in err
    assert _snapshot(outside) == kept and _snapshot(root) == tree


def _hostile_entries(root: Path, outside: Path) -> dict[str, tuple[dict, dict, list]]:
    """name -> (journal entry, extra backups, dirs): each would act outside the tree, or on what
    the write never touched, if the journal were trusted."""
    victim = outside / "victim.txt"
    evil = b"owned\n"
    math_h = "util/math.h"
    now = _sha((root / math_h).read_bytes())
    return {
        "tmp out of the tree": ({"path": math_h, "tmp": str(victim), "old": now, "new": _sha(b"x"), "mode": None,
                                 "backup": "backup/1"}, {"backup/1": (root / math_h).read_bytes()}, []),
        "tmp not the temp name": ({"path": math_h, "tmp": "common.h", "old": now, "new": _sha(b"x"), "mode": None,
                                   "backup": "backup/1"}, {"backup/1": (root / math_h).read_bytes()}, []),
        "absolute path": (dict(_restore_entry(root, str(victim), "backup/1", evil), tmp=".v.codemod-tmp"),
                          {"backup/1": evil}, []),
        "path with ..": (dict(_restore_entry(root, str(victim), "backup/1", evil), path="../outside/victim.txt",
                              tmp="../outside/.victim.txt.codemod-tmp"), {"backup/1": evil}, []),
        "path through a symlink": (dict(_restore_entry(root, str(victim), "backup/1", evil), path="link/victim.txt",
                                        tmp="link/.victim.txt.codemod-tmp"), {"backup/1": evil}, []),
        "backup out of the state folder": (_restore_entry(root, math_h, "../../../outside/evil", evil),
                                           {}, []),
        "backup through a symlink": (_restore_entry(root, math_h, "backup/link", evil), {}, []),
        "dirs out of the tree": ({"path": math_h, "tmp": journal._tmp_of(math_h), "old": now, "new": _sha(b"x"),
                                  "mode": None, "backup": "backup/1"}, {"backup/1": (root / math_h).read_bytes()},
                                 [str(outside / "empty")]),
        "dirs with ..": ({"path": math_h, "tmp": journal._tmp_of(math_h), "old": now, "new": _sha(b"x"),
                          "mode": None, "backup": "backup/1"}, {"backup/1": (root / math_h).read_bytes()},
                         ["../outside/empty"]),
        "mode not a number": (dict(_restore_entry(root, math_h, "backup/1", evil), mode="4755"), {"backup/1": evil}, []),
        "path a folder": ({"path": "util", "tmp": journal._tmp_of("util"), "old": None, "new": _sha(b"x"),
                           "mode": None, "backup": None}, {}, []),
        "entry missing keys": ({"path": math_h}, {}, []),
        "hash not a sha256": (dict(_restore_entry(root, math_h, "backup/1", evil), old="../x"), {"backup/1": evil}, []),
    }


HOSTILE = ["tmp out of the tree", "tmp not the temp name", "absolute path", "path with ..", "path through a symlink",
           "backup out of the state folder", "backup through a symlink", "dirs out of the tree", "dirs with ..",
           "mode not a number", "path a folder", "entry missing keys", "hash not a sha256"]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_journal_is_refused_and_never_acted_upon(actlib_git, outside, tmp_path, capsys, name):
    root = actlib_git
    (root / "link").symlink_to(outside, target_is_directory=True)
    (outside / "evil").write_bytes(b"owned\n")
    folder = journal.state(root).folder
    assert folder == root / ".git" / "codemod"
    entry, backups, dirs = _hostile_entries(root, outside)[name]
    # a valid entry too, processed first by a rollback: the journal must not be acted upon at all
    cmake = root / "CMakeLists.txt"
    valid = {"path": "CMakeLists.txt", "tmp": journal._tmp_of("CMakeLists.txt"), "old": _sha(b"original\n"),
             "new": _sha(cmake.read_bytes()), "mode": 0o644, "backup": "backup/0"}
    (folder / "backup").mkdir(parents=True)
    if name == "backup through a symlink":
        (folder / "backup" / "link").symlink_to(outside / "evil")
    where = _plant_journal(folder, [entry, valid], dirs=dirs, backups={"backup/0": b"original\n", **backups})
    kept, tree = _snapshot(outside), _snapshot(root)
    for mode in ([], ["--check"], ["--write"]):
        code, _, err = _run(capsys, root, *mode)
        assert code == 2, (mode, err)
        _one_line_error(err, str(where), "invalid write journal")
    assert _snapshot(outside) == kept and _snapshot(root) == tree
    assert where.is_file()                                      # kept for the user to look at


def test_a_restored_mode_keeps_only_permission_bits(actlib_git, capsys):
    root = actlib_git
    folder = journal.state(root).folder
    cmake = root / "CMakeLists.txt"
    original = cmake.read_bytes()
    cmake.write_bytes(original + b"# migrated\n")
    _plant_journal(folder, [{"path": "CMakeLists.txt", "tmp": journal._tmp_of("CMakeLists.txt"),
                             "old": _sha(original), "new": _sha(cmake.read_bytes()), "mode": 0o107755,
                             "backup": "backup/0"}], backups={"backup/0": original})
    code, _, err = _run(capsys, root, "--check")
    assert "recovered an interrupted" in err and code == 1, err
    assert cmake.read_bytes() == original
    assert stat.S_IMODE(cmake.stat().st_mode) == 0o755           # never setuid, setgid or sticky


def test_the_git_state_folder_is_refused_when_a_symlink(actlib_git, outside, capsys):
    target = outside / "state"
    target.mkdir()
    (actlib_git / ".git" / "codemod").symlink_to(target, target_is_directory=True)
    tree = _snapshot(actlib_git)
    code, _, err = _run(capsys, actlib_git, "--write")
    assert code == 2
    _one_line_error(err, ".git/codemod", "symlink")
    assert list(target.iterdir()) == [] and _snapshot(actlib_git) == tree


def test_outside_git_the_state_folder_is_per_user_keyed_by_the_real_path(tmp_path, capsys):
    root = _copy(tmp_path / "input")
    files, _, _ = compute(root, RULE)

    def stop(step):
        if step == "journal":
            raise journal.SimulatedCrash(step)

    with pytest.raises(journal.SimulatedCrash):
        write_all(root, files, step=stop)
    key = hashlib.sha256(os.fsencode(str(root.resolve()))).hexdigest()
    folder = Path(os.environ["XDG_STATE_HOME"]) / "codemod" / "trees" / key
    assert journal.state(root).folder == folder and (folder / "journal.json").is_file()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder.parent.parent).stat().st_mode) == 0o700
    assert not (root / ".codemod").exists()
    # reached through a symlinked spelling of the root: the same folder
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)
    assert journal.state(tmp_path / "alias").folder == folder
    code, _, err = _run(capsys, tmp_path / "alias", "--check")
    assert code == 1 and "recovered an interrupted" in err
    assert not (folder / "journal.json").exists()


@pytest.mark.parametrize("how", ["symlink", "group-writable", "another user's"])
def test_a_per_user_state_folder_that_is_not_ours_is_refused(tmp_path, capsys, how):
    root = _copy(tmp_path / "input")
    folder = journal.state(root).folder
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    folder.parent.mkdir(parents=True, exist_ok=True)
    if how == "symlink":
        folder.symlink_to(elsewhere, target_is_directory=True)
    else:
        folder.mkdir(mode=0o700)
        if how == "group-writable":
            os.chmod(folder, 0o770)
        elif os.getuid() == 0:
            os.chown(folder, 4242, -1)
        else:
            pytest.skip("giving a folder to another user needs root")
    code, _, err = _run(capsys, root, "--write")
    assert code == 2, err
    _one_line_error(err, str(folder), {"symlink": "symlink", "group-writable": "writable",
                                       "another user's": "owned by"}[how])
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("how", ["another user's", "world-writable"])
def test_a_state_home_below_a_folder_others_control_is_refused(tmp_path, capsys, monkeypatch, how):
    # HOME=/tmp (CI, containers): /tmp/.local made by someone else first
    root = _copy(tmp_path / "input")
    shared = tmp_path / "shared"
    shared.mkdir()
    if how == "world-writable":
        os.chmod(shared, 0o777)
    elif os.getuid() == 0:
        os.chown(shared, 4242, -1)
    else:
        pytest.skip("giving a folder to another user needs root")
    monkeypatch.setenv("XDG_STATE_HOME", str(shared / ".local" / "state"))
    code, _, err = _run(capsys, root, "--write")
    assert code == 2, err
    _one_line_error(err, str(shared), "nothing done")
    assert list(shared.iterdir()) == []


def test_a_symlinked_lock_file_creates_nothing_at_its_target(actlib_git, outside, capsys):
    folder = journal.state(actlib_git).folder
    folder.mkdir(mode=0o700)
    (folder / "lock").symlink_to(outside / "planted")
    code, _, err = _run(capsys, actlib_git, "--write")
    assert code == 2
    _one_line_error(err, "lock")
    assert not (outside / "planted").exists()


# --- kill -9 during apply --update --write: the manifest is part of the write ---------------------

def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


@pytest.mark.slow
@pytest.mark.parametrize("step", ["journal", "replace state:manifests/activation.json"])
def test_a_kill_during_update_write_leaves_a_tree_update_can_finish(actlib_git, capsys, step, tmp_path):
    root = actlib_git
    rule = tmp_path / "activation.yaml"      # the rule changes after the merge: an NVRTC option more
    rule.write_text(Path(RULE).read_text())
    assert main(["apply", "--target", str(rule), str(root), "--write", "--no-precheck", "-q"]) == 0
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "migrate")
    stored = manifest_path(root, "activation")
    manifest_before = stored.read_bytes()
    text = rule.read_text()
    assert text.count("always: [--std=c++17]") == 1
    rule.write_text(text.replace("always: [--std=c++17]", "always: [--std=c++17, -DACTLIB_UPDATED=1]"))
    changed = _snapshot(root)
    env = dict(os.environ, **{journal.STEP_ENV: f"kill:{step}"})
    proc = subprocess.run([sys.executable, "-m", "codemod", "apply", "--target", str(rule), str(root), "--update",
                           "--write", "--allow-dirty", "--no-precheck", "-q"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr

    def run(*mode: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main(["apply", "--target", str(rule), str(root), "--no-precheck", "-q", *mode])
        return code, capsys.readouterr().err

    code, err = run("--check")
    assert "recovered an interrupted" in err and code == 1, err          # the update is pending again
    assert _snapshot(root) == changed and stored.read_bytes() == manifest_before
    code, err = run("--update", "--write", "--allow-dirty")
    assert code == 0, err
    code, err = run("--check")
    assert code == 0, err


# --- a file edited while the write runs ----------------------------------------------------------

@pytest.mark.parametrize("which", ["edited", "created"])
def test_a_file_changed_during_the_write_is_a_conflict_not_a_loss(tmp_path, which):
    root = _copy(tmp_path / "input")
    files, _, _ = compute(root, RULE)
    before = _snapshot(root)
    if which == "edited":
        rel = SITE_HEADER
    else:
        rel = sorted(p for p, (old, _) in files.items() if old is None)[-1]
    target = root / rel
    mine = b"// the user's work, saved while apply wrote\n"

    def edit(step):
        if step == "journal":                          # after the checks and the backups
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((target.read_bytes() if target.exists() else b"") + mine)

    with pytest.raises(ApplyError) as exc:
        write_all(root, files, step=edit)
    assert rel in exc.value.render() and "changed" in exc.value.message
    assert target.read_bytes().endswith(mine)             # kept, not overwritten
    now = _snapshot(root)
    assert {k: v for k, v in now.items() if not rel.startswith(k)} == \
           {k: v for k, v in before.items() if not rel.startswith(k)}
    assert not journal.pending(root)                       # nothing half applied, nothing to recover


# --- a TU clang cannot read ----------------------------------------------------------------------

def test_a_migrated_tu_clang_cannot_read_stops_apply(tmp_path, capsys):
    root = _copy(tmp_path / "input")
    tu = root / "activation/relu.cu"
    tu.write_bytes(tu.read_text().encode("utf-16"))
    tree = _snapshot(root)
    for mode in ([], ["--write"]):
        code, out, err = _run(capsys, root, *mode)
        assert code == 2, err
        _one_line_error(err, "activation/relu.cu")
        assert out == ""
    assert _snapshot(root) == tree


# --- the license header comes from the tree -------------------------------------------------------

def _license_rule(tmp_path: Path, source: str) -> str:
    text = Path(RULE).read_text()
    rule = tmp_path / "rule.yaml"
    rule.write_text(text.replace("  output_dir: rtc/activation\n",
                                 f"  output_dir: rtc/activation\n  license: {{from: {json.dumps(source)}}}\n"))
    return str(rule)


@pytest.mark.parametrize("source", ["../outside/license.txt", "ABSOLUTE", "license_link.txt"])
def test_a_license_header_from_outside_the_tree_is_refused(tmp_path, outside, capsys, source):
    root = _copy(tmp_path / "input")
    secret = outside / "license.txt"
    secret.write_text("// Copyright (c) secret key 1234\n")
    (root / "license_link.txt").symlink_to(secret)
    source = str(secret) if source == "ABSOLUTE" else source
    rule = _license_rule(root.parent, source)
    with pytest.raises(RuleError) as exc:
        compute(root, rule)
    assert "migrate/license/from" in exc.value.render() and "\n" not in exc.value.render()
    code = main(["apply", "--target", rule, str(root), "--no-precheck", "-q"])
    out, err = capsys.readouterr()
    assert code == 2 and "secret key" not in out + err
    _one_line_error(err, "license")


def test_a_license_header_from_inside_the_tree_still_opens_generated_files(tmp_path):
    root = _copy(tmp_path / "input")
    (root / "LICENSE_HEADER.h").write_text("// Copyright (c) 2026 actlib authors\n")
    files, _, _ = compute(root, _license_rule(root.parent, "LICENSE_HEADER.h"))
    assert files["rtc/activation/kernels.h"][1].startswith("// Copyright (c) 2026 actlib authors\n")
