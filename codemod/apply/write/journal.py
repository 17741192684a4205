"""Crash-safe `apply --write`: the tree lock, the write journal (planned files, content hashes,
backups) and the recovery that rolls an interrupted write back. Layout and guarantees:
docs/reliability.md, section Writes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ... import strict_json
from ...errors import ApplyError
from ...tool_state import contained, make_folder, state_dir

JOURNAL = "journal.json"
BACKUPS = "backup"
LOCK = "lock"
TMP_SUFFIX = ".codemod-tmp"
# Test-only: stop `apply --write` at a write step in a subprocess (docs/reliability.md).
STEP_ENV = "CODEMOD_TEST_WRITE_STEP"


class SimulatedCrash(BaseException):
    """Test-only: raised by a step hook to stop the write the way kill -9 would (no rollback)."""


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str | None:
    """Content hash of a regular file, None when there is none."""
    return sha256(path.read_bytes()) if path.is_file() else None


# --- where the state lives -------------------------------------------------------------------------

@dataclass
class State:
    """The folder holding the lock, the journal and the backups (`folder`), and the root of the tree
    it serves (`base`: a git work tree's top or the library root)."""
    folder: Path
    base: Path

    @property
    def journal(self) -> Path:
        return self.folder / JOURNAL

    @property
    def backups(self) -> Path:
        return self.folder / BACKUPS


def state(root: Path) -> State:
    """`<git dir>/codemod` in a git work tree (one writer per repository: never in `git status`),
    else the per-user folder of the tree (tool_state.state_dir); refused when it is a symlink,
    another user's or writable by others."""
    return State(*state_dir(root))


# --- the lock --------------------------------------------------------------------------------------

_held: dict[Path, list] = {}          # lock file -> [fd, depth]: re-entrant within this process
_held_guard = threading.Lock()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def tree_lock(root: Path):
    """Advisory exclusive lock (fcntl.flock) on the tree's lock file, holding this process's pid.
    A second writer fails at once with ApplyError naming the holder. The file is removed on release
    (after an inode check on acquire, so a waiter never holds a removed file)."""
    import fcntl

    st = state(root)
    path = st.folder / LOCK
    with _held_guard:
        if path in _held:
            _held[path][1] += 1
            entry = None
        else:
            entry = True
    if entry is None:
        try:
            yield st
        finally:
            with _held_guard:
                _held[path][1] -= 1
        return
    fd = None
    for _ in range(50):
        try:
            make_folder(st.folder, st.folder)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:
            continue                      # the folder was removed by a releasing holder: retry
        except OSError as exc:
            raise ApplyError(f"cannot create the lock file: {exc.strerror}", where=str(path),
                             hint="codemod needs write access to this folder for --write") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = re.sub(r"[^0-9]", "", os.read(fd, 64).decode(errors="replace")) or "unknown"
            os.close(fd)
            raise ApplyError(f"another `codemod apply` (pid {holder}) is writing this tree; nothing done",
                             where=str(path),
                             hint="wait for it to finish (the lock goes with its process), then re-run") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)                      # locked a file a releasing holder had just removed
        fd = None
    if fd is None:
        raise ApplyError("could not take the tree lock (it kept changing hands)", where=str(path))
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    with _held_guard:
        _held[path] = [fd, 1]
    try:
        yield st
    finally:
        with _held_guard:
            del _held[path]
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)
        with contextlib.suppress(OSError):
            st.folder.rmdir()             # only when empty: no journal, no backups


# --- test-only step hook ---------------------------------------------------------------------------

