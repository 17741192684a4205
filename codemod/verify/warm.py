"""`codemod warm LIST`: compile, in parallel on this host, the NVRTC programs a run recorded
(<prefix>_RECORD of the layer's disk cache, docs/rtc_cache.md) into the cache folder, so that the
processes of a training run load them instead of compiling."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..errors import CodemodError, UsageError
from . import nvrtc, rtc_cache


class WarmError(CodemodError):
    """A recorded list that cannot be compiled as recorded."""


@dataclass
class Program:
    key: str
    nvrtc: str
    filename: str
    source: bytes
    headers: list[tuple[str, bytes]]
    names: list[str]
    options: list[str]
    line: int


def _source(folder: Path, digest: str, where: str) -> bytes:
    path = folder / digest
    try:
        data = path.read_bytes()
    except OSError:
        raise WarmError(f"{where}: source {digest} is missing from {folder}",
                        hint="copy the list together with its .sources folder") from None
    if rtc_cache.hash128(data) != digest:
        raise WarmError(f"{where}: {path} does not hash to its name (changed after the run)")
    return data


def read_list(path: Path) -> list[Program]:
    """The recorded programs, one per key, in list order."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    folder = Path(str(path) + ".sources")
    programs, seen = [], set()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{i}"
        try:
            e = json.loads(line)
            fields = (e["key"], e["nvrtc"], e["filename"], e["source"], e["headers"], e["names"], e["options"])
        except (ValueError, KeyError, TypeError):
            raise WarmError(f"{where}: not a recorded program (JSON with key, nvrtc, filename, source, headers, "
                            "names, options)") from None
        if fields[0] in seen:
            continue
        seen.add(fields[0])
        programs.append(Program(key=fields[0], nvrtc=fields[1], filename=fields[2],
                                source=_source(folder, fields[3], where),
                                headers=[(n, _source(folder, h, where)) for n, h in fields[4]],
                                names=list(fields[5]), options=list(fields[6]), line=i))
    return programs


def key_of(p: Program) -> str:
    """The key the layer computes for `p` on this host (toolkit header versions read now)."""
    versions = {}
    for o in p.options:
        for flag in ("-I", "--include-path="):
            if o.startswith(flag):
                versions[o[len(flag):]] = rtc_cache.header_version(o[len(flag):])
    return rtc_cache.hash128(rtc_cache.key_material(p.nvrtc, p.source, p.filename, p.headers, p.names, p.options,
                                                    versions))


def warm(list_path: Path, cache_dir: Path, jobs: int | None = None, library: Path | None = None) -> dict:
    """Compile every recorded program missing from `cache_dir`; the counts and times."""
    programs = read_list(list_path)
    lib = nvrtc.load(library)
    version = rtc_cache.nvrtc_identity(lib.path, lib.version)
    for p in programs:
        where = f"{list_path}:{p.line}"
        if p.nvrtc != version:
            raise WarmError(f"{where}: recorded with NVRTC {p.nvrtc}, this host has {version}: entries would not be "
                            "found by that run", hint="run `codemod warm` with the NVRTC the training processes load")
        if key_of(p) != p.key:
            raise WarmError(f"{where}: the key computed here differs from the recorded one (another cache format, "
                            "or the toolkit headers behind an -I folder changed)", hint="record the list again")
    cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    todo = [p for p in programs if not _present(cache_dir, p.key)]

    pch = PchFolders()

    def one(p: Program) -> tuple[Program, nvrtc.CompileResult]:
        headers = {n: c.decode() for n, c in p.headers}

        def run(options: list[str]) -> nvrtc.CompileResult:
            return lib.compile(p.source.decode(), p.filename, headers, options=options, name_expressions=p.names,
                               keep_cubin=True, exact=True)

        # as the layer: never fail a program for the options the layer added (compiled again without them)
        plain = [o for o in p.options if o not in LAYER_OPTIONS]
        if plain == p.options:
            return p, run(p.options)
        r = run(p.options + [f"-pch-dir={pch.folder(p.headers)}"] if "-pch" in p.options else p.options)
        return p, r if r.ok else run(plain)

    t0 = time.monotonic()
    failed, seconds = [], []
    with pch, ThreadPoolExecutor(max(1, jobs or os.cpu_count() or 1)) as pool:
        for p, r in pool.map(one, todo):
            if not r.ok:
                failed.append({"key": p.key, "names": p.names, "log": r.log_head()})
                continue
            seconds.append(r.seconds)
            ptx = b"" if r.cubin else (r.ptx or "").encode() + b"\0"
            _write(cache_dir, p.key, rtc_cache.encode(p.key, [(n, r.lowered[n]) for n in p.names], r.cubin or b"", ptx))
    return {"programs": len(programs), "present": len(programs) - len(todo), "compiled": len(seconds),
            "failed": failed, "wall_s": round(time.monotonic() - t0, 3),
            "compile_s_sum": round(sum(seconds), 3), "nvrtc": version, "cache_dir": str(cache_dir)}


