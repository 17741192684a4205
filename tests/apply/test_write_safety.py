"""`apply --write` under faults: a stop at every write step (in process and kill -9 of a real
process), SIGINT/SIGTERM mid-write, two writers, --check on a partly migrated tree, rule paths
that leave the tree, symlinks, modes, read-only and CRLF files, outputs on a full disk.
docs/reliability.md (## Writes) lists which test holds which guarantee."""

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
from codemod.apply.command import compute, write_migration
from codemod.apply.golden import GOLDEN
from codemod.apply.write.patch import write_all
from codemod.cli import main
from codemod.errors import ApplyError, RuleError
from codemod.tool_state import MANIFESTS, manifest_path

RULE = str(GOLDEN / "actlib" / "activation.yaml")
REPO = Path(__file__).resolve().parents[2]
SITE_HEADER = "util/vectorized_pointwise.h"      # launch sites the migration rewrites (written last)
MID = "rtc/activation/kernels.h"                 # written 6th of 16: after 4 edited and 1 new file


def _digest(root: Path) -> dict[str, str]:
    """Content of the library tree, folders included (not .git, not codemod's own state)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
            for p in sorted(root.rglob("*"))
            if ".git" not in p.relative_to(root).parts and ".codemod" not in p.relative_to(root).parts}


def _leftovers(root: Path) -> list[str]:
    """Anything an interrupted write could leave: state folder (`<git dir>/codemod`, or outside git
    the per-user one), temp files, old stage/backup folders."""
    found = [p.relative_to(root).as_posix() for p in root.rglob("*")
             if (p.name.startswith(".codemod") or p.name.endswith(journal.TMP_SUFFIX))
             and MANIFESTS not in p.relative_to(root).parts and list(p.glob("*")) != [p / MANIFESTS]]
    state = journal.state(root).folder
    if state.exists() and list(state.iterdir()) != [state / MANIFESTS]:     # manifests are kept there
        found.append(str(state))
    return sorted(found)


def _copy(dst: Path) -> Path:
    shutil.copytree(GOLDEN / "actlib" / "input", dst)
    return dst


@pytest.fixture(scope="module")
def states(tmp_path_factory):
    """(files of the migration, digest before, digest after) of the actlib input."""
    base = tmp_path_factory.mktemp("states")
    root = _copy(base / "input")
    files, _, plan = compute(root, RULE)
    before = _digest(root)
    write_all(root, files)
    return files, before, _digest(root), plan


def _steps(tmp_path: Path, files) -> list[str]:
    names: list[str] = []
    write_all(_copy(tmp_path / "count"), files, step=names.append)
    return names


# --- a stop at every write step ------------------------------------------------------------------

def test_a_stop_at_every_write_step_is_untouched_migrated_or_recovered(tmp_path, states):
    files, before, after, _ = states
    names = _steps(tmp_path, files)
    # backups of the 6 edited files (util/rtc.cpp: the layer's disk cache), the journal, temp + replace of
    # each file, commit, cleanup
    assert len(names) == 6 + 1 + 2 * len(files) + 2
    assert names[6] == "journal" and names[-2:] == ["commit", "cleanup"]
    outcomes = {}
    for k, name in enumerate(names):
        root = _copy(tmp_path / f"stop{k}")

        def stop(step, k=k, seen=[0]):
            seen[0] += 1
            if seen[0] == k + 1:
                raise journal.SimulatedCrash(step)

        with pytest.raises(journal.SimulatedCrash):
            write_all(root, files, step=stop)
        now = _digest(root)
        state = "untouched" if now == before else "migrated" if now == after else "half"
        message = journal.recover(root)
        if state == "half":
            assert message and "restored" in message, name
        final = _digest(root)
        assert final in (before, after), f"stop after {name}: neither untouched nor migrated after recovery"
        assert _leftovers(root) == [], f"stop after {name}: {_leftovers(root)}"
        # committed means migrated for good: recovery never undoes a finished write
        if k >= names.index("commit"):
            assert final == after, name
        outcomes[name] = (state, "migrated" if final == after else "untouched")
        shutil.rmtree(root)
    assert outcomes["journal"] == ("untouched", "untouched")
    assert outcomes[f"replace {MID}"] == ("half", "untouched")
    assert outcomes[f"replace {SITE_HEADER}"] == ("migrated", "untouched")   # not committed yet
    assert outcomes["cleanup"] == ("migrated", "migrated")


def test_the_next_apply_rolls_back_and_says_so(actlib_git, states, capsys):
    files, before, _, _ = states
    stop_at = f"replace {MID}"

    def stop(step):
        if step == stop_at:
            raise journal.SimulatedCrash(step)

    with pytest.raises(journal.SimulatedCrash):
        write_all(actlib_git, files, step=stop)
    assert (actlib_git / ".git/codemod/journal.json").is_file()      # git tree: state under .git
    assert not (actlib_git / ".codemod").exists()
    code = main(["apply", "--target", RULE, str(actlib_git), "--check", "-q"])
    err = capsys.readouterr().err
    assert code == 1                                                 # recovered, so changes are pending again
    assert err.startswith("codemod: recovered an interrupted `codemod apply --write` (pid ")
    assert "restored 4 file(s) from backups, removed 2 file(s) it had created" in err
    assert _digest(actlib_git) == before and _leftovers(actlib_git) == []
    proc = subprocess.run(["git", "status", "--porcelain"], cwd=actlib_git, capture_output=True, text=True)
    assert proc.stdout == ""


def test_a_write_never_runs_over_a_journal(tmp_path, states):
    files, _, _, _ = states
    root = _copy(tmp_path / "input")
    with pytest.raises(journal.SimulatedCrash):
        write_all(root, files, step=lambda s: (_ for _ in ()).throw(journal.SimulatedCrash(s)) if s == "journal" else None)
    with pytest.raises(ApplyError, match="an interrupted write left its journal"):
        write_all(root, files)


# --- real processes: kill -9, SIGINT, SIGTERM, a second writer ----------------------------------

def _start_paused(root: Path, step: str, *extra) -> subprocess.Popen:
    """`codemod apply --write` in a subprocess, paused (test hook) after `step`."""
    env = dict(os.environ, **{journal.STEP_ENV: f"pause:{step}"})
    # SIGINT at its default in the child: a test run started in the background (`cmd &` in a
    # non-interactive shell) inherits SIGINT ignored, and Python keeps an ignored SIGINT ignored
    proc = subprocess.Popen([sys.executable, "-m", "codemod", "apply", "--target", RULE, str(root), "--write",
                             "--no-precheck", "-q", *extra], cwd=REPO, env=env, stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = proc.stderr.readline()
    if not line.startswith("codemod-test: paused at step"):
        proc.kill()
        pytest.fail(f"did not pause at {step}: {line}{proc.stderr.read()}")
    assert line.rstrip().endswith(f": {step}")
    return proc


# NOTE: every step is stopped in-process by test_a_stop_at_every_write_step_...; of the real kill -9s,
# the commit runs in the fast set, the other four with -m slow
@pytest.mark.parametrize("step, committed", [
    pytest.param("backup util/vectorized_pointwise.h", False, marks=pytest.mark.slow),
    pytest.param("journal", False, marks=pytest.mark.slow),
    pytest.param("temp rtc/activation/kernels.h", False, marks=pytest.mark.slow),
    pytest.param("replace util/vectorized_pointwise.h", False, marks=pytest.mark.slow),
    ("commit", True),
])
def test_kill_9_mid_write_then_the_next_apply_recovers(tmp_path, states, step, committed, capsys):
    files, before, after, _ = states
    root = _copy(tmp_path / "input")
    proc = _start_paused(root, step)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert _leftovers(root) != []                                    # the kill left its state
    code = main(["apply", "--target", RULE, str(root), "--check", "-q"])
    err = capsys.readouterr().err
    assert "codemod: re" in err.splitlines()[0]                      # recovered ... / removed the backups ...
    assert _leftovers(root) == []
    assert _digest(root) == (after if committed else before)
    assert code == (0 if committed else 1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_between_replace_and_bookkeeping_loses_no_backup(tmp_path, states, sig):
    files, before, _, _ = states
    root = _copy(tmp_path / "input")
    proc = _start_paused(root, "replace cast/dispatch.cuh")       # an edited file: its backup matters
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip() == "codemod: interrupted"
    assert _digest(root) == before                                   # the replaced header is back
    assert _leftovers(root) == []


def test_a_second_writer_exits_2_naming_the_holder(tmp_path, states, capsys):
    _, _, after, _ = states
    root = _copy(tmp_path / "input")
    first = _start_paused(root, "journal")
    try:
        for mode in (["--write"], ["--check"], []):                  # the journal makes any mode wait its turn
            code = main(["apply", "--target", RULE, str(root), "--no-precheck", "-q", *mode])
            err = capsys.readouterr().err
            assert code == 2, mode
            assert f"another `codemod apply` (pid {first.pid}) is writing this tree" in err
        first.stdin.write("\n")
        first.stdin.flush()
        _, err = first.communicate(timeout=60)
    finally:
        first.kill()
    assert first.returncode == 0, err
    assert _digest(root) == after and _leftovers(root) == []


def test_writers_started_together_leave_one_whole_migration(tmp_path, states):
    _, _, after, _ = states
    root = _copy(tmp_path / "input")
    cmd = [sys.executable, "-m", "codemod", "apply", "--target", RULE, str(root), "--write", "--no-precheck", "-q"]
    procs = [subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    written = [err for code, err in results if code == 0 and "; written." in err]
    assert len(written) == 1, results
    for code, err in results:
        assert (code == 2 and "is writing this tree" in err) or code == 0, err
    assert _digest(root) == after and _leftovers(root) == []


def test_the_lock_is_exclusive_and_released(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from pathlib import Path; "
                               "from codemod.apply.write.journal import tree_lock\n"
                               f"with tree_lock(Path({str(root)!r})):\n print('held', flush=True); sys.stdin.readline()"],
                              cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(ApplyError, match=f"pid {holder.pid}"):
            with journal.tree_lock(root):
                pass
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0
    finally:
        holder.kill()
    with journal.tree_lock(root):
        with journal.tree_lock(root):                                # re-entrant in one process
            assert (journal.state(root).folder / "lock").read_text() == f"{os.getpid()}\n"
    assert not journal.state(root).folder.exists() and not (root / ".codemod").exists()


# --- --check validates content -------------------------------------------------------------------

@pytest.fixture
def migrated(tmp_path, states):
    files, _, _, plan = states
    root = _copy(tmp_path / "input")
    write_migration(root, files, plan)
    return root


def _cli(capsys, root, *mode):
    code = main(["apply", "--target", RULE, str(root), "--no-precheck", "-q", *mode])
    return code, capsys.readouterr().err


def test_check_says_pending_when_a_generated_file_differs(migrated, capsys):
    stub = migrated / "rtc/activation/kernels.h"
    stub.write_text(stub.read_text() + "// edited\n")
    code, err = _cli(capsys, migrated, "--check")
    assert code == 1
    assert err.startswith(f"pending: partly migrated: {manifest_path(migrated, 'activation')} records the migration "
                          "of rule activation, but 1 file(s) do not hold what it records")
    assert "rtc/activation/kernels.h (differs from what apply generated)" in err
    code, err = _cli(capsys, migrated, "--write", "--allow-dirty")
    assert code == 2 and err.startswith("codemod: error: partly migrated: ") and "git checkout" in err


def test_check_says_pending_when_a_launch_site_is_not_rewritten(migrated, capsys):
    shutil.copy(GOLDEN / "actlib/input" / SITE_HEADER, migrated / SITE_HEADER)
    (migrated / "rtc/activation/kernels_vectorized_pointwise.h").unlink()
    code, err = _cli(capsys, migrated, "--check")
    assert code == 1
    assert f"{SITE_HEADER} (not rewritten: still the original)" in err
    assert "rtc/activation/kernels_vectorized_pointwise.h (missing)" in err


def test_check_accepts_later_edits_of_library_files(migrated, capsys):
    (migrated / "CMakeLists.txt").write_text((migrated / "CMakeLists.txt").read_text() + "# later work\n")
    code, err = _cli(capsys, migrated, "--check")
    assert code == 0 and err.startswith(f"already migrated: {manifest_path(migrated, 'activation')} records the "
                                        "migration and the tree holds it (1 edited file(s) changed since")
    code, err = _cli(capsys, migrated, "--report", str(migrated.parent / "r.md"))
    assert code == 0
    assert (migrated.parent / "r.md").read_text() == (
        f"already migrated: {manifest_path(migrated, 'activation')} records the migration and the tree holds it "
        "(1 edited file(s) changed since the migration: not checked)\n")


def test_the_manifest_records_every_file_it_wrote(states):
    files, _, _, plan = states
    doc = json.loads(plan.manifest)
    assert sorted(doc["files"]) == sorted(files)
    assert sorted(doc["edited"]) == sorted(p for p, (old, _) in files.items() if old is not None)
    assert doc["files"]["CMakeLists.txt"]["before"] == hashlib.sha256(files["CMakeLists.txt"][0].encode()).hexdigest()
    assert doc["files"]["rtc/activation/kernels.h"]["before"] is None


@pytest.mark.parametrize("text, message", [
    ("{not json", "unreadable manifest"),
    ("[1, 2]", "the manifest is not a JSON object (found list)"),
])
def test_a_malformed_manifest_is_a_clear_error(migrated, capsys, text, message):
    manifest_path(migrated, "activation").write_text(text)
    code, err = _cli(capsys, migrated, "--check")
    assert code == 2 and err.startswith(f"codemod: error: {manifest_path(migrated, 'activation')}: {message}")
    assert "internal error" not in err


# --- paths from a rule stay in the tree ----------------------------------------------------------

@pytest.mark.parametrize("old, new, key", [
    ("output_dir: rtc/activation", "output_dir: ../../x", "migrate/output_dir"),
    ("output_dir: rtc/activation", "output_dir: /tmp/codemod-abs", "migrate/output_dir"),
    ("replace_with_prelude: [common.h]", "replace_with_prelude: [../common.h]",
     "migrate/kernel_strings/replace_with_prelude/0"),
    ("      cstdint: {include", "      ../../cstdint: {include", "migrate/kernel_strings/shims/../../cstdint"),
    ("stub_includes: [common.h, util/math.h]", "stub_includes: [common.h, /usr/include/math.h]",
     "migrate/stub_includes/1"),
    ("    header: util/rtc.h", "    header: ../util/rtc.h", "migrate/nvrtc_layer/header"),
])
def test_rule_paths_leaving_the_tree_are_refused_at_load(tmp_path, old, new, key):
    text = Path(RULE).read_text()
    assert old in text
    rule = tmp_path / "r.yaml"
    rule.write_text(text.replace(old, new, 1))
    line = next(i for i, l in enumerate(rule.read_text().splitlines(), 1) if new.split(":")[0].strip() in l
                and new.split(":", 1)[1].strip()[:8] in l)
    with pytest.raises(RuleError) as exc:
        compute(tmp_path / "nowhere", str(rule))                     # refused before the tree is read
    assert exc.value.where == f"{rule}:{line}"
    assert exc.value.message.startswith(f"{key}: ")
    # the schema's path patterns refuse absolute paths first; spec.check_paths refuses `..`
    assert ("paths in a rule stay inside the library root" in exc.value.message
            or "is not a relative path" in exc.value.message or "is not an include name" in exc.value.message)


def test_cmake_file_leaving_the_tree_is_refused(tmp_path):
    text = Path(RULE).read_text()
    rule = tmp_path / "r.yaml"
    rule.write_text(text.replace("  cmake:\n    file: CMakeLists.txt", "  cmake:\n    file: ../../../CMakeLists.txt"))
    with pytest.raises(RuleError, match=r"migrate/cmake/file: '\.\./\.\./\.\./CMakeLists.txt' is a path with a `\.\.`"):
        compute(tmp_path, str(rule))


def test_symlinks_out_of_the_tree_are_refused_before_writing(tmp_path, states, capsys):
    files, before, _, _ = states
    root = _copy(tmp_path / "input")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(root / "CMakeLists.txt", outside / "CMakeLists.txt")
    (root / "CMakeLists.txt").symlink_to(outside / "CMakeLists.txt")
    kept = (outside / "CMakeLists.txt").read_bytes()
    with pytest.raises(ApplyError) as exc:
        write_all(root, files)
    assert exc.value.render().startswith("CMakeLists.txt: resolves outside the tree")
    (root / "CMakeLists.txt").unlink()
    shutil.move(outside / "CMakeLists.txt", root / "CMakeLists.txt")
    (root / "rtc/activation").symlink_to(outside, target_is_directory=True)   # the output folder leads out
    with pytest.raises(ApplyError, match="resolves outside the tree"):
        write_all(root, files)
    assert list(outside.iterdir()) == [] and (root / "CMakeLists.txt").read_bytes() == kept
    assert _leftovers(root) == []


# --- modes, read-only and CRLF files -------------------------------------------------------------

def test_file_modes_are_kept(tmp_path, states):
    files, _, _, _ = states
    root = _copy(tmp_path / "input")
    os.chmod(root / SITE_HEADER, 0o755)
    os.chmod(root / "CMakeLists.txt", 0o640)
    write_all(root, files)
    assert stat.S_IMODE((root / SITE_HEADER).stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "CMakeLists.txt").stat().st_mode) == 0o640


def test_read_only_files_are_refused_unless_forced(tmp_path, states, capsys):
    _, before, after, _ = states
    root = _copy(tmp_path / "input")
    os.chmod(root / "CMakeLists.txt", 0o444)
    code, err = _cli(capsys, root, "--write")
    assert code == 2
    assert err == ("codemod: error: 1 file(s) to change are read-only: CMakeLists.txt; nothing written (make them "
                   "writable, or pass --force to replace them (their mode is kept))\n")
    assert _digest(root) == before
    code, err = _cli(capsys, root, "--write", "--force")
    assert code == 0, err
    assert _digest(root) == after
    assert stat.S_IMODE((root / "CMakeLists.txt").stat().st_mode) == 0o444


def test_crlf_files_are_written_and_keep_crlf(tmp_path, capsys):
    root = _copy(tmp_path / "input")
    for name in (SITE_HEADER, "CMakeLists.txt"):
        p = root / name
        p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    code, err = _cli(capsys, root, "--write")
    assert code == 0, err
    for name in (SITE_HEADER, "CMakeLists.txt"):
        data = (root / name).read_bytes()
        assert b"launch(" in data or b"rtc/activation" in data
        assert data.count(b"\n") == data.count(b"\r\n"), f"{name}: a bare LF was inserted"
        assert b" \r\n" not in data, f"{name}: a trailing blank before CRLF"   # a rewritten launch's line + CRLF
    # regenerated and equal: the un-migration kept the CRLF line ends (it turned them into LF, the
    # merge failed and --check fell back on the hashes alone, "not regenerated")
    code, err = _cli(capsys, root, "--check")
    assert code == 0 and err.startswith("already migrated: ") and "gives the tree's content" in err


def test_folders_of_an_older_interrupted_write_are_reported(tmp_path, capsys):
    root = _copy(tmp_path / "input")
    (root / ".codemod-backup-x1y2").mkdir()
    code, err = _cli(capsys, root, "--check")
    assert code == 2
    assert err.startswith("codemod: error: .codemod-backup-x1y2: left by an interrupted `apply --write` of an "
                          "older codemod")


def test_non_utf8_text_in_an_edited_file_is_a_clear_error(tmp_path):
    root = _copy(tmp_path / "input")
    p = root / SITE_HEADER
    p.write_bytes(p.read_bytes().replace(b"\n", b"\n// caf\xe9\n", 1))
    with pytest.raises(ApplyError) as exc:
        compute(root, RULE)
    assert exc.value.where == f"{SITE_HEADER}:2" and "not UTF-8" in exc.value.message


# --- outputs: checked before the analysis, written whole or not at all ---------------------------

@pytest.mark.parametrize("flag", ["--diff", "--report"])
def test_an_output_in_a_missing_folder_is_refused_before_the_analysis(tmp_path, capsys, monkeypatch, flag):
    import codemod.apply.command as command

    def analysed(*a, **k):
        raise AssertionError("the analysis ran")

    monkeypatch.setattr(command, "compute", analysed)
    out = tmp_path / "no" / "such" / "out.diff"
    code, err = _cli(capsys, GOLDEN / "actlib" / "input", flag, str(out))
    assert code == 2
    # the CLI checks every output option first (cli.check_outputs); apply's own check holds for run(args)
    assert err.startswith(f"codemod: error: {flag} {out}: folder {out.parent} does not exist")


def test_a_full_disk_leaves_the_previous_diff_and_report(tmp_path):
    out = tmp_path / "p.diff"
    report = tmp_path / "p.diff.report.md"
    out.write_text("previous diff\n")
    report.write_text("previous report\n")
    # The file size limit stands in for a full disk (EFBIG instead of ENOSPC: the same failed write),
    # set after the analysis so only the outputs are refused.
    script = (
        "import resource, signal, sys\n"
        "import codemod.apply.command as c\n"
        "from codemod.cli import main\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "orig = c.compute\n"
        "def compute(*a, **k):\n"
        "    r = orig(*a, **k)\n"
        "    resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))\n"
        "    return r\n"
        "c.compute = compute\n"
        f"sys.exit(main(['apply', '--target', {RULE!r}, {str(GOLDEN / 'actlib' / 'input')!r}, '--diff', "
        f"{str(out)!r}, '--no-precheck', '-q']))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("codemod: error: cannot write --report ")
    assert out.read_text() == "previous diff\n" and report.read_text() == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.diff", "p.diff.report.md"]
