"""The shape of a write journal (apply/journal.py) as recovery reads it, checked before any field
is used: strict JSON (no duplicate keys, NaN or huge integers, bounded nesting), every field of
the type `transaction` writes, paths relative without `..`, a mode that is an st_mode. A journal is in the state folder, which
a tree may carry: anything else is a ValueError that `_read_journal` turns into one ApplyError."""

from __future__ import annotations

from pathlib import PurePosixPath

from .. import strict_json

SCHEMA = "codemod-journal/1"
MAX_JOURNAL_BYTES = 64 << 20
_FILE_FIELDS = {"path": str, "tmp": str, "old": (str, type(None)), "new": (str, type(None)),
                "mode": (int, type(None)), "backup": (str, type(None))}


def _relative(value, what: str) -> str:
    p = PurePosixPath(value)
    if not value or "\0" in value or p.is_absolute() or ".." in p.parts or "\\" in value:
        raise ValueError(f"{what} {value[:60]!r} is not a path inside the tree")
    return value


def parse_journal(data: bytes) -> dict:
    """The journal record in `data`; a ValueError saying what is wrong."""
    if len(data) > MAX_JOURNAL_BYTES:
        raise ValueError(f"larger than {MAX_JOURNAL_BYTES >> 20} MiB")
    record = strict_json.loads(data)
    if not isinstance(record, dict) or record.get("schema") != SCHEMA or not isinstance(record.get("files"), list):
        raise ValueError("unknown layout")
    dirs = record.get("dirs", [])
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        raise ValueError("'dirs' must be a list of paths")
    for d in dirs:
        _relative(d, "folder")
    for k, entry in enumerate(record["files"]):
        if not isinstance(entry, dict):
            raise ValueError(f"file {k} is not an object")
        for name, types in _FILE_FIELDS.items():
            if name not in entry or not isinstance(entry[name], types) or isinstance(entry[name], bool):
                raise ValueError(f"file {k}: field {name!r} missing or of the wrong type")
        _relative(entry["path"], f"file {k}")
        _relative(entry["tmp"], f"file {k}: temp")
        if entry["backup"] is not None:
            _relative(entry["backup"], f"file {k}: backup")
        # NOTE: `transaction` records the file's st_mode (type bits included); what may be applied of
        # it (the permission bits) is decided where it is used
        if entry["mode"] is not None and not 0 <= entry["mode"] < 1 << 32:
            raise ValueError(f"file {k}: mode {entry['mode']} out of range")
    return record
