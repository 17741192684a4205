"""File texts -> unified diff (git apply-able), and the checked, journaled write (the texts come from
emit/texts.py)."""

from __future__ import annotations

import difflib
import os
import posixpath
from pathlib import Path, PurePosixPath

from ...errors import ApplyError
from .journal import Planned, state, transaction


def unified_diff(files: dict[str, tuple[str | None, str]], prefix: str = "") -> str:
    """A `git apply`-able diff; `prefix` (the library root's path inside its git repository, ending
    in `/`, or "") is put before every path, so the diff applies from the repository root."""
    chunks = []
    for rel, (old, new) in files.items():
        # a file outside the library root (migrate.repo_root: docs) is `../..`-relative to it
        path = posixpath.normpath(prefix + rel) if rel.startswith("../") else prefix + rel
        a = [] if old is None else old.splitlines(keepends=True)
        b = new.splitlines(keepends=True)
        header = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if old is None else "")
        body = "".join(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{path}", f"b/{path}", n=3))
        chunks.append(header + body)
    return "".join(chunks)


def line_counts(old: str | None, new: str) -> tuple[int, int]:
    """(lines added, lines removed) as the unified diff of the two texts shows them."""
    a = [] if old is None else old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


def write_all(root: Path, files: dict[str, tuple[str | None, str]], force: bool = False,
              fail_after: int | None = None, step=None, manifest: tuple[Path, str] | None = None) -> None:
    """Write the migration all or nothing, crash-safe (journal.transaction): every path is checked
    first (inside the tree after resolving symlinks, still holding the text the diff was computed
    from, not read-only unless `force`); modes are kept. `manifest` (its path in the state folder,
    its text) is written in the same transaction, last: a kill leaves it and the tree as they were
    together. `fail_after` injects a failure before that file (tests); `step(name)` is the
    test-only hook called after each durable write step."""
    planned = plan_writes(root, files, force)
    if manifest is not None:
        planned.append(_plan_state_file(root, *manifest))
    transaction(root, planned, step=step, fail_before=fail_after)


def _plan_state_file(root: Path, path: Path, text: str) -> Planned:
    """The manifest's entry of a write: its path relative to the state folder, its content now."""
    from ...tool_state import contained

    folder = state(root).folder
    rel = path.relative_to(folder).as_posix()
    try:
        target = contained(folder, rel)
    except ValueError as exc:
        raise ApplyError(f"cannot store the manifest: {exc}", where=str(path)) from None
    old = target.read_bytes() if target.is_file() else None
    return Planned(rel, old, text.encode(), None, area="state")


def plan_writes(root: Path, files: dict[str, tuple[str | None, str]], force: bool = False) -> list[Planned]:
    """The checked write plan: paths relative to the journal's base, bytes before and after, modes.
    Refusals (ApplyError, nothing written): a path that leaves the tree (`..`, absolute, or a
    symlink out of it), a file changed since the diff was computed, a file the migration creates
    that exists, a read-only file without `force`."""
    top = root.resolve()
    base = state(root).base
    planned, seen = [], {}
    readonly = []
    for path, (old, new) in files.items():
        target = (top / path).resolve()
        # files above the library root (migrate.repo_root: its docs) stay inside the git work tree
        inside = base if path.startswith("../") else top
        if PurePosixPath(path).is_absolute() or not target.is_relative_to(inside):
            raise ApplyError(f"resolves outside the tree ({target}); nothing written", where=path,
                             hint="a symlink or a rule path leads out of the library root; fix it and re-run")
        if target in seen:
            raise ApplyError(f"is the same file as {seen[target]} (a symlink); nothing written", where=path)
        seen[target] = path
        current = target.read_bytes() if target.is_file() else None
        if current != (None if old is None else old.encode()):
            raise ApplyError("changed since the migration was computed" if old is not None or current is None
                             else "exists, but the migration creates it", where=path,
                             hint="nothing was written; re-run `codemod apply`")
        mode = None
        if current is not None:
            mode = target.stat().st_mode
            if not (mode & 0o222) or not os.access(target, os.W_OK):
                readonly.append(path)
        planned.append(Planned(target.relative_to(base).as_posix(), None if old is None else old.encode(),
                               new.encode(), mode))
    if readonly and not force:
        raise ApplyError(f"{len(readonly)} file(s) to change are read-only: {', '.join(readonly)}; nothing written",
                         hint="make them writable, or pass --force to replace them (their mode is kept)")
    return planned
