"""Whether a tree holds a rule's migration: the content hashes the manifest records for every file
the migration wrote (`files`), checked against the tree instead of trusting the manifest's presence."""

from __future__ import annotations

import json
from pathlib import Path

from .. import strict_json
from ..errors import ApplyError
from .journal import file_sha256, sha256


def record(files: dict[str, tuple[str | None, str]], manifest: str) -> dict[str, tuple[str | None, str]]:
    """`files` with the manifest's `files` key filled: path -> {before, after} sha256 (before: null
    for a file the migration creates) for every file but the manifest itself."""
    if manifest not in files:
        return files
    old, text = files[manifest]
    doc = json.loads(text)
    doc["files"] = {path: {"before": sha256(None if before is None else before.encode()),
                           "after": sha256(after.encode())}
                    for path, (before, after) in sorted(files.items()) if path != manifest}
    return {**files, manifest: (old, strict_json.dumps(doc, "the migration manifest", indent=1) + "\n")}


def read_manifest(path: Path, root: Path) -> dict:
    """The manifest as a dict; a file that is not a JSON object is an ApplyError (not a traceback)."""
    where = path.relative_to(root).as_posix()
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise ApplyError(f"unreadable manifest: {exc}", where=where,
                         hint="restore it from version control, or remove the migration and apply again") from None
    if not isinstance(doc, dict):
        raise ApplyError(f"the manifest is not a JSON object (found {type(doc).__name__})", where=where,
                         hint="restore it from version control, or remove the migration and apply again")
    return doc


def check(root: Path, doc: dict, where: str) -> tuple[list[str], str]:
    """(problems, note) of a migrated tree: a generated file missing or not holding what apply wrote,
    an edited file (launch sites, CMake, guards) still holding its original content. An edited file
    changed since the migration is fine (normal development); the note counts those. A manifest
    without `files` (written before they were recorded) cannot be checked: the note says so."""
    recorded = doc.get("files")
    if recorded is None:
        return [], " (written by an older codemod: no file hashes, content not checked)"
    if not isinstance(recorded, dict):
        raise ApplyError("the manifest's `files` is not an object", where=where,
                         hint="restore it from version control")
    problems, later = [], 0
    top = root.resolve()
    for path, hashes in sorted(recorded.items()):
        target = (top / path).resolve()
        if not isinstance(hashes, dict) or not target.is_relative_to(top):
            raise ApplyError(f"the manifest's `files` entry {path!r} is malformed or leaves the tree", where=where,
                             hint="restore it from version control")
        current = file_sha256(target)
        if current == hashes.get("after"):
            continue
        if hashes.get("before") is None:
            problems.append(f"{path} (missing)" if current is None else f"{path} (differs from what apply generated)")
        elif current == hashes.get("before"):
            problems.append(f"{path} (not rewritten: still the original)")
        elif current is None:
            problems.append(f"{path} (missing)")
        else:
            later += 1
    note = f" ({later} edited file(s) changed since the migration: not checked)" if later else ""
    return problems, note