# What the layer adds after a program's own options (templates/apply/layer/rtc_cache.h.j2), in this
# order: with `nvrtc_layer.cache.pch`, then with `.minimal`. A recorded list holds them already.
PCH_OPTIONS = ("-pch", "-pch-messages=false", "-pch-verbose=false")
MINIMAL_OPTIONS = ("-minimal",)
LAYER_OPTIONS = PCH_OPTIONS + MINIMAL_OPTIONS


class PchFolders:
    """As the layer: a PCH folder per set of headers (NVRTC checks a PCH against the options and the
    leading directives, not the content of in-memory headers), under a temporary folder."""

    def __init__(self):
        self._lock = threading.Lock()
        self._root: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> "PchFolders":
        return self

    def __exit__(self, *exc) -> None:
        if self._root is not None:
            self._root.cleanup()

    def folder(self, headers: list[tuple[str, bytes]]) -> str:
        material = rtc_cache.put(str(len(headers))) + b"".join(rtc_cache.put(n) + rtc_cache.put(c) for n, c in headers)
        with self._lock:
            if self._root is None:
                self._root = tempfile.TemporaryDirectory(prefix="rtc_pch_")
            path = Path(self._root.name) / rtc_cache.hash128(material)
            path.mkdir(mode=0o700, exist_ok=True)
            return str(path)


def _present(cache_dir: Path, key: str) -> bool:
    try:
        return rtc_cache.decode((cache_dir / f"{key}.bin").read_bytes(), key) is not None
    except OSError:
        return False


def _write(cache_dir: Path, key: str, data: bytes) -> None:
    """As the layer writes: a temporary file in the folder, renamed over the entry."""
    final = cache_dir / f"{key}.bin"
    tmp = cache_dir / f"{key}.bin.tmp.{os.getpid()}.warm"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, final)


def add_parser(sub) -> None:
    p = sub.add_parser("warm", help="precompile a recorded list of NVRTC programs into the layer's disk cache",
                       description="Compile the programs a run recorded (<prefix>_RECORD=LIST, docs/rtc_cache.md) "
                                   "into the layer's disk cache, in parallel, before the training processes start.")
    p.add_argument("list", type=Path, help="the recorded list (JSON lines; sources in LIST.sources/)")
    p.add_argument("--cache-dir", type=Path, required=True,
                   help="the layer's cache folder (what the run's <prefix>_DIR names, e.g. $NVTE_RTC_CACHE_DIR)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="compiles at once (default: CPU count)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the counts and times as JSON")
    p.set_defaults(run=_run)


def _run(args) -> int:
    from .. import strict_json

    result = warm(args.list, args.cache_dir, args.jobs)
    if args.json:
        args.json.write_text(strict_json.dumps(result, indent=1) + "\n")
    for f in result["failed"]:
        print(f"failed: {', '.join(f['names'])} ({f['key']}):\n{f['log']}")
    print(f"{result['programs']} programs: {result['present']} already cached, {result['compiled']} compiled, "
          f"{len(result['failed'])} failed ({result['wall_s']} s) into {result['cache_dir']}")
    return 1 if result["failed"] else 0
