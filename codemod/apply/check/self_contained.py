"""`<output_dir>/kernels.h` must compile wherever a unit includes it: every rewritten header includes
it, and a unit may reach it before the headers that declare what it names (TE: activation units
reach util/vectorized_pointwise.h before cast/fp8's DequantizeParam). What kernels.h cannot see
goes to sections included at the end of the headers declaring it (sections.py), and a factory a
section defines must not be needed before it (a launch in a non-template function of its header).
apply parses the rule's translation units (`migrate.translation_units`) with the migration's files
as they would be written (libclang's unsaved files) and refuses the migration on an error inside
kernels.h or a section, or on a line the migration wrote in a library file: such a tree would not
build.

Errors elsewhere (a library header the environment lacks, stubbed as the analysis stubs it) are not
this check's business; only diagnostics located in what the migration wrote count."""

from __future__ import annotations

import difflib
import os
import posixpath
import re
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

CHECK_UNIT = "codemod_kernels_h_first.cu"
CACHE_KIND = "kernels-h-parse"   # check_cache folder
_QUOTED = re.compile(r'^(\s*#\s*include\s*)"([^"]+)"', re.M)


def _absolute_includes(text: str, folder: Path, unsaved_only: frozenset[str]) -> str:
    """Quoted includes spelled as absolute paths where the includer's folder or the target is not on
    disk (`unsaved_only`: the migration's new files): clang resolves a quoted include against the
    includer's folder, through the file system, and finds an unsaved file only by its absolute
    path (a new `<output_dir>`, a new section beside an existing kernels.h: `apply --update`)."""
    unsaved_folder = not folder.is_dir()

    def fix(m):
        target = os.path.normpath(folder / m.group(2))
        if unsaved_folder or target in unsaved_only:
            return f'{m.group(1)}"{target}"'
        return m.group(0)
    return _QUOTED.sub(fix, text)


def _written_lines(old: str, new: str) -> set[int]:
    """1-based numbers of the lines of `new` that the migration wrote (inserted or replaced)."""
    ops = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False).get_opcodes()
    return {j + 1 for tag, _, _, j1, j2 in ops if tag in ("insert", "replace") for j in range(j1, j2)}


def stub_headers_of(output_dir: str, files: dict) -> list[str]:
    """kernels.h and its sections (`kernels_<stem>.h`) among the migration's files."""
    return sorted(p for p, (_, new) in files.items() if new is not None and posixpath.dirname(p) == output_dir
                  and re.fullmatch(r"kernels(_\w+)?\.h", posixpath.basename(p)))


