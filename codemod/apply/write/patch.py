"""Change set -> file contents -> unified diff (git apply-able), and the checked, journaled write."""

from __future__ import annotations

import difflib
import os
import posixpath
from pathlib import Path, PurePosixPath

from ...errors import ApplyError
from ..base.changeset import ChangeSet
from .journal import Planned, state, transaction


def _text(data: bytes, path: str) -> str:
    """A library file's text, exactly as stored (no newline translation); non-UTF-8 is refused."""
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ApplyError(f"not UTF-8 text (byte 0x{data[exc.start]:02x})", where=f"{path}:{line}",
                         hint="convert the file to UTF-8, or exclude the kernels that need it changed") from None


def _crlf(data: bytes) -> bool:
    """Whether a file's lines end in CRLF (most of them): inserted text then uses CRLF too."""
    return data.count(b"\r\n") * 2 > data.count(b"\n")


def apply_edits(root: Path, cs: ChangeSet) -> dict[str, tuple[str | None, str]]:
    """path -> (old text or None for a new file, new text), both exactly as stored (a CRLF file
    keeps CRLF in the inserted lines). Identical edits dedupe; overlapping different edits are an
    error naming both."""
    by_file: dict[str, list] = {}
    for e in cs.edits:
        by_file.setdefault(e.path, [])
        if not any((x.start, x.end, x.text) == (e.start, e.end, e.text) for x in by_file[e.path]):
            by_file[e.path].append(e)
    result: dict[str, tuple[str | None, str]] = {}
    for path, edits in sorted(by_file.items()):
        data = (root / path).read_bytes()
        old = _text(data, path)
        crlf = _crlf(data)
        # Insertions at one offset keep their order of creation; sort is stable.
        edits.sort(key=lambda e: (e.start, e.end))
        for a, b in zip(edits, edits[1:]):
            if b.start < a.end:
                raise ApplyError(f"overlapping edits: '{a.why}' and '{b.why}'", where=path)
        out, pos = [], 0
        for e in edits:
            out.append(data[pos:e.start])
            text = e.text.replace("\r\n", "\n").replace("\n", "\r\n") if crlf else e.text
            out.append(text.encode())
            pos = e.end
        out.append(data[pos:])
        result[path] = (old, b"".join(out).decode())
    for path, text in sorted(cs.new_files.items()):
        if path in result:
            raise ApplyError("a generated file would overwrite an edited one", where=path)
        existing = root / path
        result[path] = (_text(existing.read_bytes(), path) if existing.is_file() else None, text)
    return {p: v for p, v in sorted(result.items()) if v[0] != v[1]}


def layer_part(root: Path, cs: ChangeSet, files: dict[str, tuple[str | None, str]], fmt,
               with_cache: bool = True) -> dict:
    """The shared NVRTC layer's part of a migration's `files` (the change set's layer files and
    edits, `fmt` formatting them as `files` were): path -> (text before, text after the layer part);
    without the disk cache's files and edits unless `with_cache`. The rule's own part is
    `after_layer(files, layer)`; the two apply in that order. The cache's own patch is
    `after_layer(layer_part(...), layer_part(..., with_cache=False))`, between them."""
    edits = [e for e in cs.edits if e.layer and (with_cache or not e.cache)]
    part = ChangeSet(new_files={p: t for p, t in cs.new_files.items()
                                if p in cs.layer_files and (with_cache or p not in cs.cache_files)}, edits=edits)
    if not part.new_files and not part.edits:
        return {}
    layer = fmt(apply_edits(root, part))
    mine = {id(e) for e in edits}
    own = {e.path for e in cs.edits if id(e) not in mine}     # files a later part changes too
    return {p: (old, new if p in own or p not in files else files[p][1]) for p, (old, new) in layer.items()}


def after_layer(files: dict[str, tuple[str | None, str]], layer: dict) -> dict[str, tuple[str | None, str]]:
    """What the migration changes once its layer part is applied: each file from its text after the
    layer part (or its original) to its text after the whole migration."""
    out = {}
    for path, (old, new) in files.items():
        before = layer[path][1] if path in layer else old
        if before != new:
            out[path] = (before, new)
    return out


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
