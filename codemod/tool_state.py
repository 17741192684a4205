"""Where codemod keeps its own state for a library tree, where the tree cannot supply it:
`<git dir>/codemod/` in a git work tree (never in `git status`), else a per-user folder keyed by the
tree's real path (`$XDG_STATE_HOME/codemod/trees/<sha256>`). The write journal and lock
(apply/write/journal.py) and the migration manifests (`manifests/`) live there. Also the checks of a path
read from a record (journal, manifest) against the tree it names (docs/reliability.md)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath

from .errors import ApplyError

MANIFESTS = "manifests"
TREES = "trees"


class StateError(ApplyError):
    """The state folder is not one codemod may use: a symlink, not a folder, another user's, or
    writable by others."""


def git_dir(root: Path) -> tuple[Path, Path] | None:
    """(git dir, work-tree top) of the repository holding root, found by walking up (a `.git` folder,
    or a `.git` file naming it as worktrees and submodules have); None outside git."""
    for top in (root, *root.parents):
        dot = top / ".git"
        if dot.is_dir():
            return dot, top
        if dot.is_file():
            text = dot.read_text(errors="replace").strip()
            if text.startswith("gitdir:"):
                gd = (top / text[len("gitdir:"):].strip()).resolve()
                if gd.is_dir():
                    return gd, top
            return None
    return None


def user_state_home() -> Path:
    """codemod's per-user state folder: `$XDG_STATE_HOME/codemod` (when set to an absolute path),
    else `~/.local/state/codemod`."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "codemod"
    try:
        return Path.home() / ".local" / "state" / "codemod"
    except (RuntimeError, KeyError):
        raise StateError("no home folder to keep codemod's state for a tree outside git in",
                         hint="set HOME or XDG_STATE_HOME") from None


def state_dir(root: Path) -> tuple[Path, Path]:
    """(state folder, the top of the tree it serves: the git work tree's top or the library root).
    An existing state folder is checked (check_folder): never one the tree or another user made."""
    root = root.resolve()
    found = git_dir(root)
    if found:
        folder, top = found[0] / "codemod", found[1]
        check_folder(folder)
    else:
        home = user_state_home()
        folder, top = home / TREES / hashlib.sha256(os.fsencode(str(root))).hexdigest(), root
        _check_ancestors(home.parent)
        for f in (home, home / TREES, folder):
            check_folder(f)
    return folder, top


def check_folder(folder: Path) -> None:
    """Refuse (StateError) a state folder that exists and is a symlink, not a folder, owned by
    another user, or writable by group or others; a missing one is fine (made by make_folder)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateError(f"cannot use codemod's state folder: {exc.strerror}", where=str(folder)) from None
    fix = "remove it (codemod makes its own, mode 0700)"
    if stat.S_ISLNK(st.st_mode):
        raise StateError("codemod's state folder is a symlink; nothing done", where=str(folder), hint=fix)
    if not stat.S_ISDIR(st.st_mode):
        raise StateError("codemod's state folder is not a folder; nothing done", where=str(folder), hint=fix)
    if st.st_uid != os.getuid():
        raise StateError(f"codemod's state folder is owned by another user (uid {st.st_uid}); nothing done",
                         where=str(folder), hint=fix)
    if st.st_mode & 0o022:
        raise StateError(f"codemod's state folder is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}); "
                         "nothing done", where=str(folder), hint=f"chmod 700 it, or {fix}")


def _check_ancestors(folder: Path) -> None:
    """Refuse (StateError) a per-user state home below a folder another user could rename or replace
    things in (as ssh's StrictModes does): each existing ancestor must be owned by root or the user,
    and writable by group or others only with the sticky bit (/tmp)."""
    for d in (folder, *folder.parents):
        try:
            st = os.stat(d)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StateError(f"cannot use codemod's state folder: {exc.strerror}", where=str(d)) from None
        if st.st_uid not in (0, os.getuid()):
            raise StateError(f"codemod's state folder would lie below a folder of another user (uid {st.st_uid}); "
                             "nothing done", where=str(d), hint="set XDG_STATE_HOME to a folder of your own")
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise StateError("codemod's state folder would lie below a folder others can write to "
                             f"(mode {stat.S_IMODE(st.st_mode):o}); nothing done", where=str(d),
                             hint="set XDG_STATE_HOME to a folder of your own")


def private_dir(path: Path) -> Path:
    """`path` and any missing parent created 0700 (chmod after mkdir: the umask may be narrower). Cache
    entries and state hold library source facts and compile results: other users of the machine have
    no business reading or planting them."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)
    return path


def make_folder(folder: Path, state: Path) -> Path:
    """mkdir -p of `folder` (the state folder or a folder below it), each new level mode 0700 and
    each level from `state` down checked: check_folder, and below `state` no symlink."""
    if folder != state and not folder.is_relative_to(state):
        raise StateError("not inside codemod's state folder", where=str(folder))
    private_dir(folder)
    for d in (state, *[state.joinpath(*folder.relative_to(state).parts[:i + 1])
                       for i in range(len(folder.relative_to(state).parts))]):
        check_folder(d)
    return folder


def manifest_path(root: Path, rule_id: str) -> Path:
    """The migration manifest of `rule_id` applied to the library at `root`: in the state folder,
    under the root's path inside the work tree (two libraries of one repository keep theirs apart)."""
    folder, top = state_dir(root)
    inside = root.resolve().relative_to(top)
    return folder.joinpath(MANIFESTS, *inside.parts, f"{rule_id}.json")


def manifest_paths(root: Path) -> list[Path]:
    """Every manifest recorded for the library at `root`, in a stable order (regular files only,
    reached through no symlink)."""
    folder = manifest_path(root, "x").parent
    state = state_dir(root)[0]
    try:
        contained(state, folder.relative_to(state).as_posix(), "folder")
    except ValueError:
        return []
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if not p.is_symlink() and p.is_file())


