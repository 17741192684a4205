"""Change set -> file texts: a library file's text exactly as stored, the edits applied (CRLF kept),
and the shared NVRTC layer's part of a migration (--layer-diff)."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import ApplyError
from ..base.changeset import RTC_ENDIF, RTC_IFNDEF, ChangeSet

# an #endif of a block hidden from NVRTC, then (blank lines between) the #ifndef of another
_GUARDS_MEET = re.compile(re.escape(RTC_ENDIF.encode()) + rb"((?:[ \t]*\n)*)" + re.escape(RTC_IFNDEF.encode()))


def library_text(data: bytes, path: str) -> str:
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
        old = library_text(data, path)
        crlf = _crlf(data)
        # Insertions at one offset keep their order of creation; sort is stable.
        edits.sort(key=lambda e: (e.start, e.end))
        for a, b in zip(edits, edits[1:]):
            if b.start < a.end:
                raise ApplyError(f"overlapping edits: '{a.why}' and '{b.why}'", where=path)
        out, new, pos, size = [], [], 0, 0        # new: the inserted byte ranges of the result
        for e in edits:
            text = e.text.replace("\r\n", "\n").replace("\n", "\r\n") if crlf else e.text
            out += [data[pos:e.start], text.encode()]
            size += e.start - pos
            new.append((size, size + len(out[-1])))
            size += len(out[-1])
            pos = e.end
        out.append(data[pos:])
        result[path] = (old, _merge_guards(b"".join(out), new).decode())
    for path, text in sorted(cs.new_files.items()):
        if path in result:
            raise ApplyError("a generated file would overwrite an edited one", where=path)
        existing = root / path
        result[path] = (library_text(existing.read_bytes(), path) if existing.is_file() else None, text)
    return {p: v for p, v in sorted(result.items()) if v[0] != v[1]}


def _merge_guards(text: bytes, new: list[tuple[int, int]]) -> bytes:
    """Two inserted blocks hidden from NVRTC that meet (nothing but blank lines between them: a
    section's include before a host-only launcher) become one block: the first one's `#endif` and
    the second one's `#ifndef` go, when both were inserted (the library's own guards stay)."""
    def inserted(a: int, b: int) -> bool:
        return any(s <= a and b <= e for s, e in new)

    out, pos = [], 0
    for m in _GUARDS_MEET.finditer(text):
        if inserted(m.start(), m.start(1)) and inserted(m.end(1), m.end()):
            out += [text[pos:m.start()], m.group(1)]
            pos = m.end()
    out.append(text[pos:])
    return b"".join(out)


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