def env_step_hook():
    """The step hook from CODEMOD_TEST_WRITE_STEP=ACTION:WHICH (test-only), or None. WHICH: a step
    index (0-based) or name; ACTION: `kill` (SIGKILL itself), `term`/`int` (SIGTERM/SIGINT itself),
    `pause` (print `codemod-test: paused at step N: NAME` on stderr and wait for a line on stdin)."""
    value = os.environ.get(STEP_ENV)
    if not value or ":" not in value:
        return None
    action, which = value.split(":", 1)
    count = [0]

    def hook(name: str) -> None:
        index = count[0]
        count[0] += 1
        if which not in (str(index), name):
            return
        if action == "pause":
            print(f"codemod-test: paused at step {index}: {name}", file=sys.stderr, flush=True)
            sys.stdin.readline()
        elif action in ("kill", "term", "int"):
            os.kill(os.getpid(), {"kill": signal.SIGKILL, "term": signal.SIGTERM, "int": signal.SIGINT}[action])
            time.sleep(5)                 # the handler runs here
    return hook


# --- the journaled write ---------------------------------------------------------------------------

@dataclass
class Planned:
    """One file of a write: repo path (resolved, relative to the base), content before (None: the
    write creates it) and after, and the mode to give it. `area` "state": a file of the state folder
    (the migration's manifest), its path relative to that folder."""
    path: str
    old: bytes | None
    new: bytes
    mode: int | None
    area: str = "tree"


def _tmp_of(rel: str) -> str:
    head, _, name = rel.rpartition("/")
    return (head + "/" if head else "") + "." + name + TMP_SUFFIX


