"""Change set -> file contents -> unified diff (git apply-able), and the all-or-nothing write."""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import ApplyError
from .generate import ChangeSet


def apply_edits(root: Path, cs: ChangeSet) -> dict[str, tuple[str | None, str]]:
    """path -> (old text or None for a new file, new text). Identical edits dedupe; overlapping
    different edits are an error naming both."""
    by_file: dict[str, list] = {}
    for e in cs.edits:
        by_file.setdefault(e.path, [])
        if not any((x.start, x.end, x.text) == (e.start, e.end, e.text) for x in by_file[e.path]):
            by_file[e.path].append(e)
    result: dict[str, tuple[str | None, str]] = {}
    for path, edits in sorted(by_file.items()):
        data = (root / path).read_bytes()
        # Insertions at one offset keep their order of creation; sort is stable.
        edits.sort(key=lambda e: (e.start, e.end))
        for a, b in zip(edits, edits[1:]):
            if b.start < a.end:
                raise ApplyError(f"overlapping edits: '{a.why}' and '{b.why}'", where=path)
        out, pos = [], 0
        for e in edits:
            out.append(data[pos:e.start])
            out.append(e.text.encode())
            pos = e.end
        out.append(data[pos:])
        result[path] = (data.decode(), b"".join(out).decode())
    for path, text in sorted(cs.new_files.items()):
        if path in result:
            raise ApplyError("a generated file would overwrite an edited one", where=path)
        existing = root / path
        result[path] = (existing.read_text() if existing.is_file() else None, text)
    return {p: v for p, v in sorted(result.items()) if v[0] != v[1]}


def unified_diff(files: dict[str, tuple[str | None, str]]) -> str:
    chunks = []
    for path, (old, new) in files.items():
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


def write_all(root: Path, files: dict[str, tuple[str | None, str]], fail_after: int | None = None) -> None:
    """Check that every file still holds the text the diff was computed from, stage every new
    content in a temp dir next to the tree, then move each into place; on any failure, restore what
    was replaced so the tree is left unchanged. `fail_after` injects a failure after that many files
    (tests)."""
    for path, (old, _) in files.items():
        target = root / path
        current = target.read_text() if target.is_file() else None
        if current != old:
            raise ApplyError("changed since the migration was computed" if old is not None or current is None
                             else "exists, but the migration creates it", where=path,
                             hint="nothing was written; re-run `codemod apply`")
    stage = Path(tempfile.mkdtemp(prefix=".codemod-stage-", dir=root))
    backup = Path(tempfile.mkdtemp(prefix=".codemod-backup-", dir=root))
    done: list[tuple[Path, Path | None]] = []
    try:
        for i, (path, (_, new)) in enumerate(files.items()):
            staged = stage / f"{i}"
            staged.write_text(new)
        for i, (path, (old, _)) in enumerate(files.items()):
            if fail_after is not None and i == fail_after:
                raise ApplyError(f"injected failure before writing {path}")
            target = root / path
            saved = None
            if target.exists():
                saved = backup / f"{i}"
                shutil.copy2(target, saved)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / f"{i}", target)
            done.append((target, saved))
    except BaseException:
        for target, saved in reversed(done):
            if saved is not None:
                os.replace(saved, target)
            else:
                target.unlink(missing_ok=True)
                parent = target.parent
                while parent != root and parent.is_dir() and not any(parent.iterdir()):
                    parent.rmdir()
                    parent = parent.parent
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        shutil.rmtree(backup, ignore_errors=True)
