"""Content-keyed cache of apply's two slow checks: the NVRTC precheck of each kernel-string program
and the re-parse of each rule unit with the migration's files (self_contained.py). Entries live in
the user cache dir beside the parse cache (`$CODEMOD_CACHE_DIR`, default `~/.cache/codemod`), in
folders created 0700, never inside the target tree. A key hashes everything that decides the
result; an entry is only ever a pass (a failure is checked again on the next run)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

from ... import strict_json
from ...frontend.toolchain import cache_root, private_dir

CACHE_FORMAT = 1


def folder(kind: str) -> Path:
    return private_dir(cache_root() / kind)


def key(*parts) -> str:
    """sha256 of the parts as JSON (sorted keys: a dict's order does not change the key)."""
    return hashlib.sha256(json.dumps([CACHE_FORMAT, *parts], sort_keys=True, default=str).encode()).hexdigest()


def get(kind: str, k: str) -> dict | None:
    path = cache_root() / kind / f"{k}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def put(kind: str, k: str, value: dict) -> None:
    """Written whole then renamed (a concurrent run reads the old entry or the new, never half)."""
    path = folder(kind) / f"{k}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(strict_json.dumps(value, "a check cache entry", sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass                            # a cache that cannot be written only makes the next run slower


def sha_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def sha_file(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _stat_id(path: Path) -> list:
    st = path.stat()
    return [str(path.resolve()), st.st_size, st.st_mtime_ns]


def _tree_id(folder_: Path) -> str:
    """Path, size and mtime of every file under `folder_` (installed headers: a reinstall or an
    edit changes it) hashed together."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder_):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            try:
                st = os.stat(p)
            except OSError:
                continue
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=64)
def folder_id(folder_: str) -> list:
    return [folder_, _tree_id(Path(folder_))]


@functools.lru_cache(maxsize=4)
def nvrtc_identity(library: str, version: tuple, include_dirs: tuple[str, ...]) -> list:
    """NVRTC's version, its library file (path, size, mtime) and the CUDA headers it compiles
    against (every file's path, size and mtime under its include folders)."""
    return [list(version), _stat_id(Path(library)), [folder_id(d) for d in include_dirs]]


@functools.lru_cache(maxsize=1)
def libclang_identity() -> list:
    """libclang's version string and its library file (path, size, mtime)."""
    import clang.cindex as ci

    fn = ci.conf.lib.clang_getClangVersion
    fn.restype, fn.errcheck = ci._CXString, ci._CXString.from_result
    return [fn(), _stat_id(Path(ci.conf.get_filename() or ci.conf.lib._name))]