def kernels_h_errors(root: Path, output_dir: str, include_dirs: list[str], files: dict,
                     stub_headers: list[str] | None = None, units: list[str] | None = None,
                     progress=None) -> list[str]:
    """`unit: line:col: message` of each error clang reports inside `<output_dir>/kernels.h` or a
    section, or on a line the migration wrote in a library file, when
    `units` (paths under root; default: a unit that includes kernels.h first) are parsed with `files`
    (path -> (old, new) text) over the tree. Empty when kernels.h is not among the files.

    A unit that parsed clean before with the same inputs is not parsed again: the key holds libclang's
    identity, this module's source, the toolchain, the flags, the unit and the names of the
    migration's files; the entry holds the hash of every file the parse included (for a migration
    file: the text clang was given and the text it replaces), each checked before the entry is
    reused, so an edit the unit does not include (the CMake file of a build-order edit) keeps it.
    `progress(message)` gets the cache's count and a line per unit parsed."""
    import clang.cindex as ci

    from ...frontend.toolchain import make_toolchain
    from . import check_cache

    top = root.resolve()
    header = f"{output_dir}/kernels.h"
    if header not in files:
        return []
    dirs = [f"-I{(top / d).resolve()}" for d in include_dirs]
    if stub_headers is None:        # the library headers the environment lacks, stubbed as the analysis does
        from ...frontend.parse import missing_system_headers

        probe = make_toolchain([])
        stub_headers = missing_system_headers(top, probe.base_flags() + dirs, probe)
    tc = make_toolchain(list(stub_headers))
    flags = tc.base_flags() + dirs
    unsaved_only = frozenset(os.path.normpath(top / path) for path, (_, new) in files.items()
                             if new is not None and not (top / path).is_file())
    unsaved = [(str(top / path), _absolute_includes(new, (top / path).parent, unsaved_only))
               for path, (_, new) in files.items() if new is not None]
    if not units:
        units = [CHECK_UNIT]
        unsaved.append((str(top / CHECK_UNIT), f'#include "{top / header}"\n'))
    stubs = {str(top / p) for p in stub_headers_of(output_dir, files)}
    written = {str(top / path): _written_lines(old, new) for path, (old, new) in files.items()
               if old is not None and new is not None}
    ours = {name for name, _ in unsaved}
    # what clang sees of each migration file, and what `written` derives from (its old text)
    seen = {os.path.normpath(name): check_cache.key(text, files.get(os.path.relpath(name, top), (None, None))[0])
            for name, text in unsaved}
    # this module's source too: which diagnostics count is decided here
    base_key = [check_cache.libclang_identity(), check_cache.sha_file(Path(__file__)), tc.fingerprint(), flags,
                str(top), sorted(ours)]
    shas: dict[str, str | None] = {}

    def sha(name: str) -> str | None:
        name = os.path.normpath(name)       # clang may spell an included path with `..`
        if name in seen:
            return seen[name]
        if name not in shas:
            shas[name] = check_cache.sha_file(Path(name))
        return shas[name]

    def cached(unit: str, k: str) -> bool:
        entry = check_cache.get(CACHE_KIND, k)
        return entry is not None and all(sha(name) == h for name, h in entry.get("closure", {}).items())

    def parse(unit: str) -> tuple[list[str], list[str]]:
        """(errors, the files the parse included, the unit first)."""
        tu = ci.Index.create().parse(str(top / unit), args=flags, unsaved_files=unsaved)
        out = []
        for d in tu.diagnostics:
            where = d.location.file.name if d.location.file is not None else ""
            # errors in kernels.h or a section, or on a line the migration wrote in a library file
            # (a launch needing a section's factory before the section); a fatal one in any file the
            # migration writes (a lost include)
            if (d.severity >= ci.Diagnostic.Error and (where in stubs or d.location.line in written.get(where, ())))\
                    or (d.severity >= ci.Diagnostic.Fatal and where in ours):
                rel = os.path.relpath(where, top) if where else "?"
                out.append(f"{unit}: {rel}:{d.location.line}:{d.location.column}: {d.spelling}")
        return out, sorted({str(top / unit)} | {inc.include.name for inc in tu.get_includes()})

    keys = {unit: check_cache.key("kernels-h-parse", *base_key, unit) for unit in units}
    todo = [u for u in units if not cached(u, keys[u])]
    if progress:
        progress(f"apply: {len(units)} unit(s) to parse as migrated, {len(units) - len(todo)} parsed clean "
                 f"before with the same inputs (cache), {len(todo)} to parse")
    errors: dict[str, list[str]] = {}
    # NOTE: libclang parses with separate indexes in separate threads, and ctypes releases the GIL
    # during the parse, so threads use every core.
    with ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
        futures = {pool.submit(_timed, parse, unit): unit for unit in todo}
        for n, fut in enumerate(as_completed(futures), 1):
            unit = futures[fut]
            (found, included), seconds = fut.result()
            errors[unit] = found
            if not found:
                check_cache.put(CACHE_KIND, keys[unit], {"unit": unit, "closure": {name: sha(name) for name in included}})
            if progress:
                progress(f"apply: parse as migrated [{n}/{len(todo)}] {unit}: "
                         f"{f'{len(found)} error(s)' if found else 'clean'} in {seconds:.2f} s")
    return [e for unit in units for e in errors.get(unit, [])]


def _timed(fn, *args):
    started = time.perf_counter()
    return fn(*args), time.perf_counter() - started