# --- paths read from a record, checked against the tree -------------------------------------------

def contained(base: Path, rel, kind: str = "file") -> Path:
    """`base / rel` for a path read from a journal or manifest, after checking it (ValueError saying
    why not): a string, relative, no empty, `.` or `..` component, no NUL; no component below
    `base` a symlink; where it exists a regular file (`kind` "file") or folder ("folder"). The
    missing part of a path that does not exist yet is fine."""
    if not isinstance(rel, str) or not rel:
        raise ValueError(f"{rel!r} is not a path")
    if "\0" in rel:
        raise ValueError(f"{rel!r} holds a NUL byte")
    if PurePosixPath(rel).is_absolute():
        raise ValueError(f"{rel!r} is an absolute path")
    parts = rel.split("/")
    if ".." in parts:
        raise ValueError(f"{rel!r} has a `..` component: it leaves the tree")
    if any(p in ("", ".") for p in parts):
        raise ValueError(f"{rel!r} has an empty or `.` component")
    here = base
    for i, part in enumerate(parts):
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return base.joinpath(*parts)
        except OSError as exc:
            raise ValueError(f"{rel!r}: {exc.strerror}") from None
        last = i == len(parts) - 1
        if stat.S_ISLNK(st.st_mode):
            raise ValueError(f"{rel!r} has a symlink component ({'/'.join(parts[:i + 1])})")
        if not last and not stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{rel!r}: {'/'.join(parts[:i + 1])} is not a folder")
        if last and kind == "file" and not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{rel!r} is not a regular file")
        if last and kind == "folder" and not stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{rel!r} is not a folder")
    return here


def library_file(root: Path, rel) -> Path:
    """A manifest's path (relative to the library root) checked as `contained` does. Leading `..`
    components are those of a file above the library root inside its git work tree
    (migrate.repo_root: the repository's docs and tests, as patch.plan_writes allows); the path
    must not leave that work tree (or, outside git, the library root)."""
    if not isinstance(rel, str):
        raise ValueError(f"{rel!r} is not a path")
    top = root.resolve()
    base = state_dir(root)[1]
    parts = rel.split("/")
    up = 0
    while up < len(parts) and parts[up] == "..":
        up += 1
    if up == 0:
        return contained(top, rel)
    inside = top.relative_to(base).parts
    if up > len(inside) or up == len(parts):
        raise ValueError(f"{rel!r} leaves the tree")
    return contained(base, "/".join([*inside[:len(inside) - up], *parts[up:]]))