def _atomic_bytes(target: Path, data: bytes, mode: int | None, tmp: Path | None = None) -> None:
    """Write `data` to a temp file beside target, fsync it, give it `mode`, replace target, fsync the
    folder."""
    tmp = tmp or target.with_name("." + target.name + TMP_SUFFIX)
    try:
        _write_tmp(tmp, data, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    os.replace(tmp, target)
    _fsync_dir(target.parent)


def atomic_write(target: Path, data: bytes) -> None:
    """Whole-or-nothing write of an output file (--diff, --report): a full disk leaves the old file,
    never a truncated one. Keeps an existing file's mode."""
    mode = target.stat().st_mode if target.is_file() else None
    _atomic_bytes(target, data, mode, target.with_name(f".{target.name}.{os.getpid()}{TMP_SUFFIX}"))


@contextlib.contextmanager
def _signals_deferred():
    """SIGINT and SIGTERM ignored inside (rollback, commit): short, and kill -9 is still journaled."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM raises KeyboardInterrupt inside, as SIGINT does: the write rolls itself back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def transaction(root: Path, planned: list[Planned], step=None, fail_before: int | None = None) -> None:
    """Write `planned` under the tree lock: backups of every replaced file and the journal (hashes,
    modes, backups, folders to create) fsynced first, then each file atomically (temp file beside
    it, compared once more with the content it had when planned, os.replace, fsync of the folder),
    then the journal removed (the commit) and the backups. A file changed since it was planned is
    a conflict (ApplyError naming it, everything written so far restored). Any exception rolls the
    tree back from the journal; a kill leaves the journal for `recover`. `step(name)`: test-only
    hook called after each durable write step; `fail_before`: raise ApplyError before replacing
    that file (tests)."""
    step = step or env_step_hook() or (lambda name: None)
    with tree_lock(root) as st:
        if os.path.lexists(st.journal) or os.path.lexists(st.backups):
            raise ApplyError("an interrupted write left its journal; nothing written", where=str(st.folder),
                             hint="run `codemod apply` once to restore the tree, then write again")
        base = st.base
        dirs: list[str] = []
        for p in planned:
            if p.area == "state":
                make_folder((st.folder / p.path).parent, st.folder)
                continue
            parent = (base / p.path).parent
            while parent != base and not parent.exists():
                rel = parent.relative_to(base).as_posix()
                if rel not in dirs:
                    dirs.append(rel)
                parent = parent.parent
        dirs.sort(key=lambda d: (d.count("/"), d))
        record = {"schema": "codemod-journal/1", "pid": os.getpid(),
                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "dirs": dirs, "files": []}
        replaced = 0                      # files whose replace may have happened: the in-process rollback's scope
        with _sigterm_interrupts():
            try:
                os.mkdir(st.backups, 0o700)
                for i, p in enumerate(planned):
                    backup = None
                    if p.old is not None:
                        backup = f"{BACKUPS}/{i}"
                        _atomic_bytes(st.folder / backup, p.old, None)
                        step(f"backup {_label(p)}")
                    entry = {"path": p.path, "tmp": _tmp_of(p.path), "old": sha256(p.old), "new": sha256(p.new),
                             "mode": None if p.mode is None else stat.S_IMODE(p.mode) & 0o777, "backup": backup}
                    if p.area == "state":
                        entry["area"] = "state"
                    record["files"].append(entry)
                _atomic_bytes(st.journal, (strict_json.dumps(record, "the write journal", indent=1) + "\n").encode(), None)
                step("journal")
                for i, p in enumerate(planned):
                    if fail_before is not None and i == fail_before:
                        raise ApplyError(f"injected failure before writing {p.path}")
                    home = st.folder if p.area == "state" else base
                    target = home / p.path
                    _make_dirs(home, target.parent)
                    tmp = home / _tmp_of(p.path)
                    _write_tmp(tmp, p.new, p.mode)
                    step(f"temp {_label(p)}")
                    if file_sha256(target) != sha256(p.old) or (p.old is None and os.path.lexists(target)):
                        tmp.unlink(missing_ok=True)
                        raise ApplyError("changed while apply wrote the migration" + (" (created meanwhile)" if p.old
                                         is None else "") + "; nothing written: every file was restored, this one "
                                         "keeps its new content", where=_label(p),
                                         hint="look at the change, then re-run `codemod apply`")
                    replaced = i + 1
                    os.replace(tmp, target)
                    step(f"replace {_label(p)}")
                    _fsync_dir(target.parent)
            except SimulatedCrash:
                raise
            except BaseException as exc:
                with _signals_deferred():
                    if st.journal.exists():
                        _roll_back(st, record, touched=replaced)
                    else:
                        shutil.rmtree(st.backups, ignore_errors=True)
                if isinstance(exc, OSError):
                    raise ApplyError(f"cannot write: {exc.strerror}", where=exc.filename,
                                     hint="nothing written: every file was restored") from None
                raise
            with _signals_deferred():
                st.journal.unlink()       # the commit: from here on the migration is final
                _fsync_dir(st.folder)
                step("commit")
                shutil.rmtree(st.backups)
                step("cleanup")


def _label(p: Planned) -> str:
    """How steps and messages name a planned file: its tree path, or `state:` and its path in the
    state folder."""
    return f"state:{p.path}" if p.area == "state" else p.path


def _make_dirs(base: Path, folder: Path) -> None:
    """mkdir -p below base, each new folder's entry fsynced in its parent."""
    missing = []
    while folder != base and not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for d in reversed(missing):
        d.mkdir(exist_ok=True)
        _fsync_dir(d.parent)


def _write_tmp(tmp: Path, data: bytes, mode: int | None) -> None:
    """The temp file, never through a symlink, with `mode`'s permission bits only (never setuid,
    setgid or sticky)."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if mode is not None:
            os.fchmod(fd, stat.S_IMODE(mode) & 0o777)
        os.fsync(fd)
    except OSError as exc:  # os.write/fsync name no file (a full disk): the error names the temp file
        raise OSError(exc.errno, exc.strerror, str(tmp)) from None
    finally:
        os.close(fd)


# --- recovery --------------------------------------------------------------------------------------

_SHA = re.compile(r"[0-9a-f]{64}")
_BACKUP = re.compile(BACKUPS + r"/(0|[1-9][0-9]{0,8})")
_STARTED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_JOURNAL_BYTES = 64 << 20


def _read_journal(st: State) -> dict:
    """The journal, every field checked against the tree and the state folder (`_check_journal`);
    an ApplyError naming it otherwise: a journal that fails a check is never acted upon."""
    hint = f"restore the tree by hand (git checkout), then remove {st.folder}"
    try:
        fd = os.open(st.journal, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ValueError("not a regular file")
            data = f.read(_JOURNAL_BYTES + 1)
        if len(data) > _JOURNAL_BYTES:
            raise ValueError(f"larger than {_JOURNAL_BYTES >> 20} MiB")
        record = json.loads(data)
        if not isinstance(record, dict) or record.get("schema") != "codemod-journal/1" \
                or not isinstance(record.get("files"), list):
            raise ValueError("unknown layout")
    except (OSError, ValueError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else exc
        raise ApplyError(f"unreadable write journal ({reason})", where=str(st.journal), hint=hint) from None
    problem = _check_journal(st, record)
    if problem:
        raise ApplyError(f"invalid write journal, nothing restored: {problem}", where=str(st.journal),
                         hint=f"it was not written by this tree's `codemod apply --write`; {hint}")
    return record


def _check_journal(st: State, record: dict) -> str | None:
    """Why a journal cannot be trusted, or None. Each file's path relative to the tree's base (or,
    `area` "state", to the state folder below `manifests/`), without `..`, symlink components or
    anything but a regular file there; its temp file the one beside it; hashes sha256 hex; a backup
    `backup/<n>` of the state folder, a regular file, for exactly the files that had an old content;
    the mode a number (only its permission bits are used); each folder to remove below the base."""
    pid, started, dirs = record.get("pid"), record.get("started"), record.get("dirs", [])
    if pid is not None and (type(pid) is not int or not 0 < pid < 1 << 32):
        return f"pid {pid!r} is not a process id"
    if started is not None and not (isinstance(started, str) and _STARTED.fullmatch(started)):
        return f"started {started!r} is not a time"
    if not isinstance(dirs, list):
        return "`dirs` is not a list"
    for i, entry in enumerate(record["files"]):
        if not isinstance(entry, dict) or not {"path", "tmp", "old", "new", "mode", "backup"} <= entry.keys():
            return f"files[{i}] is not an entry of path, tmp, old, new, mode and backup"
        path, area = entry["path"], entry.get("area", "tree")
        try:
            if area == "state":
                if not (isinstance(path, str) and path.startswith("manifests/") and path.endswith(".json")):
                    raise ValueError(f"{path!r} is not a manifest of the state folder")
                contained(st.folder, path)
            elif area == "tree":
                contained(st.base, path)
            else:
                raise ValueError(f"unknown area {area!r}")
            if entry["tmp"] != _tmp_of(path):
                raise ValueError(f"tmp {entry['tmp']!r} is not the temp file of {path!r}")
            contained(st.folder if area == "state" else st.base, entry["tmp"])
            for key in ("old", "new"):
                if not (entry[key] is None and key == "old" or isinstance(entry[key], str) and _SHA.fullmatch(entry[key])):
                    raise ValueError(f"{key} {entry[key]!r} is not a sha256")
            backup = entry["backup"]
            if (backup is None) != (entry["old"] is None):
                raise ValueError("a backup is there exactly for a file that had content")
            if backup is not None:
                if not (isinstance(backup, str) and _BACKUP.fullmatch(backup)):
                    raise ValueError(f"backup {backup!r} is not {BACKUPS}/<n> of the state folder")
                if not os.path.lexists(st.folder / backup):
                    raise ValueError(f"backup {backup!r} is missing")
                contained(st.folder, backup)
            mode = entry["mode"]
            if mode is not None and (type(mode) is not int or not 0 <= mode < 1 << 32):
                raise ValueError(f"mode {mode!r} is not a file mode")
        except ValueError as exc:
            return f"files[{i}]: {exc}"
    for i, rel in enumerate(dirs):
        try:
            contained(st.base, rel, "folder")
        except ValueError as exc:
            return f"dirs[{i}]: {exc}"
    return None


def _roll_back(st: State, record: dict, touched: int | None = None) -> tuple[int, int]:
    """Put every file of the journal back as it was; (restored, removed). A file holding neither its
    old nor its new content is left alone and the journal kept (ApplyError naming it and its backup).
    `record` is a checked journal (_read_journal) or the one this process wrote; `touched`: how many
    of its files this process may have replaced (the others only lose their temp file)."""
    base = st.base
    restored = removed = 0
    conflicts = []
    for i, entry in reversed(list(enumerate(record["files"]))):
        home = st.folder if entry.get("area") == "state" else base
        (home / entry["tmp"]).unlink(missing_ok=True)
        if touched is not None and i >= touched:
            continue
        target = home / entry["path"]
        current = file_sha256(target)
        if current == entry["old"]:
            continue
        if current != entry["new"]:
            conflicts.append(entry)
            continue
        if entry["old"] is None:
            target.unlink()
            _fsync_dir(target.parent)
            removed += 1
            continue
        data = (st.folder / entry["backup"]).read_bytes()
        if sha256(data) != entry["old"]:
            raise ApplyError(f"the backup of {entry['path']} does not hold its original content; nothing more "
                             "restored", where=str(st.folder / entry["backup"]),
                             hint=f"restore {entry['path']} by hand (git checkout), then remove {st.folder}")
        mode = entry.get("mode")
        _atomic_bytes(target, data, None if mode is None else mode & 0o777, home / entry["tmp"])
        restored += 1
    if conflicts:
        names = ", ".join(f"{e['path']} (original: {st.folder / e['backup']})" if e["backup"] else e["path"]
                          for e in conflicts)
        raise ApplyError(f"cannot roll back an interrupted write: {len(conflicts)} file(s) changed since: {names}",
                         where=str(st.journal),
                         hint=f"keep or restore each by hand, then remove {st.folder} and re-run")
    for rel in reversed(record.get("dirs", [])):
        with contextlib.suppress(OSError):
            (base / rel).rmdir()
    st.journal.unlink()
    _fsync_dir(st.folder)
    shutil.rmtree(st.backups, ignore_errors=True)
    return restored, removed


def check_legacy(root: Path) -> None:
    """Refuse a tree holding the stage/backup folders of a codemod that wrote without a journal
    (earlier versions of this tool): its interrupted write may have left the tree half migrated, with
    no record."""
    old = sorted(p.name for p in root.iterdir() if p.name.startswith((".codemod-stage-", ".codemod-backup-")))
    if old:
        raise ApplyError("left by an interrupted `apply --write` of an older codemod (no journal): the tree may be "
                         "half migrated", where=", ".join(old),
                         hint="return the tree to a known state (git checkout / git clean, or the backup folder's "
                              "numbered files), remove these folders, then re-run")


def pending(root: Path) -> bool:
    """Whether an interrupted write left a journal or backups (cheap: two stats, no lock)."""
    st = state(root)
    return os.path.lexists(st.journal) or os.path.lexists(st.backups)


def recover(root: Path) -> str | None:
    """Roll back what an interrupted `apply --write` left (under the tree lock) and say what was
    done; None when there was nothing to do."""
    if not pending(root):
        return None
    with tree_lock(root) as st, _signals_deferred():
        try:
            contained(st.folder, BACKUPS, "folder")
        except ValueError as exc:
            raise ApplyError(f"invalid backups of an interrupted write, nothing restored: {exc}", where=str(st.folder),
                             hint=f"restore the tree by hand (git checkout), then remove {st.folder}") from None
        if os.path.lexists(st.journal):
            record = _read_journal(st)
            restored, removed = _roll_back(st, record)
            return (f"recovered an interrupted `codemod apply --write` (pid {record.get('pid')}, started "
                    f"{record.get('started')}) from its journal: restored {restored} file(s) from backups, "
                    f"removed {removed} file(s) it had created; the tree is as it was before that write")
        if st.backups.exists():
            shutil.rmtree(st.backups)
            return (f"removed the backups of an interrupted `codemod apply --write` ({st.backups}): it "
                    "stopped before its journal was written or after it was committed, so the tree is "
                    "either untouched or fully migrated")
    return None
